"""Memory that clearly matches what a person just asked an agent, for the agent's prompt hook.

A prompt is not a query: most of it says nothing about the project's memory, and adding records
that merely share a word with it would teach the agent to ignore what memosite adds. So a record is
recalled only when it **clearly** matches:

* it is a trap whose path patterns cover a file or directory the prompt names
  (``src/payments/client.py``), or
* it holds at least :func:`terms_needed` of the prompt's search terms (two for a short prompt, up to
  four for a long one), found by the query pipeline ``search`` uses; of a prompt longer than
  :data:`MAX_PROMPT_CHARS` (a pasted log) only the words at its start and end count
  (:func:`prompt_words`).

Only what the brief would show goes in: approved (not waiting for review), live, unexpired traps
and decisions whose cited code ``memosite verify`` did not find drifted or missing. At most
:data:`MAX_RECORDS` records within :data:`MAX_BYTES`; nothing when nothing matches well. A record
is never recalled twice in one agent session: the records a session was given (by its brief or an
earlier prompt) are remembered per session id under ``<vault>/.memosite/hook-sessions/``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from memosite.errors import InvalidArguments
from memosite.mdtext import code_span, markdown_text, rule_line
from memosite.query import MAX_ANY_TERMS, parse_query
from memosite.schema import utc_now
from memosite.search import SearchHit, search_records
from memosite.statuses import ACCEPTED_STATUSES
from memosite.vault import Vault

MAX_RECORDS = 3
MAX_BYTES = 1536
MAX_PATHS = 5  # paths named in one prompt that are looked up
# The words of a prompt matched against memory: its start and its end. A prompt of megabytes is a
# pasted log around what the person wrote; matching every word of it would take seconds (past the
# hook's time limit) and, with a few words needed of thousands, match anything.
MAX_PROMPT_CHARS = 8192
RULE_CHARS = 200
SESSIONS_DIR = "hook-sessions"
SESSION_MAX_AGE = timedelta(days=30)
# A path the prompt names: a segment, a slash and more (src/pay/client.py), or a file name with an
# extension (client.py, conftest.py).
_PATH_TOKEN = re.compile(r"(?<![\w@/.-])((?:[\w.-]+/)+[\w.*-]+|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/])")
_URL_TOKEN = re.compile(r"\w+://\S+")


def terms_needed(term_count: int) -> int:
    """How many of a prompt's ``term_count`` terms a record must hold to match it clearly."""
    if term_count <= 1:
        return term_count
    if term_count <= 6:
        return 2
    return 3 if term_count <= 12 else 4


@dataclass(frozen=True)
class Recalled:
    """A record recalled for a prompt, and why."""

    id: str
    kind: str
    title: str
    severity: str | None
    rule: str
    path_patterns: tuple[str, ...] = ()
    on_path: bool = False
    matched_terms: int = 0


@dataclass
class Recall:
    records: list[Recalled] = field(default_factory=list)
    terms: int = 0
    needed: int = 0

    def markdown(self) -> str:
        """What the agent is given ("" for nothing)."""
        if not self.records:
            return ""
        lines = ["memosite: project memory that matches this prompt (reviewed; `memosite get --id ID` has all of it):"]
        for record in self.records:
            label = f"[{(record.severity or 'unrated').upper()}] " if record.kind == "trap" else ""
            line = f"- {label}{record.kind} {code_span(record.id)}: {markdown_text(record.title)}"
            if record.rule:
                line += f" — {record.rule}"
            if record.path_patterns:
                line += f" (paths: {', '.join(code_span(p) for p in record.path_patterns[:3])})"
            lines.append(line.replace("<!--", "&lt;!--"))
        return "\n".join(lines) + "\n"


def named_paths(prompt: str) -> list[str]:
    """Files and directories ``prompt`` names, in order (URLs aside), at most :data:`MAX_PATHS`."""
    text = _URL_TOKEN.sub(" ", prompt)
    found: list[str] = []
    for match in _PATH_TOKEN.finditer(text):
        raw = match.group(1)
        if ".." in raw.split("/"):
            continue  # a path out of the repository names nothing a trap is about
        path = raw.rstrip(".")  # the full stop of a sentence ending in a file name
        while path.startswith("./"):
            path = path[2:]
        if path and path not in found:
            found.append(path)
        if len(found) == MAX_PATHS:
            break
    return found


