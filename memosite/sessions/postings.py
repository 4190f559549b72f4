"""The per-session inverted index behind search: ``index/search.bin``, derived and disposable.

The file holds the postings of every event text chunk of one log generation up to a byte
offset, as packed arrays (no pickle: a vault file must never be able to run code). Events
appended since then are indexed in memory on load; when that tail grows large the file is
rewritten. Loaded indexes stay in a small in-process LRU keyed by the stat signature of the
manifest and the log, so an atomic manifest replace (new inode) invalidates the entry.

A session vtcode wrote also gets a chunk per grounded fact of its ``derived/memory.json``, in
memory only: its ``offset`` is ``-1 - <fact index>`` (no line of the log), its ``seq`` 0.
"""

from __future__ import annotations

import json
import os
import sys
from array import array
from bisect import bisect_left
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any

from memosite.errors import MemositeError
from memosite.sessions import safefs
from memosite.sessions.derived import vtcode_grounded_facts
from memosite.sessions.events import LIFECYCLE_TYPES, RESERVED_TYPES, Event, event_text
from memosite.sessions.log import EventLog, LoggedEvent
from memosite.sessions.paths import SessionPaths
from memosite.sessions.tokens import tokenize
from memosite.sessions.wire import VTCODE_ITEM_SNAPSHOTS
from memosite.vault import warn

INDEX_MAGIC = b"MEMOSITE-SESSION-SEARCH\n"
INDEX_FORMAT = 3  # 2: folded tokens, unspaced scripts as characters and bigrams; 3: emoji too
CHUNK_TOKENS = 128
CACHE_SIZE = 32

# name -> typecode of each packed array, in file order
_CHUNK_ARRAYS = {"seq": "q", "part": "l", "turn": "l", "time": "d", "length": "l", "offset": "q"}
_POSTING_ARRAYS = {"starts": "q", "post_chunk": "l", "post_tf": "l"}


_TEXT_ONLY_TYPES = RESERVED_TYPES | LIFECYCLE_TYPES


def searchable_text(event: Event) -> str:
    """What search sees of an event: every string in its payload.

    Session bookkeeping (start, end, summary) and turn events contribute only their ``text``:
    their other fields are ids, ledgers and counters, which would only add noise. vtcode's
    snapshots of an item still in progress add nothing: the completed item holds the whole text.
    """
    if event.type in VTCODE_ITEM_SNAPSHOTS:
        return ""
    return event.text if event.type in _TEXT_ONLY_TYPES else event_text(event)


