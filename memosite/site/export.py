"""``memosite export-docs DIR``: the memory section as plain Markdown for any Material-compatible
generator (plain MkDocs, Zensical), without memosite's plugin.

The export holds the same pages the plugin generates (records, views, project homes and
changelogs, the Memory page), ``records.json``, the Atom feeds and the Memory page's assets.
Agent-written Markdown cannot be sanitised as HTML here (the generator renders it later), so it
is neutralised as Markdown: raw HTML becomes text and links whose scheme is not http(s), mailto or
relative become text, which leaves the generator nothing to render that the plugin's sanitiser
would remove. Every file is secret-scanned, exactly as a build's output is, before anything is
written; a finding writes nothing.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memosite.errors import InvalidArguments, SafetyViolation
from memosite.refresh import ensure_index
from memosite.resources import SITE_ASSETS as ASSETS
from memosite.resources import data_path
from memosite.schema import utc_now
from memosite.site.cache import Scanner
from memosite.site.dashboard import OVERVIEW_MARK, overview_markdown, render_feed
from memosite.site.destination import check_destination
from memosite.site.manifest import Manifest, manifest_key, read_manifest, record_file, unchanged, within, write_manifest
from memosite.site.pages import (
    SiteContent,
    SitePage,
    collect_site_content,
    default_site_name,
    normalize_prefix,
    resolve_projects,
)
from memosite.vault import Vault
from memosite.watch import recompile_projects

MANIFEST = ".memosite-export.json"
GENERATOR = "memosite export-docs"
_FENCE = re.compile(r"^(\s*)(```+|~~~+)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(\s*([^)\s]*)([^)]*)\)")
# What YAML reads as a line break or refuses in a double-quoted scalar, and what HTML drops.
_NOT_YAML_PRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_SAFE_SCHEME = re.compile(r"^(?:https?:|mailto:|#|\.{0,2}/|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)


@dataclass
class ExportResult:
    directory: str
    prefix: str
    projects: list[str]
    records: int
    files: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # files of the previous export a person edited since

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "prefix": self.prefix,
            "projects": self.projects,
            "records": self.records,
            "files": len(self.files),
            "kept": self.kept,
            "extra_css": [ASSETS[0]],
            "extra_javascript": [ASSETS[1]],
        }


def _neutralise_line(line: str) -> str:
    pieces = []
    last = 0
    for match in _CODE_SPAN.finditer(line):
        pieces.append(_neutralise_text(line[last : match.start()]))
        pieces.append(match.group(0))
        last = match.end()
    pieces.append(_neutralise_text(line[last:]))
    return "".join(pieces)


def _neutralise_text(text: str) -> str:
    text = text.replace("<", "&lt;")

    def link(match: re.Match[str]) -> str:
        target = match.group(3)
        if _SAFE_SCHEME.match(target):
            return match.group(0)
        return f"{match.group(2)} ({target.replace(':', '&#58;')})"

    return _LINK.sub(link, text)


def neutralise_markdown(text: str) -> str:
    """Markdown whose raw HTML shows as text and whose unsafe links are plain text; code blocks
    and code spans are left as they are (Markdown already shows them literally)."""
    out = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if match and match.group(2)[0] == fence[0] and len(match.group(2)) >= len(fence):
                fence = None
            continue
        if match:
            fence = match.group(2)
            out.append(line)
            continue
        out.append(line if line.startswith(("    ", "\t")) else _neutralise_line(line))
    return "\n".join(out)


def _directory_url(src_uri: str) -> str:
    """The URL MkDocs and Zensical give a page with ``use_directory_urls`` (their default)."""
    if not src_uri.endswith(".md"):
        return src_uri
    stem = src_uri[:-3]
    if stem == "index" or stem.endswith("/index"):
        return stem[: -len("index")]
    return stem + "/"


# The one piece of HTML memosite's own templates put into Markdown (a severity, freshness or
# review badge); whatever else looks like HTML came from a record and stays text.
_BADGE_TEXT = re.compile(
    r'&lt;span class="memosite-(severity|freshness|review) memosite-\1--([a-z]+)">([^&<]*)&lt;/span>'
)


def front_matter_title(title: str) -> str:
    """``title`` as the value of a YAML front matter ``title:``, safe for every generator.

    MkDocs and Zensical both print a page's front matter title into the HTML unescaped (the page
    title, the header, the nav, the search index), so it is written as HTML text: escaped, with
    every character YAML would not keep as it is (controls, line breaks) as a character reference.
    The YAML is a double-quoted scalar, so ``: ``, ``#``, ``---`` and quotes mean nothing in it.

    An apostrophe stays itself: the themes put a title into an attribute only escaped and
    double-quoted, and Zensical shows the title as text in its search results, where ``&#x27;``
    would read as those six characters in every "charge's" or "don't"."""
    text = html.escape(title, quote=False).replace('"', "&quot;")
    text = _NOT_YAML_PRINTABLE.sub(lambda match: f"&#x{ord(match.group()):x};", text)
    return json.dumps(text, ensure_ascii=False)


# The lines of memosite's record template that are HTML (a record's page folds its details and
# keeps its chrome out of search): restored after neutralising, and only as whole lines, so text
# from a record can at most add one more of these fixed, attribute-free elements.
_STRUCTURE = frozenset(
    {
        '<aside class="memosite-banners" markdown data-search-exclude>',
        "</aside>",
        '<details class="memosite-details" markdown data-search-exclude>',
        "<summary>Record details</summary>",
        "</details>",
        '<div class="memosite-links" markdown>',
        "</div>",
    }
)
# ... and the boxes of the tables of counts on the landing page and the project homes.
_COMPACT_STRUCTURE = frozenset(
    {'<div class="memosite-overview memosite-compact" markdown>', '<div class="memosite-compact" markdown>', "</div>"}
)


_STRUCTURE_TAG = re.compile(r"^<(/?)([a-z]+)[\s>]")


def _restore_structure(text: str, lines: frozenset[str] = _STRUCTURE) -> str:
    """``text`` with its (neutralised) structure lines back as HTML, and every line inside an
    element they open made safe as HTML too (:func:`_html_safe_line`).

    Whether the generator reads such an element's inside as Markdown depends on its
    ``md_in_html`` extension: without it, the block is raw HTML up to its closing tag (counted as
    Python-Markdown counts it: the opening tag's own name, nested), and a code span or a code
    block there — a tag, a module, a body line — would reach the page as live markup."""
    restored = {line.replace("<", "&lt;"): line for line in lines}
    out: list[str] = []
    block, depth = "", 0
    for line in text.split("\n"):
        structure = restored.get(line)
        if structure is None:
            out.append(_html_safe_line(line) if block else line)
            continue
        out.append(structure)
        tag = _STRUCTURE_TAG.match(structure)
        if tag is None:
            continue
        closing, name = tag.group(1) == "/", tag.group(2)
        if not block and not closing and f"</{name}>" not in structure:
            block, depth = name, 1
        elif name == block:
            depth += -1 if closing else 1
            if depth == 0:
                block = ""
    return "\n".join(out)


def _html_safe_line(line: str) -> str:
    """A Markdown line that shows the same whether it is read as Markdown or as raw HTML: its code
    spans as ``<code>`` elements holding escaped text, and any ``<`` left (a code block's) as
    ``&lt;``."""
    pieces, last = [], 0
    for match in _CODE_SPAN.finditer(line):
        pieces.append(line[last : match.start()].replace("<", "&lt;"))
        code = match.group(2)
        if code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]
        pieces.append("<code>" + html.escape(code, quote=False).replace("|", "&#124;") + "</code>")
        last = match.end()
    pieces.append(line[last:].replace("<", "&lt;"))
    return "".join(pieces)


def _restore_badges(text: str) -> str:
    return _BADGE_TEXT.sub(r'<span class="memosite-\1 memosite-\1--\2">\3</span>', text)


def front_matter(title: str, meta: dict[str, Any], *, searchable: bool) -> str:
    """A page's one front-matter block: its title, ``hide``, ``tags`` and, unless ``searchable``,
    ``search: exclude``. Every value from a record is written as :func:`front_matter_title` writes
    a title (the generators print them unescaped)."""
    lines = ["---", f"title: {front_matter_title(title)}"]
    hidden = [str(item) for item in meta.get("hide") or () if str(item) in ("toc", "navigation", "footer", "tags")]
    if hidden:
        lines += ["hide:", *(f"  - {item}" for item in hidden)]
    tags = [str(tag) for tag in meta.get("tags") or ()]
    if tags:
        lines += ["tags:", *(f"  - {front_matter_title(tag)}" for tag in tags)]
    if not searchable:
        lines += ["search:", "  exclude: true"]
    return "\n".join([*lines, "---", ""])


def _page_text(page: SitePage) -> str:
    text = page.markdown if page.role == "memory" else neutralise_markdown(page.markdown)
    if page.role == "record":
        text = _restore_structure(text)
    elif page.role == "dashboard":
        text = _restore_structure(text, _COMPACT_STRUCTURE)
    text = _restore_badges(text)
    for token, svg in page.charts.items():
        text = text.replace(token, f'<figure class="memosite-figure">{svg}</figure>')
    searchable = page.role == "record" and (page.record is None or page.record.searchable_by_default)
    return front_matter(page.title, page.meta, searchable=searchable) + "\n" + text


def export_docs(
    vault: Vault,
    directory: str | Path,
    *,
    prefix: str = "memory",
    projects: list[str] | None = None,
    include_pending: bool = False,
    author_emails: bool = False,
    home: bool = False,
) -> ExportResult:
    """Write the memory section into ``directory`` (a docs folder); see the module docstring.
    Records waiting for review are left out unless ``include_pending``; authors' e-mail addresses
    unless ``author_emails``. With ``home``, the folder's ``index.md`` is memosite's landing page
    with the site-wide overview (what ``memosite build --engine zensical`` publishes)."""
    prefix = normalize_prefix(prefix)
    key = manifest_key()
    destination, previous = check_destination_for_export(Path(directory), vault.root, prefix, key)
    ensure_index(vault)
    wanted = resolve_projects(vault, projects)
    recompile_projects(vault, wanted)
    content = collect_site_content(
        vault, prefix=prefix, projects=wanted, include_pending=include_pending, author_emails=author_emails
    )
    files: dict[str, str] = {}
    for page in content.pages:
        files[page.src_uri] = _page_text(page)
    if home:
        files["index.md"] = _home_text(vault, content)
    urls = {uri: _directory_url(uri) for uri in files}
    files[content.records_json_uri] = content.records_json(lambda uri: urls.get(uri, uri))
    now = utc_now()
    for uri, source in content.feeds.items():
        files[uri] = render_feed(
            source,
            src_uri=uri,
            site_name=default_site_name(wanted),
            site_url=None,
            url_for=lambda u: urls.get(u, u),
            now=now,
        )
    scanner = Scanner(set())
    for uri, text in files.items():
        scanner.scan(text, uri)
    if scanner.findings:
        raise SafetyViolation(f"refusing to export: {scanner.described()}. Nothing was written.")
    destination.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".memosite-export-", dir=destination))
    try:
        for uri, text in files.items():
            target = staging / uri
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for asset in ASSETS:
            (staging / asset).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data_path("site_src") / asset, staging / asset)
        written = sorted([*files, *ASSETS])
        kept = _replace_previous(destination, staging, written, previous, key)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportResult(str(destination), prefix, wanted, len(content.records), written, kept)


def _home_text(vault: Vault, content: SiteContent) -> str:
    """memosite's landing page with the site-wide overview where it says so, as an exported page."""
    from memosite.views import env_for

    landing = (data_path("site_src") / "index.md").read_text(encoding="utf-8")
    assert content.overview is not None
    overview, charts = overview_markdown(env_for(vault), content.overview, "")
    text = _restore_badges(_restore_structure(neutralise_markdown(overview), _COMPACT_STRUCTURE))
    for token, svg in charts.items():
        text = text.replace(token, f'<figure class="memosite-figure">{svg}</figure>')
    return front_matter("Home", {}, searchable=False) + "\n" + landing.replace(OVERVIEW_MARK, text)


def check_destination_for_export(
    directory: Path, vault_root: Path, prefix: str, key: bytes
) -> tuple[Path, Manifest | None]:
    """The docs folder to export into and what the previous export wrote there: never inside the
    vault; its memory section must be new or one memosite exported (a manifest it can show it
    wrote lists that); a manifest memosite cannot show it wrote is refused."""
    resolved = check_destination_or_docs(directory, vault_root)
    previous = read_manifest(resolved / MANIFEST, GENERATOR, key)
    section = resolved / prefix
    if section.exists() and any(section.iterdir()) and previous is None:
        raise InvalidArguments(
            f"refusing to export into {section}: it is not empty and memosite did not export it (no {MANIFEST})"
        )
    return resolved, previous


def check_destination_or_docs(directory: Path, vault_root: Path) -> Path:
    # A docs folder is usually not empty (the team's own pages): only the vault overlap matters.
    given = directory.expanduser().absolute()
    resolved = given.resolve()
    vault = vault_root.resolve()
    if resolved == vault or vault in resolved.parents or resolved in vault.parents:
        check_destination(given, vault_root)  # raises the one overlap message
    if resolved.exists() and not resolved.is_dir():
        raise InvalidArguments(f"refusing to export into {given}: it is not a directory")
    return resolved


def _replace_previous(
    destination: Path, staging: Path, written: list[str], previous: Manifest | None, key: bytes
) -> list[str]:
    """Move the staged export in; remove the previous export's files it no longer holds (unless a
    person edited them since: those are returned) and the directories it made that are left empty.
    A file of a person's where the export puts a file or needs a directory stops everything first."""
    before = previous or Manifest()
    records = {name: record_file(staging / name) for name in written}
    new_dirs = {"/".join(name.split("/")[:n]) for name in written for n in range(1, name.count("/") + 1)}
    for name in [*sorted(new_dirs), *written]:
        path = destination / name
        if not (path.exists() or path.is_symlink()):
            continue
        if name in new_dirs:
            if path.is_symlink() or not path.is_dir():
                raise InvalidArguments(f"refusing to export: {path} is in the way and memosite did not write it")
        elif name not in before.files or not unchanged(path, before.files[name]):
            why = "was changed after memosite wrote it" if name in before.files else "memosite did not write it"
            raise InvalidArguments(f"refusing to export: {path} exists and {why}")
    made = frozenset(d for d in new_dirs if d in before.dirs or not (destination / d).exists())
    # Until the last file is in, the manifest lists both exports (see site.destination).
    write_manifest(destination / MANIFEST, GENERATOR, Manifest({**before.files, **records}, before.dirs | made), key)
    kept = []
    for name, recorded in sorted(before.files.items()):
        path = destination / name
        if name in records or not within(destination, name) or not path.exists():
            continue
        if unchanged(path, recorded):
            path.unlink()
        else:
            kept.append(name)
    for name in written:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, target)
    for name in sorted(before.dirs - new_dirs, key=lambda n: (-n.count("/"), n)):
        if within(destination, name) and not (destination / name).is_symlink():
            with contextlib.suppress(OSError):
                (destination / name).rmdir()
    write_manifest(destination / MANIFEST, GENERATOR, Manifest(records, made), key)
    return kept
