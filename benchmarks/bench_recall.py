"""Retrieval quality: do ``search`` and ``bootstrap`` find the records that answer agents' questions?

Builds a vault of realistic records (``_recallcorpus.ANSWERS``: traps, decisions and specs in English
and eight other languages, plus a few hundred distractors sharing their vocabulary) and asks the
natural-language questions of ``_recallcorpus.QUESTIONS``, each with the records that answer it.

Prints, for ``search`` (the first 10 results) and for ``bootstrap`` (the brief's trap and decision
sections, with a budget large enough that only ranking matters):

* recall@5 — per question, the share of its answers among the first five, averaged;
* MRR — per question, 1 / the position of its first answer (0 when none is in the first 10), averaged;
* how many questions found nothing at all.

``bootstrap`` only ever shows traps of medium severity and up and accepted decisions (specs only
for a slug), so it is scored on the questions whose answers it can show, by the position of an
answer within its own section. Target: recall@5 ≥ 0.9 for search.

Run: .venv/bin/python benchmarks/bench_recall.py [--distractors 400] [--verbose]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _recallcorpus import ANSWERS, QUESTIONS, distractors

from memosite.bootstrap import build_bootstrap
from memosite.refresh import reindex
from memosite.schema import Record, format_iso, serialize_record, validate_frontmatter
from memosite.search import search_records
from memosite.vault import Vault

PROJECT = "shop"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
K = 5
DEPTH = 10
BRIEF_KINDS = {"trap", "decision"}
BRIEF_SEVERITIES = {"medium", "high", "critical"}


def build_vault(root: Path, extra: int, seed: int = 21) -> Vault:
    """The answers and ``extra`` distractors as files of one project, indexed once."""
    rng = random.Random(seed)
    vault = Vault.open(root)
    for record in [*ANSWERS, *distractors(extra)]:
        created = NOW - timedelta(days=rng.uniform(1, 200))
        fm: dict[str, Any] = {
            key: value for key, value in record.items() if key not in ("body", "title") and value is not None
        }
        fm.update(
            title=record["title"],
            project=PROJECT,
            created=format_iso(created),
            updated=format_iso(created + timedelta(hours=rng.uniform(0, 48))),
        )
        path = vault.record_path(PROJECT, record["kind"], record["id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(serialize_record(Record(validate_frontmatter(fm), record["body"])), encoding="utf-8")
    reindex(vault, [PROJECT])
    return vault


def _briefable(record_id: str) -> bool:
    record = next(r for r in ANSWERS if r["id"] == record_id)
    if record["kind"] not in BRIEF_KINDS:
        return False
    return record["kind"] == "decision" or record.get("severity") in BRIEF_SEVERITIES


def _score(ranked: list[str], relevant: list[str]) -> tuple[float, float]:
    """(recall@K, reciprocal rank) of one question."""
    found = sum(1 for rid in relevant if rid in ranked[:K]) / len(relevant)
    positions = [ranked.index(rid) + 1 for rid in relevant if rid in ranked[:DEPTH]]
    return found, (1.0 / min(positions)) if positions else 0.0


def search_ranking(vault: Vault, question: str) -> list[str]:
    return [hit.id for hit in search_records(vault, PROJECT, question, limit=DEPTH, now=NOW).results]


def brief_rankings(vault: Vault, question: str) -> dict[str, list[str]]:
    brief = build_bootstrap(vault, PROJECT, query=question, max_bytes=200_000, now=NOW)
    return {"trap": [i.id for i in brief.traps], "decision": [i.id for i in brief.decisions]}


def evaluate(vault: Vault, verbose: bool) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    kinds = {r["id"]: r["kind"] for r in ANSWERS}
    rows: dict[str, list[tuple[float, float]]] = {"search": [], "bootstrap": []}
    for question, relevant in QUESTIONS:
        ranked = search_ranking(vault, question)
        score = _score(ranked, relevant)
        rows["search"].append(score)
        if verbose and score[0] < 1:
            print(f"  search    miss {score[0]:.2f} {question!r}: wanted {relevant}, got {ranked[:K]}")
        eligible = [rid for rid in relevant if _briefable(rid)]
        if not eligible:
            continue
        sections = brief_rankings(vault, question)
        recalls, reciprocal = [], 0.0
        for rid in eligible:
            section = sections[kinds[rid]]
            recalls.append(1.0 if rid in section[:K] else 0.0)
            if rid in section[:DEPTH]:
                reciprocal = max(reciprocal, 1.0 / (section.index(rid) + 1))
        rows["bootstrap"].append((sum(recalls) / len(recalls), reciprocal))
        if verbose and sum(recalls) < len(recalls):
            shown = {kind: ids[:K] for kind, ids in sections.items()}
            print(f"  bootstrap miss {question!r}: wanted {eligible}, got {shown}")
    for name, scores in rows.items():
        figures[name] = {
            "questions": float(len(scores)),
            "recall": sum(s[0] for s in scores) / len(scores),
            "mrr": sum(s[1] for s in scores) / len(scores),
            "nothing": float(sum(1 for s in scores if s == (0.0, 0.0))),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=400)
    parser.add_argument("--verbose", action="store_true", help="list every question that missed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memosite-recall-") as tmp:
        vault = build_vault(Path(tmp) / "vault", args.distractors)
        records = vault.index().count(PROJECT)
        figures = evaluate(vault, args.verbose)
        vault.close()
    print(f"{records} records, {len(QUESTIONS)} questions; recall@{K} and MRR (first {DEPTH})")
    print(f"{'surface':10} {'questions':>9} {'recall@5':>9} {'MRR':>6} {'no answer':>9}")
    for name, f in figures.items():
        print(f"{name:10} {int(f['questions']):>9} {f['recall']:>9.3f} {f['mrr']:>6.3f} {int(f['nothing']):>9}")


if __name__ == "__main__":
    main()