@dataclass
class SessionIndex:
    """Chunks and postings of one session; ``covered`` is the log prefix they describe."""

    session_id: str
    generation: int
    covered: int = 0
    chunks: dict[str, array[Any]] = field(default_factory=lambda: {k: array(t) for k, t in _CHUNK_ARRAYS.items()})
    terms: dict[str, int] = field(default_factory=dict)
    starts: array[int] = field(default_factory=lambda: array("q", [0]))
    post_chunk: array[int] = field(default_factory=lambda: array("l"))
    post_tf: array[int] = field(default_factory=lambda: array("l"))
    delta: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)
    delta_chunks: int = 0
    total_length: int = 0
    newest_time: float = 0.0
    norm_cache: tuple[float, list[float]] | None = field(default=None, repr=False)
    recency_cache: tuple[float, list[float]] | None = field(default=None, repr=False)

    @property
    def chunk_count(self) -> int:
        return len(self.chunks["seq"])

    def postings(self, term: str) -> list[tuple[Any, Any]]:
        """(chunk numbers, term frequencies) pairs: the packed part and the in-memory tail."""
        found: list[tuple[Any, Any]] = []
        number = self.terms.get(term)
        if number is not None:
            lo, hi = self.starts[number], self.starts[number + 1]
            found.append((self.post_chunk[lo:hi], self.post_tf[lo:hi]))
        if term in self.delta:
            found.append(self.delta[term])
        return found

    def term_frequency(self, term: str, chunk: int) -> int:
        """How often ``term`` occurs in ``chunk`` (postings are sorted by chunk: a bisect)."""
        number = self.terms.get(term)
        if number is not None:
            lo, hi = self.starts[number], self.starts[number + 1]
            at = bisect_left(self.post_chunk, chunk, lo, hi)
            if at < hi and self.post_chunk[at] == chunk:
                return int(self.post_tf[at])
        tail = self.delta.get(term)
        if tail is not None:
            at = bisect_left(tail[0], chunk)
            if at < len(tail[0]) and tail[0][at] == chunk:
                return tail[1][at]
        return 0

    def document_frequency(self, term: str) -> int:
        return sum(len(chunks) for chunks, _ in self.postings(term))

    def add(self, logged: LoggedEvent) -> None:
        """Index one event (its text split into chunks of CHUNK_TOKENS tokens)."""
        event = logged.event
        self.covered = logged.offset + logged.size
        self._add_text(searchable_text(event), event.seq, event.turn or 0, event.timestamp, logged.offset)

    def add_grounded_fact(self, number: int, text: str) -> None:
        """Index fact ``number`` of vtcode's ``derived/memory.json`` (it has no time, no turn)."""
        self._add_text(text, 0, 0, 0.0, grounded_fact_offset(number))

    def _add_text(self, text: str, seq: int, turn: int, when: float, offset: int) -> None:
        tokens = tokenize(text)
        if not tokens:
            return
        self.newest_time = max(self.newest_time, when)
        for part, start in enumerate(range(0, len(tokens), CHUNK_TOKENS)):
            window = tokens[start : start + CHUNK_TOKENS]
            chunk = self.chunk_count
            for name, value in (
                ("seq", seq),
                ("part", part),
                ("turn", turn),
                ("time", when),
                ("length", len(window)),
                ("offset", offset),
            ):
                self.chunks[name].append(value)
            self.total_length += len(window)
            self.delta_chunks += 1
            for term, tf in Counter(window).items():
                chunks, tfs = self.delta.setdefault(term, ([], []))
                chunks.append(chunk)
                tfs.append(tf)

    # --- packing ---------------------------------------------------------------------------
    def pack(self) -> bytes:
        """Fold the in-memory tail into the packed arrays and serialise the whole index."""
        vocabulary = sorted(set(self.terms) | set(self.delta))
        starts, post_chunk, post_tf = array("q", [0]), array("l"), array("l")
        for term in vocabulary:
            for chunks, tfs in self.postings(term):
                post_chunk.extend(chunks)
                post_tf.extend(tfs)
            starts.append(len(post_chunk))
        self.terms = {term: number for number, term in enumerate(vocabulary)}
        self.starts, self.post_chunk, self.post_tf = starts, post_chunk, post_tf
        self.delta, self.delta_chunks = {}, 0
        arrays = {**self.chunks, "starts": starts, "post_chunk": post_chunk, "post_tf": post_tf}
        header = {
            "format": INDEX_FORMAT,
            "byteorder": sys.byteorder,
            "sessionId": self.session_id,
            "generation": self.generation,
            "covered": self.covered,
            "totalLength": self.total_length,
            "newestTime": self.newest_time,
            "vocabularyBytes": 0,
            "arrays": {name: [data.typecode, data.itemsize, len(data)] for name, data in arrays.items()},
        }
        vocab = "\n".join(vocabulary).encode("utf-8")
        header["vocabularyBytes"] = len(vocab)
        head = json.dumps(header).encode("utf-8")
        parts = [INDEX_MAGIC, len(head).to_bytes(8, "little"), head, vocab]
        parts += [data.tobytes() for data in arrays.values()]
        return b"".join(parts)

    @classmethod
    def unpack(cls, data: bytes) -> SessionIndex | None:
        """Read a packed index; None when the file is not one this build can trust."""
        try:
            if not data.startswith(INDEX_MAGIC):
                return None
            at = len(INDEX_MAGIC)
            head_length = int.from_bytes(data[at : at + 8], "little")
            header = json.loads(data[at + 8 : at + 8 + head_length])
            at += 8 + head_length
            if header["format"] != INDEX_FORMAT or header["byteorder"] != sys.byteorder:
                return None
            vocab_bytes = header["vocabularyBytes"]
            vocabulary = data[at : at + vocab_bytes].decode("utf-8").split("\n") if vocab_bytes else []
            at += vocab_bytes
            arrays: dict[str, array[Any]] = {}
            expected = {**_CHUNK_ARRAYS, **_POSTING_ARRAYS}
            for name, typecode in expected.items():
                code, itemsize, length = header["arrays"][name]
                values = array(typecode)
                if code != typecode or itemsize != values.itemsize:
                    return None
                end = at + itemsize * length
                if end > len(data):
                    return None
                values.frombytes(data[at:end])
                arrays[name] = values
                at = end
            if at != len(data) or len(arrays["starts"]) != len(vocabulary) + 1:
                return None
            if arrays["starts"][-1] != len(arrays["post_chunk"]) or len(arrays["post_tf"]) != len(arrays["post_chunk"]):
                return None
            if len({len(arrays[name]) for name in _CHUNK_ARRAYS}) != 1:
                return None
            return cls(
                session_id=str(header["sessionId"]),
                generation=int(header["generation"]),
                covered=int(header["covered"]),
                chunks={name: arrays[name] for name in _CHUNK_ARRAYS},
                terms={term: number for number, term in enumerate(vocabulary)},
                starts=arrays["starts"],
                post_chunk=arrays["post_chunk"],
                post_tf=arrays["post_tf"],
                total_length=int(header["totalLength"]),
                newest_time=float(header["newestTime"]),
            )
        except (KeyError, TypeError, ValueError, UnicodeDecodeError):
            return None