def prompt_words(prompt: str) -> tuple[list[str], int]:
    """The words of ``prompt`` matched against memory, and how many terms they count as.

    A prompt up to :data:`MAX_PROMPT_CHARS` gives all its words. A longer one (a log pasted before
    or after the question) gives the first words of its start and the last words of its end, half
    of the terms a search takes (:data:`memosite.query.MAX_ANY_TERMS`) each: only what a search
    reads first would count otherwise, and a question after the log would never be read."""
    if len(prompt) <= MAX_PROMPT_CHARS:
        parsed = parse_query(prompt, plain=True)
        return [label.lower() for label in parsed.labels()], len(parsed.terms)
    half, share = MAX_PROMPT_CHARS // 2, MAX_ANY_TERMS // 2
    start = [label.lower() for label in parse_query(prompt[:half], plain=True).labels()][:share]
    end = [label.lower() for label in parse_query(prompt[-half:], plain=True).labels()][-share:]
    words = list(dict.fromkeys([*start, *end]))
    return words, len(words)


def _usable(hit: SearchHit) -> bool:
    return not hit.pending and not hit.expired and hit.freshness not in ("drifted", "missing")


def recall_for_prompt(
    vault: Vault,
    project: str,
    prompt: str,
    *,
    exclude: Iterable[str] = (),
    max_records: int = MAX_RECORDS,
    max_bytes: int = MAX_BYTES,
    now: datetime | None = None,
) -> Recall:
    """The records that clearly match ``prompt`` (see the module docstring), ids in ``exclude`` aside."""
    if not isinstance(prompt, str):
        raise InvalidArguments("the prompt must be text")
    now = now or utc_now()
    skip = set(exclude)
    chosen: dict[str, tuple[SearchHit, bool, int]] = {}
    for path in named_paths(prompt):
        try:
            found = search_records(vault, project, kinds=["trap"], status="active", path=path, limit=5, now=now)
        except InvalidArguments:
            continue
        for hit in found.results:
            if hit.id not in skip and hit.id not in chosen and _usable(hit):
                chosen[hit.id] = (hit, True, 0)
    words, terms = prompt_words(prompt)
    result = Recall(terms=terms)
    result.needed = terms_needed(result.terms)
    if result.terms and len(chosen) < max_records:
        # The prompt's own words, never its FTS5 syntax: a person typing NOT or title: means words.
        query = " ".join(words)
        found = search_records(
            vault, project, query, kinds=["trap", "decision"], status=ACCEPTED_STATUSES, limit=10, now=now
        )
        for hit in found.results:
            if (hit.matched_terms or 0) < result.needed:
                continue  # relevance (and meaning, with hybrid on) may rank a record holding fewer first
            if hit.id not in skip and hit.id not in chosen and _usable(hit):
                chosen[hit.id] = (hit, False, hit.matched_terms or 0)
    index = vault.index()
    for hit, on_path, matched in chosen.values():
        if len(result.records) >= max_records:
            break
        entry = index.by_path(hit.path)
        record = Recalled(
            hit.id,
            hit.kind,
            hit.title,
            hit.severity,
            rule_line(entry.body, RULE_CHARS) if entry is not None else "",
            tuple(hit.path_patterns),
            on_path,
            matched,
        )
        if len(Recall([*result.records, record]).markdown().encode("utf-8")) > max_bytes:
            break
        result.records.append(record)
    return result


# --- what a session was given ----------------------------------------------------------------


def _session_file(vault: Vault, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
    return vault.internal_path(SESSIONS_DIR, f"{digest}.txt")


def shown_in_session(vault: Vault, project: str, session_id: str | None) -> set[str]:
    """The ids of ``project``'s records the agent session was already given."""
    if not session_id:
        return set()
    try:
        lines = _session_file(vault, session_id).read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return set()
    prefix = f"{project}\t"
    return {line[len(prefix) :] for line in lines if line.startswith(prefix)}


def remember_shown(vault: Vault, project: str, session_id: str | None, ids: Iterable[str]) -> None:
    """Note that the session was given ``ids`` (appended: concurrent hooks of one session add up)."""
    fresh = [record_id for record_id in ids if record_id and "\n" not in record_id]
    if not session_id or not fresh:
        return
    path = _session_file(vault, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(f"{project}\t{record_id}\n" for record_id in fresh))


def forget_old_sessions(vault: Vault, now: datetime | None = None) -> int:
    """Drop what sessions untouched for :data:`SESSION_MAX_AGE` were given; returns how many."""
    cutoff = ((now or utc_now()) - SESSION_MAX_AGE).timestamp()
    removed = 0
    try:
        directory = vault.internal_path(SESSIONS_DIR)
        candidates = [p for p in directory.iterdir() if p.suffix == ".txt" and p.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for path in candidates:
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed
