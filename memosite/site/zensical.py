"""``memosite build --engine zensical``: the site built by Zensical, which runs no MkDocs plugin.

memosite exports its pages (:func:`memosite.site.export.export_docs`, with the landing page and its
overview) into a docs folder of a scratch directory beside memosite's own ``mkdocs.yml`` made
into a Zensical config (the memosite plugin out, the Memory page's assets and the navigation in,
search splitting words as :mod:`memosite.site.search` says), and runs ``zensical build`` in a
child process. The export is secret-scanned before it is written, and the built site is scanned
again before it is placed (:func:`memosite.site.destination.place_site`): a finding publishes
nothing. Zensical folds diacritics in its search on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from memosite.errors import BuildError
from memosite.resources import SITE_ASSETS, data_path
from memosite.site.build import BuildResult, site_size
from memosite.site.cache import Scanner
from memosite.site.destination import check_destination, place_site
from memosite.site.export import export_docs
from memosite.site.pages import default_site_name, nav_section
from memosite.site.search import separator
from memosite.vault import Vault

SCANNED_SUFFIXES = (".html", ".json", ".xml", ".txt", ".js")
_TAGS = re.compile(r"<[^>]*>")


def zensical_config(
    *, docs_dir: Path, site_dir: Path, site_name: str, site_url: str | None, projects: Sequence[str], prefix: str
) -> dict[str, Any]:
    """memosite's own site configuration, for Zensical."""
    config: dict[str, Any] = yaml.safe_load(data_path("mkdocs.yml").read_text(encoding="utf-8"))
    # Paths relative to the config's folder: Zensical reads nothing outside it.
    config.update(
        site_name=site_name,
        docs_dir=docs_dir.name,
        site_dir=site_dir.name,
        nav=[{"Home": "index.md"}, nav_section(prefix, projects)],
        plugins=[{"search": {"separator": separator()}}],
        extra_css=[SITE_ASSETS[0]],
        extra_javascript=[SITE_ASSETS[1]],
    )
    config.pop("exclude_docs", None)  # the theme overrides are not copied into the docs
    config["theme"] = {**config["theme"], "custom_dir": "overrides"}
    if site_url:
        config["site_url"] = site_url
    return config


def build_with_zensical(
    vault: Vault,
    *,
    out_dir: str | Path,
    strict: bool = False,
    projects: Sequence[str] | None = None,
    site_url: str | None = None,
    site_name: str | None = None,
    include_pending: bool = False,
    prefix: str = "memory",
) -> BuildResult:
    """Build the vault's site into ``out_dir`` with Zensical; ``out_dir`` changes only on success
    (as :func:`memosite.site.build.build_site` promises)."""
    destination = check_destination(out_dir, vault.root)
    target = destination.path
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Zensical writes its site only inside the folder of its config: the scratch folder is beside
    # the destination, so the finished site moves into place without a copy.
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.memosite-zensical-", dir=target.parent))
    staging = work / "site"
    try:
        staging.mkdir(mode=0o755)
        exported = export_docs(
            vault, work / "docs", prefix=prefix, projects=list(projects) if projects else None,
            include_pending=include_pending, home=True,
        )  # fmt: skip
        published = exported.projects
        name = site_name or default_site_name(published)
        config = zensical_config(
            docs_dir=work / "docs",
            site_dir=staging,
            site_name=name,
            site_url=site_url,
            projects=published,
            prefix=exported.prefix,
        )
        shutil.copytree(data_path("site_src") / "overrides", work / "overrides")
        config_file = work / "mkdocs.yml"
        config_file.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
        warnings = _run_zensical(config_file, strict=strict)
        _refuse_secrets(staging)
        placement = place_site(staging, destination)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pages, size = site_size(target)
    return BuildResult(
        site_dir=str(target),
        projects=published,
        records=exported.records,
        pages=pages,
        bytes=size,
        seconds=round(time.monotonic() - started, 3),
        warnings=warnings,
        kept=placement.kept,
    )


def _run_zensical(config_file: Path, *, strict: bool) -> list[str]:
    # An absolute path: a value that could read as an option never reaches zensical's command line.
    command = [sys.executable, "-m", "zensical", "build", "--config-file", str(config_file.resolve())]
    if strict:
        command.append("--strict")
    done = subprocess.run(
        command, cwd=config_file.parent, capture_output=True, text=True, encoding="utf-8", check=False
    )
    lines = [line.strip() for line in (done.stdout + "\n" + done.stderr).splitlines() if line.strip()]
    warnings = [line for line in lines if "warning" in line.lower()]
    if done.returncode != 0:
        why = warnings[-1] if warnings else (lines[-1] if lines else f"exit status {done.returncode}")
        raise BuildError(f"site build failed: zensical: {why}", details={"warnings": warnings})
    return warnings


def _refuse_secrets(site_dir: Path) -> None:
    """Scan what Zensical wrote (each page's text and link targets, every data file)."""
    scanner = Scanner(set())
    for directory, _dirs, names in os.walk(site_dir):
        for file_name in names:
            if not file_name.endswith(SCANNED_SUFFIXES):
                continue
            path = Path(directory, file_name)
            where = path.relative_to(site_dir).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            if file_name.endswith(".html"):
                scanner.scan_html(text, where)
            elif "/javascripts/" not in f"/{where}":  # the theme's own bundles
                scanner.scan(text, where)
    if scanner.findings:
        raise BuildError(f"site build failed: refusing to publish: {scanner.described()}. Nothing was published.")