def grounded_fact_offset(number: int) -> int:
    """The ``offset`` of the chunks of grounded fact ``number``; its inverse is itself."""
    return -1 - number


_CACHE: OrderedDict[str, tuple[tuple[int, ...], SessionIndex]] = OrderedDict()


def _signature(paths: SessionPaths) -> tuple[int, ...] | None:
    """Stat stamps of the manifest (required), the log and derived/memory.json (either may be missing)."""
    stamps: list[int] = []
    for path in (paths.manifest, paths.events, paths.memory):
        try:
            info = os.stat(path)
        except FileNotFoundError:
            if path == paths.manifest:
                return None
            stamps += (-1, -1, -1)
            continue
        except OSError:
            return None
        stamps += (info.st_ino, info.st_mtime_ns, info.st_size)
    return tuple(stamps)


def clear_cache() -> None:
    _CACHE.clear()


def session_index(paths: SessionPaths, project: str, *, persist: bool = True) -> SessionIndex:
    """The search index of one session, from the LRU, from ``index/search.bin`` or rebuilt."""
    key = str(paths.dir)
    signature = _signature(paths)
    cached = _CACHE.get(key)
    if cached is not None and signature is not None and cached[0] == signature:
        _CACHE.move_to_end(key)
        return cached[1]
    log = EventLog.open(paths, project, writable=False)
    index = _load_index(paths, log)
    if index is None:
        index = SessionIndex(paths.session_id, log.meta.generation)
    for logged in log.iter_events(index.covered):
        index.add(logged)
    # Rewrite the packed file when it is missing or its in-memory tail has grown large; never
    # from a log that only a read-only rescan could make sense of (its generation is not on disk).
    if (
        persist
        and log.rescan_reason is None
        and not log.by_vtcode
        and index.delta_chunks > max(256, index.chunk_count // 4)
    ):
        data = index.pack()
        try:
            safefs.write_private(paths.search_index, data, durable=False)
        except MemositeError as exc:
            # Derived and disposable: the search still answers from memory, but say so.
            warn(f"cannot save the search index of session {paths.session_id}: {exc.message}")
    if log.by_vtcode:
        for number, text in enumerate(vtcode_grounded_facts(paths)):
            index.add_grounded_fact(number, text)
    if signature is not None and signature == _signature(paths):
        _CACHE[key] = (signature, index)
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return index


def _load_index(paths: SessionPaths, log: EventLog) -> SessionIndex | None:
    try:
        index = SessionIndex.unpack(safefs.read_private(paths.search_index))
    except (FileNotFoundError, MemositeError):
        return None
    if index is None or index.session_id != paths.session_id:
        return None
    if index.generation != log.meta.generation or index.covered > log.size:
        return None
    return index
