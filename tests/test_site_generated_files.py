"""A generated page's file is the one the engine's own ``File.generated`` makes, for every path."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, InclusionLevel

from memosite.site.generated_files import GeneratedPage, PageMaker

_PLAIN = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=12)
_ANY = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0"), min_size=1, max_size=12
)
_SEGMENT = st.one_of(
    _PLAIN, _ANY, st.sampled_from([".", "..", "index", "README", "ä ö", "Смещение", "偏移", "🚀", "a b"])
)
_NAME = st.one_of(_SEGMENT, st.sampled_from(["index", "README", "trap-00001", "a.b"]))
_INCLUSION = st.sampled_from([InclusionLevel.UNDEFINED, InclusionLevel.NOT_IN_NAV, InclusionLevel.EXCLUDED])


def _config(site_dir: Path, directory_urls: bool) -> MkDocsConfig:
    (site_dir.parent / "docs").mkdir(parents=True, exist_ok=True)
    config = MkDocsConfig()
    config.load_dict(
        {
            "site_name": "x",
            "site_dir": str(site_dir),
            "docs_dir": str(site_dir.parent / "docs"),
            "use_directory_urls": directory_urls,
        }
    )
    errors, _warnings = config.validate()
    assert not errors
    config.plugins._current_plugin = "memosite"  # what the engine sets while a plugin's event runs
    return config


def _seen(file: File) -> tuple[object, ...]:
    return (
        type(file),
        file.src_uri,
        file.src_path,
        file.dest_uri,
        file.dest_path,
        file.url,
        file.abs_dest_path,
        file.abs_src_path,
        file.src_dir,
        file.name,
        file.inclusion,
        file.generated_by,
        file.content_string,
        file.is_documentation_page(),
        file.edit_uri,
        file.is_modified(),
    )


@pytest.mark.parametrize("directory_urls", [True, False])
@settings(max_examples=300, deadline=None)
@given(
    folders=st.lists(_SEGMENT, min_size=0, max_size=4), name=_NAME, inclusion=_INCLUSION, content=st.text(max_size=40)
)
def test_a_made_page_is_the_file_the_engine_makes_for_every_path(
    tmp_path_factory: pytest.TempPathFactory,
    directory_urls: bool,
    folders: list[str],
    name: str,
    inclusion: InclusionLevel,
    content: str,
) -> None:
    config = _config(tmp_path_factory.getbasetemp() / "site", directory_urls)
    src_uri = "/".join([*folders, f"{name}.md"])
    made = PageMaker(config)(src_uri, content, inclusion)
    engine = GeneratedPage.generated(config, src_uri, content=content, inclusion=inclusion)
    assert _seen(made) == _seen(engine)


@pytest.mark.parametrize("directory_urls", [True, False])
def test_a_record_page_gets_its_address_without_the_engine_constructor(tmp_path: Path, directory_urls: bool) -> None:
    config = _config(tmp_path / "site", directory_urls)
    made = PageMaker(config)("memory/shop/traps/kafka-offset.md", "# x", InclusionLevel.NOT_IN_NAV)
    # The fast path filled in the address itself (the engine's properties compute it on first use).
    assert "url" in vars(made) and "dest_uri" in vars(made)
    assert made.url == ("memory/shop/traps/kafka-offset/" if directory_urls else "memory/shop/traps/kafka-offset.html")
    made.render_needed = False
    assert not made.is_modified()
