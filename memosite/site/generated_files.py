"""The files of the pages memosite generates, made for MkDocs (or ProperDocs) as the engine's own
``File.generated`` makes them, at a fraction of the cost.

A build makes one per record page: 10,000 at 10,000 records. ``File.generated`` parses each
path with ``pathlib`` and works out its destination and URL through several properties, about 10
µs a page. A page of the memory section has a path memosite built itself, of plain segments
(letters, digits, ``.``, ``_``, ``-``), so its destination and URL are a matter of joining
strings: :class:`PageMaker` copies the fields the engine's constructor sets for a generated file
and fills in those three. Any other path (an index page, a name with other characters) goes
through ``File.generated`` itself. ``tests/test_site_generated_files.py`` holds the two to the same
result for every path.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, InclusionLevel

# A path whose every segment is plain, ending in a Markdown page in a folder: quoting its URL
# changes nothing, and the engine's path normalisation leaves it as it is.
_PLAIN_PAGE = re.compile(r"(?:[A-Za-z0-9_-][A-Za-z0-9._-]*/)+([A-Za-z0-9_-][A-Za-z0-9._-]*)\.md")
# Pages the engine maps to the folder's own index.html.
_INDEX_NAMES = frozenset({"index", "README"})


class GeneratedPage(File):
    """A generated page that knows whether it must be rendered in this build."""

    render_needed = True

    def is_modified(self) -> bool:
        return self.render_needed


class PageMaker:
    """Makes the :class:`GeneratedPage` files of one build (one configuration)."""

    def __init__(self, config: MkDocsConfig) -> None:
        self._config = config
        self._directory_urls = bool(config.use_directory_urls)
        model = GeneratedPage.generated(config, "model/model.md", content="")
        # The fields the engine's constructor set; those of one page are replaced below.
        self._fields: dict[str, Any] = dict(vars(model))

    def __call__(self, src_uri: str, content: str, inclusion: InclusionLevel) -> GeneratedPage:
        match = _PLAIN_PAGE.fullmatch(src_uri)
        if match is None or match.group(1) in _INDEX_NAMES:
            made = GeneratedPage.generated(self._config, src_uri, content=content, inclusion=inclusion)
            assert isinstance(made, GeneratedPage)  # generated() builds an instance of its class
            return made
        stem = src_uri[:-3]
        page: GeneratedPage = object.__new__(GeneratedPage)
        fields = page.__dict__
        fields.update(self._fields)
        fields["src_uri"] = src_uri
        fields["_content"] = content
        fields["inclusion"] = inclusion
        if self._directory_urls:
            fields["dest_uri"] = f"{stem}/index.html"
            fields["url"] = f"{stem}/"
        else:
            fields["url"] = fields["dest_uri"] = f"{stem}.html"
        return page
