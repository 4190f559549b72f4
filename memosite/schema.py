"""The record: frontmatter model, validation, and a parse/serialize pair that keeps the file faithful.

A record file is ``---`` + YAML frontmatter + ``---`` + body. The body is kept byte for byte.
Frontmatter keys memosite does not know are kept. A rewrite re-emits the original text of every
top-level key whose value it did not change, so YAML 1.1 look-alikes (``10:00``, ``yes``, ``1.10``,
bare dates) and the author's quoting and comments survive.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import yaml

from memosite.codelayers import LAYERS, is_security_label, normalize_layer
from memosite.errors import InvalidArguments, InvalidRecord
from memosite.kinds import KIND_FACTS, KINDS, directory_for_kind
from memosite.statuses import STATUSES
from memosite.text import slugify as text_slugify
from memosite.text import suggest_ascii

SOURCES = ("agent", "human", "imported")
SEVERITIES = ("low", "medium", "high", "critical")
LINK_TYPES = ("fixes", "contradicts", "causes")
DELIVERABLE_TYPES = ("pr", "commit", "spec")

KIND_DIRS: dict[str, str] = {kind: facts.directory for kind, facts in KIND_FACTS.items()}
SEVERITY_WEIGHT = {"critical": 4, "high": 3, "medium": 2, "low": 1}

_ENUM_FIELDS: dict[str, tuple[str, ...]] = {
    "kind": KINDS,
    "status": STATUSES,
    "source": SOURCES,
    "severity": SEVERITIES,
    "layer": LAYERS,
}
DATE_FIELDS = (
    "created",
    "updated",
    "expires_at",
    "lastSeen",
    "lastHit",
    "lastFeedback",
    "startTime",
    "endTime",
)
_MIN_INT_FIELDS = {"occurrences": 1, "hits": 0, "helpfulCount": 0, "staleCount": 0, "turn": 1}
REQUIRED_FIELDS = ("id", "kind", "project", "created", "updated")

_SLUG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_DATE_ONLY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def normalize_kind(kind: Any) -> str:
    """A kind name, trimmed and lowercased; INVALID_ARGUMENTS naming the allowed kinds otherwise."""
    if isinstance(kind, str) and kind.strip().lower() in KINDS:
        return kind.strip().lower()
    raise InvalidArguments(
        f"invalid kind {kind!r}: expected one of {', '.join(KINDS)}",
        details={"field": "kind", "allowed": list(KINDS)},
    )


def is_flagged_stale(helpful: int, stale: int) -> bool:
    """Feedback salience: a record whose stale votes outweigh its helpful ones is flagged stale
    (shown as such and ranked lower). :func:`flagged_stale_sql` spells the same rule in SQL."""
    return stale > helpful


def flagged_stale_sql(table: str = "") -> str:
    """:func:`is_flagged_stale` over the index's ``helpful``/``stale`` columns (of ``table``)."""
    prefix = f"{table}." if table else ""
    return f"({prefix}stale > {prefix}helpful)"


def subdir_for_kind(kind: str) -> str:
    return directory_for_kind(kind)


def validate_slug(slug: str, what: str = "slug") -> str:
    """A slug names one file inside its kind directory and can never leave it."""
    if isinstance(slug, str) and len(slug) > 200:
        raise InvalidArguments(f"invalid {what}: {len(slug)} characters long, at most 200")
    if not isinstance(slug, str) or "\x00" in slug or not _SLUG_RE.match(slug) or ".." in slug or slug.endswith(".md"):
        raise InvalidArguments(
            f"invalid {what} {slug!r}: use ASCII letters, digits, '.', '_' or '-', starting with a letter"
            f" or digit (no path separators, '..' or NUL){suggest_ascii(slug)}"
        )
    return slug


def slugify(text: str, max_length: int = 80) -> str:
    """An ASCII slug for a title in any script (see :func:`memosite.text.slugify`)."""
    return text_slugify(text, max_length)


# --- dates -----------------------------------------------------------------------------------


