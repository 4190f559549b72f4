"""Build ``data/recall_real.jsonl``, the corpus of ``bench_recall_real.py``, from public repositories.

Nobody on the team wrote these records: they are the architecture decision records and the FAQ or
troubleshooting pages of real projects, read from their git history at a pinned commit, one record
per decision or per question. Each line keeps the record's source (repository, commit, path) and
its licence. The Russian, Chinese and Greek records are the CC0 translations of the Python
documentation (the tutorial in Russian, the library and design FAQs in Chinese, the programming FAQ
in Greek).

Run (each argument a bare git directory of the repository named, as ``fetch`` brings them):

    .venv/bin/python benchmarks/build_recall_real_corpus.py --mirror alphagov/govuk-aws=DIR ...

The output is committed: the benchmark itself never needs the repositories.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "recall_real.jsonl"


@dataclass(frozen=True)
class Source:
    repo: str
    commit: str
    licence: str
    kind: str  # decision or trap
    lang: str
    paths: tuple[str, ...]
    reader: str  # adr, rst, po
    limit: int = 1000


SOURCES = (
    Source(
        "alphagov/govuk-aws",
        "81ee9f6e91fd8692fbf751ecf980c671c13aa3c0",
        "MIT",
        "decision",
        "en",
        ("docs/architecture/decisions/",),
        "adr",
    ),
    Source(
        "alphagov/govuk-infrastructure",
        "d9b7454f26061e8af95753fa688cdf3d86a6c3ee",
        "MIT",
        "decision",
        "en",
        ("docs/architecture/decisions/",),
        "adr",
    ),
    Source(
        "adr/madr",
        "11807d877dbc5eb952591d54bc3124ddbc4c924c",
        "MIT OR CC0-1.0",
        "decision",
        "en",
        ("docs/decisions/",),
        "adr",
    ),
    Source(
        "sqlalchemy/sqlalchemy",
        "f35da7e2b9349a08b8de1f6bd3b07c8bf8616790",
        "MIT",
        "trap",
        "en",
        tuple(
            f"doc/build/faq/{name}.rst"
            for name in (
                "connections",
                "sessions",
                "performance",
                "ormconfiguration",
                "sqlexpressions",
                "metadata_schema",
                "installation",
                "thirdparty",
            )
        ),
        "rst",
    ),
    Source(
        "celery/celery",
        "5dc781f0bd5f36186bfcc74e0a4f9f654452c69b",
        "BSD-3-Clause",
        "trap",
        "en",
        ("docs/faq.rst",),
        "rst",
    ),
    Source(
        "psf/requests",
        "1f6589ec3a1ee910f9a65cc3ceac60b26677bc0e",
        "Apache-2.0",
        "trap",
        "en",
        ("docs/community/faq.rst",),
        "rst",
    ),
    Source(
        "MLGRussianXP/python-docs-ru",
        "3.14",
        "CC0-1.0 (translation; original PSF-2.0)",
        "trap",
        "ru",
        tuple(f"tutorial/{name}.po" for name in ("errors", "floatingpoint", "venv", "modules", "inputoutput")),
        "po",
    ),
    Source(
        "python/python-docs-zh-cn",
        "3.13",
        "CC0-1.0 (translation; original PSF-2.0)",
        "trap",
        "zh",
        ("faq/library.po", "faq/design.po"),
        "po",
        limit=40,
    ),
    Source(
        "pygreece/python-docs-gr",
        "aaaa28612a69abd4ccb6db39b1a6825c8bb5480c",
        "CC0-1.0 (translation; original PSF-2.0)",
        "trap",
        "el",
        ("faq/programming.po",),
        "po",
        limit=40,
    ),
)

_RST_UNDERLINE = re.compile(r"^([=\-^~\"'`#*+])\1{2,}\s*$")
_RST_NOISE = re.compile(r"^\.\. (_[^:]+:|contents::|seealso::|note::|warning::|versionadded::|topic::)|^\s+:\w+:")


def git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={mirror}", *args], check=True, capture_output=True, text=True, encoding="utf-8"
    ).stdout


def resolve(mirror: Path, rev: str) -> str:
    return git(mirror, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}").strip()


def list_files(mirror: Path, commit: str, prefix: str) -> list[str]:
    return [
        line
        for line in git(mirror, "ls-tree", "-r", "--name-only", commit, "--", prefix).splitlines()
        if line.endswith(".md")
    ]


def read(mirror: Path, commit: str, path: str) -> str:
    return git(mirror, "show", f"{commit}:{path}")


def _clean(text: str) -> str:
    text = re.sub(r":[a-z:_]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", text)  # :class:`.Foo` → Foo
    text = text.replace("``", "`")
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def adr_records(text: str) -> Iterator[tuple[str, str]]:
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # YAML front matter of a MADR record
        end = next((n for n, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1 :]
    title_at = next((n for n, line in enumerate(lines) if line.startswith("# ")), None)
    if title_at is None:
        return
    title = re.sub(r"^#\s+(\d+\.\s*)?", "", lines[title_at]).strip()
    body = "\n".join(lines[title_at + 1 :])
    if "template" in title.lower() or len(body) < 200:
        return
    yield title, _clean(body)


def rst_records(text: str) -> Iterator[tuple[str, str]]:
    """One record per question heading (a heading ending with ``?`` or any heading of the lowest level
    in use) with the text up to the next heading."""
    lines = text.splitlines()
    headings: list[tuple[int, str]] = []
    for n in range(1, len(lines)):
        above = lines[n - 1].strip()
        underlined = _RST_UNDERLINE.match(lines[n]) and above and not _RST_UNDERLINE.match(lines[n - 1])
        if underlined and len(lines[n].strip()) >= len(above) - 2:
            headings.append((n - 1, above))
    for position, (start, title) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(lines)
        body_lines = [line for line in lines[start + 2 : end] if not _RST_NOISE.match(line)]
        body = _clean("\n".join(body_lines)).removeprefix("**Answer:**").strip()
        if len(body) < 120:
            continue  # a section heading with nothing of its own
        yield _clean(title), body


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": " "}.get(m.group(1), m.group(1)), text)


def _po_entries(text: str) -> list[str]:
    entries = []
    for match in re.finditer(r'\nmsgid ((?:"[^\n]*"\n)+)msgstr ((?:"[^\n]*"\n)+)', text):
        value = _unescape("".join(re.findall(r'"(.*)"', match.group(2))))
        source = "".join(re.findall(r'"(.*)"', match.group(1)))
        if source and value.strip():
            entries.append((source, value))
    return [f"{source}\x00{value}" for source, value in entries]


def _is_heading(source: str) -> bool:
    """A translated entry is a heading when its English source is short and reads as one."""
    stripped = source.strip()
    if len(stripped) > 90 or "\\n" in stripped or stripped.endswith((".", ":", ";", ",")):
        return False
    return stripped.endswith("?") or (stripped[:1].isupper() and len(stripped.split()) <= 8)


def po_records(text: str) -> Iterator[tuple[str, str]]:
    entries = [entry.split("\x00", 1) for entry in _po_entries(text)]
    current: tuple[str, list[str]] | None = None
    for source, value in entries:
        if _is_heading(source):
            if current is not None and sum(len(part) for part in current[1]) >= 80:
                yield current[0], _clean("\n\n".join(current[1]))
            current = (value.strip(), [])
        elif current is not None:
            current[1].append(value)
    if current is not None and sum(len(part) for part in current[1]) >= 80:
        yield current[0], _clean("\n\n".join(current[1]))


def slug(text: str) -> str:
    ascii_words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(ascii_words)[:60].strip("-")


def build(mirrors: dict[str, Path]) -> list[dict[str, str]]:
    records: list[dict[str, str]] = []
    seen: set[str] = set()
    for source in SOURCES:
        mirror = mirrors.get(source.repo)
        if mirror is None:
            sys.exit(f"no --mirror for {source.repo}")
        commit = resolve(mirror, source.commit)
        files = [
            f
            for prefix in source.paths
            for f in (list_files(mirror, commit, prefix) if source.reader == "adr" else [prefix])
        ]
        taken = 0
        for path in files:
            reader = {"adr": adr_records, "rst": rst_records, "po": po_records}[source.reader]
            for title, body in reader(read(mirror, commit, path)):
                if taken >= source.limit:
                    break
                base = f"{source.repo.split('/')[1]}-{slug(title) or taken}"
                rid, n = base, 2
                while rid in seen:
                    rid, n = f"{base}-{n}", n + 1
                seen.add(rid)
                records.append(
                    {
                        "id": rid,
                        "kind": source.kind,
                        "lang": source.lang,
                        "title": title,
                        "body": body,
                        "source": f"https://github.com/{source.repo}/blob/{commit}/{path}",
                        "licence": source.licence,
                    }
                )
                taken += 1
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", action="append", default=[], help="owner/name=GIT_DIR (repeatable)")
    args = parser.parse_args()
    mirrors = {}
    for item in args.mirror:
        name, _, directory = item.partition("=")
        mirrors[name] = Path(directory)
    records = build(mirrors)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    size = OUT.stat().st_size
    by_source: dict[str, int] = {}
    for record in records:
        key = record["source"].split("/blob/")[0].removeprefix("https://github.com/")
        by_source[key] = by_source.get(key, 0) + 1
    print(f"{len(records)} records, {size / 1024:.0f} KiB -> {OUT.name}")
    for key, count in by_source.items():
        print(f"  {count:4} {key}")


if __name__ == "__main__":
    main()
