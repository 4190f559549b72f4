"""The generators that can build the site (``memosite build --engine``), and running one.

* ``mkdocs`` — MkDocs 1.6 with memosite's plugin, in this process (what ``serve`` uses too).
* ``properdocs`` — ProperDocs, the maintained continuation of MkDocs 1.6, with the same plugin
  and Material unchanged. Importing ProperDocs redirects every ``mkdocs.*`` import of the process
  to it, which a process that already imported MkDocs cannot undo, so the build runs in a child
  Python process (:func:`main`) and hands its result back as JSON.
* ``zensical`` — ignores plugins: memosite exports the pages (:mod:`memosite.site.zensical`).

The default is the best one installed, in the order of :data:`PREFERENCE`: ProperDocs when
someone installed it (it is maintained, runs everything the plugin does and is no dependency of
memosite's, so it is there on purpose), else MkDocs, which memosite depends on. Zensical is built
only when asked for: it is 0.0.x, and without the plugin a build has no page cache.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memosite import errors
from memosite.errors import BuildError, InvalidArguments, MemositeError
from memosite.process_end import leave_to_os
from memosite.site.build import BuildResult
from memosite.vault import Vault

ENGINES = ("mkdocs", "properdocs", "zensical")
PREFERENCE = ("properdocs", "mkdocs", "zensical")
_MODULES = {"mkdocs": "mkdocs", "properdocs": "properdocs", "zensical": "zensical"}
_INSTALL = {
    "mkdocs": "pip install 'mkdocs>=1.6,<2'",
    "properdocs": "pip install 'memosite[properdocs]'",
    "zensical": "pip install 'memosite[zensical]'",
}


def installed_engines() -> list[str]:
    """The engines whose package is importable here, in the order of :data:`PREFERENCE`."""
    return [name for name in PREFERENCE if importlib.util.find_spec(_MODULES[name]) is not None]


def choose_engine(name: str | None) -> str:
    """``name`` when it is an engine installed here; the best installed one for None."""
    found = installed_engines()
    if name is None:
        if not found:
            raise BuildError("no site generator is installed: " + _INSTALL["mkdocs"])
        return found[0]
    if name not in ENGINES:
        raise InvalidArguments(f"unknown engine {name!r}: choose {', '.join(ENGINES)}")
    if name not in found:
        raise InvalidArguments(f"engine {name} is not installed here: {_INSTALL[name]}")
    return name


def build_with_engine(
    vault: Vault,
    engine: str,
    *,
    out_dir: str | Path,
    config_file: str | Path | None = None,
    strict: bool = False,
    projects: Sequence[str] | None = None,
    site_url: str | None = None,
    site_name: str | None = None,
    include_pending: bool = False,
    fallback_site_url: str | None = None,
) -> BuildResult:
    """Build the vault's site into ``out_dir`` with ``engine`` (see :func:`build_site` for what a
    build promises: nothing changes at ``out_dir`` unless it succeeds). ``fallback_site_url`` is
    the address used when neither ``site_url`` nor the config gives one (a publish's)."""
    request: dict[str, Any] = {
        "out_dir": str(out_dir),
        "config_file": str(config_file) if config_file is not None else None,
        "strict": strict,
        "projects": list(projects) if projects else None,
        "site_url": site_url,
        "site_name": site_name,
        "include_pending": include_pending,
        "fallback_site_url": fallback_site_url,
    }
    if engine == "zensical":
        if config_file is not None:
            raise InvalidArguments(
                "--config names an MkDocs config for memosite's plugin, which Zensical does not run:"
                " build with --engine mkdocs or properdocs, or export the pages (memosite export-docs)"
            )
        from memosite.site.zensical import build_with_zensical

        request["site_url"] = site_url or fallback_site_url
        return build_with_zensical(
            vault, **{k: v for k, v in request.items() if k not in ("config_file", "fallback_site_url")}
        )
    if engine == "properdocs":
        return _build_in_child(vault, request)
    from memosite.site.build import build_site

    return build_site(vault, **request)


def publish_to_dir(
    vault: Vault,
    *,
    dest: str | Path,
    engine: str = "mkdocs",
    config_file: str | Path | None = None,
    strict: bool = False,
    projects: Sequence[str] | None = None,
    site_url: str | None = None,
    site_name: str | None = None,
    include_pending: bool = False,
) -> BuildResult:
    """A finished static copy of the site in ``dest`` (built by ``engine``, scanned, then moved
    into place)."""
    return build_with_engine(
        vault,
        engine,
        out_dir=dest,
        config_file=config_file,
        strict=strict,
        projects=projects,
        site_url=site_url,
        site_name=site_name,
        include_pending=include_pending,
    )


def _build_in_child(vault: Vault, request: dict[str, Any]) -> BuildResult:
    """The ProperDocs build, run by :func:`main` in a child process of this interpreter."""
    payload = json.dumps({**request, "vault": str(vault.root), "cwd": os.getcwd()})
    done = subprocess.run(
        [sys.executable, "-m", "memosite.site.engines", "properdocs"],
        input=payload,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    except ValueError:
        answer = {}
    if "result" in answer:
        return BuildResult(**answer["result"])
    error = answer.get("error")
    if isinstance(error, dict):
        raise _error_of(error)
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    raise BuildError(f"site build failed: the ProperDocs build stopped ({last})")


def _error_of(payload: dict[str, Any]) -> MemositeError:
    """The error the child raised, as the class of the same code."""
    code = payload.get("code")
    kinds = [value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, MemositeError)]
    kind = next((k for k in kinds if k.code == code), MemositeError)
    return kind(str(payload.get("message", "")), details=payload.get("details") or None)


def main(argv: Sequence[str]) -> int:
    """The child of :func:`_build_in_child`: reads the request on stdin, builds on ProperDocs,
    prints one JSON line (``{"result": ...}`` or ``{"error": ...}``)."""
    if list(argv) != ["properdocs"]:
        sys.stderr.write("usage: python -m memosite.site.engines properdocs < request.json\n")
        return 2
    if "mkdocs" in sys.modules:  # pragma: no cover - a fresh interpreter never has it
        sys.stderr.write("memosite: MkDocs was imported before ProperDocs could take its place\n")
        return 2
    import properdocs.replacement  # noqa: F401  (every mkdocs.* import is ProperDocs' from here on)

    request = json.loads(sys.stdin.read())
    os.chdir(request.pop("cwd"))
    vault = Vault.open(Path(request.pop("vault")), create=False)
    try:
        from memosite.site.build import build_site

        result = build_site(vault, **request)
        answer: dict[str, Any] = {"result": result.to_json()}
    except MemositeError as exc:
        answer = exc.to_json()
    finally:
        vault.close()
    sys.stdout.write(json.dumps(answer) + "\n")
    leave_to_os()
    return 0 if "result" in answer else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