def format_iso(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``: ``2026-11-30T00:36:39.123Z``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def utc_now() -> datetime:
    return datetime.now(UTC)


def parse_datetime(value: Any, *, end_of_day: bool = False) -> datetime:
    """Parse a frontmatter date (string, date or datetime) into an aware UTC datetime.

    A date without a time is midnight UTC, or the last millisecond of that UTC day when
    ``end_of_day`` is set (the rule for ``expires_at``). Naive times are taken as UTC.
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time(23, 59, 59, 999000) if end_of_day else time())
    elif isinstance(value, str):
        text = value.strip()
        if _DATE_ONLY_RE.match(text):
            return parse_datetime(date.fromisoformat(text), end_of_day=end_of_day)
        if text[-1:] in ("z", "Z"):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text.replace(" ", "T", 1) if "T" not in text else text)
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 date: {value!r}") from exc
    else:
        raise ValueError(f"not a date: {value!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def normalize_date(value: Any, *, end_of_day: bool = False) -> str:
    return format_iso(parse_datetime(value, end_of_day=end_of_day))


# --- validation ------------------------------------------------------------------------------


MAX_INTEGER = 2**63 - 1  # what the index (SQLite) and every JSON reader can hold


def shown(value: Any, limit: int = 60) -> str:
    """A value as messages quote it: its repr, cut short (never thousands of digits)."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long to turn into text at all
        return "<a number too long to show>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _normalize_enum(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if isinstance(value, str):
        candidate = value.strip().lower()
        if candidate in allowed:
            return candidate
    raise InvalidArguments(
        f"invalid {name} {shown(value)}: expected one of {', '.join(allowed)}",
        details={"field": name, "allowed": list(allowed)},
    )


def _coerce_int(name: str, value: Any, minimum: int) -> int:
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+(\.0*)?\s*", value):
        digits = value.strip().split(".")[0]
        number = int(digits) if len(digits.lstrip("+-")) <= 19 else MAX_INTEGER + 1
    if number is None or number < minimum or number > MAX_INTEGER:
        raise InvalidArguments(
            f"invalid {name} {shown(value)}: expected an integer from {minimum} to {MAX_INTEGER}",
            details={"field": name, "minimum": minimum},
        )
    return number


def _validate_entries(name: str, value: Any, type_values: tuple[str, ...], require_target: bool) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidArguments(f"invalid {name}: expected a list", details={"field": name})
    entries = []
    for position, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            raise InvalidArguments(f"invalid {name}[{position}]: expected a mapping")
        entry = dict(entry)
        if require_target:
            target = entry.get("target")
            if not isinstance(target, str) or not target.strip():
                raise InvalidArguments(
                    f"invalid {name}[{position}].target: must be a non-empty string",
                    details={"field": f"{name}.target"},
                )
        entry["type"] = _normalize_enum(f"{name}[{position}].type", entry.get("type"), type_values)
        entries.append(entry)
    return entries


MAX_FRONTMATTER_NODES = 10_000


def _check_structure(data: Mapping[str, Any]) -> None:
    """Frontmatter must be plain data: no self-referencing YAML aliases, no alias "bombs" that
    expand into millions of nodes, no NaN or infinity (JSON, the index and --json can't hold them)."""
    visited = 0
    stack: list[tuple[str, Any, frozenset[int]]] = [(str(k), v, frozenset()) for k, v in data.items()]
    while stack:
        where, node, ancestors = stack.pop()
        visited += 1
        if visited > MAX_FRONTMATTER_NODES:
            raise InvalidArguments(f"frontmatter is too large (over {MAX_FRONTMATTER_NODES} values, or an alias bomb)")
        if isinstance(node, float) and not math.isfinite(node):
            raise InvalidArguments(f"invalid {where}: {node} is not a finite number", details={"field": where})
        if isinstance(node, (dict, list)):
            if id(node) in ancestors:
                raise InvalidArguments(f"invalid {where}: a YAML alias refers to itself", details={"field": where})
            inner = ancestors | {id(node)}
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((f"{where}.{key}", value, inner) for key, value in items)


def validate_frontmatter(data: Mapping[str, Any], *, require: bool = True) -> dict[str, Any]:
    """Check and normalise frontmatter; returns a new dict. Unknown keys pass through untouched.

    Raises :class:`InvalidArguments` naming the field (and the allowed values for enums).
    """
    _check_structure(data)
    result: dict[str, Any] = dict(data)
    result.setdefault("status", "active")
    result.setdefault("source", "agent")
    for name in ("id", "project"):
        if name in result and (not isinstance(result[name], str) or not result[name].strip()):
            raise InvalidArguments(f"invalid {name}: must be a non-empty string", details={"field": name})
    layer = result.get("layer")
    security_layer = False
    if isinstance(layer, str) and layer.strip().lower() not in LAYERS:
        # Another name for a layer (frontend, infra, qa, Frontend…) means that layer; "security"
        # (in any language) is a topic, not a layer: promoted into tags, as the seed says.
        named = normalize_layer(layer)
        security_layer = named is None and is_security_label(layer)
        if security_layer:
            del result["layer"]
        else:
            result["layer"] = named or layer
    for name, allowed in _ENUM_FIELDS.items():
        if name in result and result[name] is not None:
            result[name] = _normalize_enum(name, result[name], allowed)
    for name in DATE_FIELDS:
        if name in result and result[name] is not None:
            try:
                result[name] = normalize_date(result[name], end_of_day=name == "expires_at")
            except ValueError as exc:
                raise InvalidArguments(
                    f"invalid {name} {result[name]!r}: expected an ISO 8601 date",
                    details={"field": name},
                ) from exc
    for name, minimum in _MIN_INT_FIELDS.items():
        if name in result and result[name] is not None:
            result[name] = _coerce_int(name, result[name], minimum)
    if result.get("links") is not None:
        result["links"] = _validate_entries("links", result["links"], LINK_TYPES, True)
    if result.get("deliverables") is not None:
        result["deliverables"] = _validate_entries("deliverables", result["deliverables"], DELIVERABLE_TYPES, False)
    for name in ("tags", "pathPatterns", "linkedPaths"):
        if name in result and result[name] is not None:
            result[name] = _string_list(name, result[name])
    if security_layer and "security" not in (result.get("tags") or []):
        result["tags"] = [*(result.get("tags") or []), "security"]
    if require:
        missing = [name for name in REQUIRED_FIELDS if result.get(name) in (None, "")]
        if missing:
            raise InvalidArguments(
                f"missing required field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}",
                details={"fields": missing},
            )
    return result


def _string_list(name: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
        return [str(item) for item in value]
    raise InvalidArguments(f"invalid {name}: expected a list of strings", details={"field": name})


# --- YAML ------------------------------------------------------------------------------------


def _core_schema_resolvers(
    resolvers: Mapping[str, list[tuple[str, re.Pattern[str]]]], *, keep_yaml11: bool = False
) -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """YAML 1.2-style implicit typing: ``yes``/``on``, ``10:00`` and timestamps stay strings.

    With ``keep_yaml11`` the 1.1 rules stay too: the dumper then quotes every string that either
    a 1.1 reader or our own loader would read as something else.
    """
    dropped = (
        set()
        if keep_yaml11
        else {
            "tag:yaml.org,2002:bool",
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
            "tag:yaml.org,2002:timestamp",
        }
    )
    table = {first: [(t, rx) for t, rx in entries if t not in dropped] for first, entries in resolvers.items()}
    extra = [
        ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
        ("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), "-+0123456789"),
        (
            "tag:yaml.org,2002:float",
            re.compile(
                r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
            ),
            "-+0123456789.",
        ),
    ]
    for tag, regexp, first_chars in extra:
        for char in first_chars:
            table.setdefault(char, []).append((tag, regexp))
    return table


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    pass


_Loader.yaml_implicit_resolvers = _core_schema_resolvers(yaml.SafeLoader.yaml_implicit_resolvers)


def _int_from_core(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        return int(text, 0)
    return int(text)


_Loader.add_constructor("tag:yaml.org,2002:int", _int_from_core)


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    pass


class _PythonDumper(yaml.SafeDumper):
    """The pure-Python emitter, for text libyaml would escape: it writes characters beyond the
    Basic Multilingual Plane (emoji, some CJK) as ``\\U0001F680`` even with ``allow_unicode``."""


_Dumper.yaml_implicit_resolvers = _core_schema_resolvers(yaml.SafeDumper.yaml_implicit_resolvers, keep_yaml11=True)
_PythonDumper.yaml_implicit_resolvers = _Dumper.yaml_implicit_resolvers
_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # The Python emitter writes NEL and the Unicode line and paragraph separators as line breaks in
    # a single-quoted scalar, which a reader folds into a space: double quotes escape them.
    style = '"' if any(br in value for br in _UNICODE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_PythonDumper.add_representer(str, _represent_str)


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


def dump_yaml(data: Mapping[str, Any]) -> str:
    """Dump so that any string a YAML 1.1 reader or our loader would mistype gets quoted, and
    every character stays as it was written (an emoji in a title stays an emoji in the file)."""
    options: dict[str, Any] = {"sort_keys": False, "allow_unicode": True, "default_flow_style": False, "width": 4096}
    text: str = yaml.dump(dict(data), Dumper=_Dumper, **options)
    if "\\U" in text:  # libyaml escaped something (rarely: text beyond the BMP, or a literal \U)
        text = yaml.dump(dict(data), Dumper=_PythonDumper, **options)
    return text


# --- parse / serialize -----------------------------------------------------------------------

_FENCE_RE = re.compile(r"^---[ \t]*\r?\n")
_CLOSE_RE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|$)", re.MULTILINE)
_TOP_KEY_RE = re.compile(
    r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#'"{\[?&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?))[ \t]*:(?:[ \t]|\r?$)"""
)


@dataclass
class _SourceText:
    """The original frontmatter split into one text chunk per top-level key."""

    chunks: dict[str, str]
    values: dict[str, Any]
    newline: str = "\n"  # the file's line ending: a rewrite keeps it (a CRLF file stays CRLF)


@dataclass
class Record:
    """One memory record: validated frontmatter plus the body exactly as written."""

    frontmatter: dict[str, Any]
    body: str
    path: Path | None = None
    source: _SourceText | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return str(self.frontmatter["id"])

    @property
    def kind(self) -> str:
        return str(self.frontmatter["kind"])

    @property
    def status(self) -> str:
        return str(self.frontmatter.get("status", "active"))


def _split_chunks(text: str, values: Mapping[str, Any]) -> dict[str, str] | None:
    """Map each top-level key to its original lines, or None when the layout is not plain."""
    chunks: dict[str, str] = {}
    pending = ""
    current: str | None = None
    for line in text.splitlines(keepends=True):
        match = _TOP_KEY_RE.match(line)
        if match and not line[:1].isspace():
            quoted_double, quoted_single, plain = match.groups()
            if quoted_double is not None:
                key = load_yaml(f'"{quoted_double}"')
            elif quoted_single is not None:
                key = quoted_single.replace("''", "'")
            else:
                key = plain.strip()
            if key in chunks:
                return None
            current = str(key)
            chunks[current] = pending + line
            pending = ""
        elif current is None or ((not line.strip() or line.startswith("#")) and not line[:1].isspace()):
            # Blank lines and column-0 comments belong to the key that follows them.
            pending += line
        else:
            chunks[current] += line
    if pending and current is not None:
        chunks[current] += pending
    elif pending:
        return None
    if list(chunks) != [str(key) for key in values]:
        return None
    return chunks


def parse_record(
    text: str,
    path: Path | None = None,
    *,
    validate: bool = True,
    defaults: Mapping[str, Any] | None = None,
    where: str | None = None,
) -> Record:
    """Parse a record file. Raises :class:`InvalidRecord` when it is not a valid record.

    ``defaults`` fill required fields the file leaves out (what its path tells: see
    :func:`memosite.recordfile.read_record`); they are not part of the file's own text, so a rewrite
    emits them as new keys. ``where`` names the file in messages (default: ``path``).
    """
    where = f" in {where}" if where else f" in {path}" if path else ""
    text = text.removeprefix("\ufeff")  # a byte order mark some editors save
    fence = _FENCE_RE.match(text)
    if not fence:
        raise InvalidRecord(f"no YAML frontmatter{where}")
    close = _CLOSE_RE.search(text, fence.end())
    if close is None:
        raise InvalidRecord(f"unterminated frontmatter{where}")
    fm_text = text[fence.end() : close.start()]
    body = text[close.end() :]
    try:
        data = load_yaml(fm_text) if fm_text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 2})" if mark is not None else ""
        raise InvalidRecord(f"frontmatter is not valid YAML{where}{line}") from exc
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        # An integer of more than 4,300 digits, a nesting too deep to build: not a record.
        raise InvalidRecord(f"frontmatter holds a value memosite cannot read{where}: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidRecord(f"frontmatter must be a mapping{where}")
    data = {str(key): value for key, value in data.items()}
    try:
        given = dict(data)
        for key, value in (defaults or {}).items():
            if given.get(key) in (None, ""):
                given[key] = value
        filled = given != data
        frontmatter = validate_frontmatter(given) if validate else data
    except InvalidArguments as exc:
        raise InvalidRecord(f"{exc.message}{where}", details=exc.details) from exc
    chunks = _split_chunks(fm_text if fm_text.endswith("\n") or not fm_text else fm_text + "\n", data)
    source = None
    if chunks is not None:
        # A copy: a caller changing the record's values must not change what "unchanged" means.
        # What the file's own text says, normalised (a second validation only when defaults were
        # filled in: otherwise it is the frontmatter itself).
        if validate and filled:
            normalized = validate_frontmatter(data, require=False)
        else:
            normalized = copy.deepcopy(frontmatter if validate else data)
        source = _SourceText(
            chunks=chunks, values=normalized, newline="\r\n" if fence.group(0).endswith("\r\n") else "\n"
        )
    return Record(frontmatter=frontmatter, body=body, path=path, source=source)


def same_value(left: Any, right: Any) -> bool:
    """Equality that also requires equal types (so ``1``, ``True`` and ``1.0`` differ)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_value(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(same_value(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


def _plain(value: Any) -> Any:
    """Values safe for the YAML dumper (datetimes become ISO strings)."""
    if isinstance(value, datetime):
        return format_iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def serialize_frontmatter(frontmatter: Mapping[str, Any], source: _SourceText | None = None) -> str:
    """The frontmatter's YAML: a key whose value is unchanged keeps its original text, the others
    are dumped, each run of consecutive dumped keys in one call (a top-level block mapping dumps
    key by key, so the text is the same, and a new record costs one dump, not one per key)."""
    parts: list[str] = []
    run: dict[str, Any] = {}

    def flush() -> None:
        if run:
            dumped = dump_yaml(run)
            parts.append(dumped.replace("\n", source.newline) if source is not None else dumped)
            run.clear()

    for key, value in frontmatter.items():
        unchanged = source is not None and key in source.chunks and same_value(value, source.values.get(key))
        if value is None and not unchanged:
            continue  # absent optional fields are not emitted
        if unchanged and source is not None:
            flush()
            parts.append(source.chunks[key])
        else:
            run[key] = _plain(value)
    flush()
    return "".join(parts)


def serialize_record(record: Record) -> str:
    newline = record.source.newline if record.source is not None else "\n"
    return f"---{newline}{serialize_frontmatter(record.frontmatter, record.source)}---{newline}{record.body}"
