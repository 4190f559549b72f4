"""Replace memosite's vendored copy of gitleaks' rule file and print what it now holds.

    python scripts/update_gitleaks_rules.py SOURCE [--version vX.Y.Z] [--commit SHA] [--licence SOURCE]

SOURCE is a path or an http(s) URL of gitleaks' ``config/gitleaks.toml``, for example
``https://raw.githubusercontent.com/gitleaks/gitleaks/<tag>/config/gitleaks.toml``. The file is
written unmodified to ``memosite/secrets/gitleaks.toml``; ``gitleaks.json`` beside it gets the
version (from ``--version``, else a ``vX.Y.Z`` in the URL or path), the commit, the file's sha256
and the list of rules every match of which holds a run of token characters (the scanner's gate).
The new file must load: a rule whose regex Python cannot run is reported, and the update is
refused unless ``--allow-skips`` says those rules may be left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memosite.secrets import gitleaks  # noqa: E402 (the checkout's package, not an installed one)

TARGET = ROOT / "memosite" / "secrets"
_VERSION = re.compile(r"(?<![0-9A-Za-z])v(\d+\.\d+\.\d+)(?![0-9])")


def read_source(source: str) -> str:
    if source.startswith(("https://", "http://")):
        with urllib.request.urlopen(source, timeout=60) as response:
            return str(response.read().decode("utf-8"))
    return Path(source).read_text(encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="path or URL of gitleaks' config/gitleaks.toml")
    parser.add_argument("--version", help="the gitleaks release the file comes from (vX.Y.Z)")
    parser.add_argument("--commit", default="", help="the gitleaks commit the file comes from")
    parser.add_argument("--licence", help="path or URL of gitleaks' LICENSE (kept as gitleaks.LICENSE)")
    parser.add_argument("--allow-skips", action="store_true", help="accept rules Python's re cannot run")
    parser.add_argument("--into", type=Path, default=TARGET, help="folder to write (default: memosite/secrets)")
    args = parser.parse_args()

    try:
        text = read_source(args.source)
        licence = read_source(args.licence) if args.licence else None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        sys.stderr.write(f"error: cannot read {args.source}: {exc}\n")
        return 1
    found = _VERSION.search(args.source.replace("\\", "/"))
    version = args.version or (f"v{found.group(1)}" if found else "")
    if not version:
        parser.error("give --version: no vX.Y.Z in the source's name")
    try:
        rules = gitleaks.parse_rules(text, version)
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"error: not a gitleaks rule file: {exc}\n")
        return 1
    broken = []
    for rule in rules.rules:
        try:
            rule.pattern  # noqa: B018 (compiling is the check)
            for allowlist in rule.allowlists:
                allowlist.regexes  # noqa: B018
        except re.error as exc:
            broken.append(f"{rule.rule_id}: {exc}")
    untranslatable = [f"{rule_id}: {why}" for rule_id, why in rules.skipped if "no Python equivalent" in why]
    if (broken or untranslatable) and not args.allow_skips:
        for line in [*untranslatable, *broken]:
            sys.stderr.write(f"error: {line}\n")
        sys.stderr.write("refusing the update (pass --allow-skips to leave those rules out)\n")
        return 1

    target: Path = args.into
    (target / gitleaks.RULE_FILE).write_text(text, encoding="utf-8", newline="")
    if licence is not None:
        (target / "gitleaks.LICENSE").write_text(licence, encoding="utf-8", newline="")
    info = {
        "project": "gitleaks",
        "file": "config/gitleaks.toml",
        "version": version,
        "commit": args.commit,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "licence": "MIT (gitleaks.LICENSE)",
        # A local copy is named by the upstream release it is a copy of.
        "source": args.source
        if args.source.startswith(("https://", "http://"))
        else f"https://github.com/gitleaks/gitleaks/blob/{version}/config/gitleaks.toml",
        "rulesNeedingRun": sorted(rule.rule_id for rule in rules.rules if rule.needs_run),
    }
    (target / gitleaks.SOURCE_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(f"gitleaks {version}: {len(rules.rules)} rules loaded, {len(rules.skipped)} left out\n")
    for rule_id, why in rules.skipped:
        sys.stdout.write(f"  left out {rule_id}: {why}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
