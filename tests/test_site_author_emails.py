"""Authors' e-mail addresses stay off the published site unless its config asks (``author_emails``
of the plugin, ``export-docs --author-emails``): not on record, review or conflict pages, not in
records.json, the feeds or the search index."""

from __future__ import annotations

from pathlib import Path

import pytest

from memosite.site.build import build_site
from memosite.site.engines import ENGINES, build_with_engine, installed_engines
from memosite.site.export import export_docs
from memosite.site.trust import diff_without_emails, published_person
from memosite.store import upsert_record
from memosite.vault import Vault

PROJECT = "shop"
ADDRESS = "zoë.kowalska@example.org"
AUTHOR = f"Zoë Kowalska <{ADDRESS}>"
CONFIG = """site_name: Team memory
docs_dir: docs
theme:
  name: material
plugins:
  - search
  - memosite:
      author_emails: true
"""


def _fill(vault: Vault) -> None:
    for title in ("Retries need keys", "Ошибка при оплате 支付错误"):
        upsert_record(
            vault,
            PROJECT,
            kind="trap",
            body="Charges need their key.",
            frontmatter={"title": title, "author": AUTHOR, "reviewedBy": f"Reviewer <{ADDRESS}>", "review": "approved"},
            allow_duplicate=True,
        )


def _texts(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".html", ".json", ".xml", ".md")
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_a_build_publishes_authors_by_name_without_their_addresses(tmp_path: Path, vault: Vault, engine: str) -> None:
    if engine not in installed_engines():
        pytest.skip(f"{engine} is not installed")
    _fill(vault)
    build_with_engine(vault, engine, out_dir=tmp_path / "site", include_pending=True)
    texts = _texts(tmp_path / "site")
    # The address's ASCII tail too: JSON may write the ë of the address as \u00eb.
    assert not [name for name, text in texts.items() if ADDRESS in text or "kowalska@example.org" in text]
    page = texts["memory/shop/traps/retries-need-keys/index.html"]
    assert "<td>Zoë Kowalska</td>" in page and "Reviewer" in page


def test_a_site_config_that_asks_publishes_the_addresses(tmp_path: Path, vault: Vault) -> None:
    _fill(vault)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/index.md").write_text("# Team\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")
    build_site(vault, out_dir=tmp_path / "site", config_file=tmp_path / "mkdocs.yml")
    page = (tmp_path / "site/memory/shop/traps/retries-need-keys/index.html").read_text(encoding="utf-8")
    assert f"Zoë Kowalska &lt;{ADDRESS}&gt;" in page


@pytest.mark.parametrize("with_addresses", [False, True])
def test_export_docs_writes_addresses_only_when_asked(tmp_path: Path, vault: Vault, with_addresses: bool) -> None:
    _fill(vault)
    export_docs(vault, tmp_path / "docs", author_emails=with_addresses)
    found = [name for name, text in _texts(tmp_path / "docs").items() if ADDRESS in text]
    assert bool(found) is with_addresses


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (AUTHOR, "Zoë Kowalska"),
        (ADDRESS, "zoë.kowalska"),
        ("claude-code via memosite", "claude-code via memosite"),
        ("Ли Мин <li@example.cn> и 李明 <ming@example.cn>", "Ли Мин и 李明"),
        ("", None),
    ],
)
def test_published_person_drops_the_address_and_keeps_the_name(written: str, shown: str | None) -> None:
    assert published_person(written) == shown
    assert published_person(written, author_emails=True) == (written or None)


def test_a_diff_shown_on_the_review_page_names_authors_without_addresses() -> None:
    diff = f"--- a\n+++ b\n-author: {AUTHOR}\n+author: 'Ann <ann@example.org>'\n body mail@example.org stays\n"
    cleaned = diff_without_emails(diff)
    assert "-author: Zoë Kowalska\n" in cleaned and "+author: 'Ann'\n" in cleaned
    assert "body mail@example.org stays" in cleaned and diff_without_emails(diff, author_emails=True) == diff
