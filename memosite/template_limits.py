"""What one render of a vault's templates may allocate: the memory side of the sandbox.

A vault's templates arrive from the shared remote (see :mod:`memosite.template_env`). Jinja's
sandbox keeps them from reaching code, and the render budget from running forever, but a handful
of lines can still ask for more memory than any machine has: ``"x" * 10**10``, a string doubled
forty times with ``~``, ``"a".ljust(10**11)``, ``"%*s" % (10**10, "")``, ``[0] * 10**10``,
``10**10**10``, ``|center(10**10)``, ``|join`` of a list holding one large string a million times.

Every operation of the sandbox that can make a value larger than its inputs predicts the size of
its result from its arguments *before* building it, and refuses past :data:`MAX_TEXT` characters
of text, :data:`MAX_ITEMS` items or :data:`MAX_INT_BITS` bits of an integer. What every such
operation produces in one render is also counted against :data:`RENDER_TEXT`, so a loop that
builds many values just under the cap is refused too. A refusal is a :class:`RenderMemoryExceeded`
(a Jinja ``SecurityError``), which the sandbox reports like its other refusals.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import inspect
import itertools
import re
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from jinja2.environment import TemplateModule
from jinja2.exceptions import SecurityError
from jinja2.utils import Namespace, _PassArg, generate_lorem_ipsum
from markupsafe import Markup

# One value a template builds: 16 Mi characters of text, a million items in a list, an integer of
# about 20,000 digits (Python refuses to print one past 4,300 anyway).
MAX_TEXT = 16 * 1024 * 1024
MAX_ITEMS = 1_000_000
MAX_INT_BITS = 1 << 16
# Everything the checked operations of one render produce, together (a view, a row, a page): the
# largest view memosite writes of a 10,000-record vault is a few MB, counted a few times over.
RENDER_TEXT = 128 * 1024 * 1024
# What an item of a collection is counted as, in characters of RENDER_TEXT: a reference is 8 bytes
# and a character at most 4, and an item is often a new object too (an int of range() is 32 bytes
# more). Counted as one character, a thousand lists of 10**5 new ints each passed as 100 Mi
# "characters" while they held 4 GB.
ITEM_COST = 8


class RenderMemoryExceeded(SecurityError):
    """A vault's template asked for a value, or a render's worth of values, past the caps."""


class _Allowance:
    def __init__(self, chars: int) -> None:
        self.left = chars


_current: contextvars.ContextVar[_Allowance | None] = contextvars.ContextVar("memosite_render_allowance", default=None)
_refused_heavy: contextvars.ContextVar[bool] = contextvars.ContextVar("memosite_render_refused_heavy", default=False)


@contextlib.contextmanager
def render_allowance() -> Iterator[None]:
    """Within the block, the checked operations share one :data:`RENDER_TEXT` allowance (a render
    within a render shares its caller's)."""
    if _current.get() is not None:
        yield
        return
    if _refused_heavy.get():
        # The frames of a render refused after building much hold it all in a reference cycle
        # (its traceback) until a full collection: the next render would start with that memory.
        _refused_heavy.set(False)
        gc.collect()
    allowance = _Allowance(RENDER_TEXT)
    token = _current.set(allowance)
    try:
        yield
    except BaseException:
        if allowance.left < RENDER_TEXT - MAX_TEXT:
            _refused_heavy.set(True)
        raise
    finally:
        _current.reset(token)


def _refuse(what: str, size: int, cap: int, unit: str) -> RenderMemoryExceeded:
    return RenderMemoryExceeded(f"it would build {what} of {size:,} {unit} (more than {cap:,} in one value)")


def charge_text(size: int, what: str) -> None:
    """Refuse text of ``size`` characters past :data:`MAX_TEXT`, and count it against the render."""
    if size > MAX_TEXT:
        raise _refuse(what, size, MAX_TEXT, "characters")
    _spend(size)


def _spend(size: int) -> None:
    allowance = _current.get()
    if allowance is not None:
        allowance.left -= size
        if allowance.left < 0:
            raise RenderMemoryExceeded(
                f"it built more than {RENDER_TEXT:,} characters of text in one render (a loop that builds text?)"
            )


def checked_concat(parts: Iterable[str]) -> str:
    """The sandbox's ``concat``: a template's buffer (a macro, a ``set`` block: a list) is one value
    and held to :data:`MAX_TEXT`; the output of a whole render (a generator) only to what is left
    of :data:`RENDER_TEXT`, and a refusal is thrown into the template where it stands, so it names
    the line that printed past it."""
    if isinstance(parts, list):
        charge_text(sum(map(len, parts)), "the text of a block")
        return "".join(parts)
    allowance = _current.get()
    left = allowance.left if allowance is not None else RENDER_TEXT
    collected: list[str] = []
    for part in parts:
        left -= len(part)
        if left < 0:
            exc = RenderMemoryExceeded(
                f"it built more than {RENDER_TEXT:,} characters of text in one render (a loop that builds text?)"
            )
            throw = getattr(parts, "throw", None)
            if throw is not None:
                throw(exc)  # raises it again from the template's own frame
            raise exc
        collected.append(part)
    if allowance is not None:
        allowance.left = left
    return "".join(collected)


def charge_items(count: int, what: str) -> None:
    """Refuse a collection of ``count`` items past :data:`MAX_ITEMS`, and count each against the
    render as :data:`ITEM_COST` characters."""
    if count > MAX_ITEMS:
        raise _refuse(what, count, MAX_ITEMS, "items")
    _spend(count * ITEM_COST)


def check_int_bits(bits: int, what: str) -> None:
    if bits > MAX_INT_BITS:
        raise _refuse(what, bits, MAX_INT_BITS, "bits")


def text_size(value: Any, limit: int = MAX_TEXT) -> int:
    """An upper bound of ``len(str(value))``, computed without building it; once past ``limit``
    the walk stops and returns what it reached. Every element adds at least one, so a cycle ends."""
    total = 0
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack and total <= limit:
        item, nested = stack.pop()
        total += _own_size(item, nested, stack)
    return total


def _own_size(item: Any, nested: bool, stack: list[tuple[Any, bool]]) -> int:
    if isinstance(item, str):
        if not nested:
            return len(item)
        # repr: quotes, escaped quotes and backslashes, \x.. / \U........ for what is not printable
        extra = 8 if isinstance(item, Markup) else 2
        return (2 * len(item) if item.isprintable() else 10 * len(item)) + extra
    if isinstance(item, (bytes, bytearray)):
        return 4 * len(item) + 3
    if item is None or isinstance(item, bool):
        return 5
    if isinstance(item, int):
        return item.bit_length() // 3 + 2
    if isinstance(item, float):
        return 24
    if isinstance(item, Mapping):
        stack.extend((part, True) for pair in item.items() for part in pair)
        return 2 + 4 * len(item)
    if isinstance(item, (list, tuple, set, frozenset, KeysView, ValuesView, ItemsView)):
        stack.extend((part, True) for part in item)
        return 13 + 2 * len(item)
    if isinstance(item, Namespace):
        stack.append((getattr(item, "_Namespace__attrs", None), True))
        return 12
    if isinstance(item, TemplateModule):
        return sum(len(part) for part in item._body_stream) + 1
    # Anything else is memosite's data or a small Jinja object (a loop, a macro, a cycler): the
    # immutable sandbox gives a template no way to put a value it built into one.
    return 64


def check_text_of(value: Any, what: str) -> None:
    """Refuse before ``str(value)`` is built when it would pass :data:`MAX_TEXT`."""
    size = text_size(value)
    if size > MAX_TEXT:
        raise _refuse(what, size, MAX_TEXT, "characters")


def bounded_items(value: Any, what: str) -> list[Any]:
    """``list(value)``, refused past :data:`MAX_ITEMS` before more are taken (a generator is read
    only that far)."""
    if isinstance(value, (str, bytes)) or hasattr(value, "__len__"):
        try:
            count = len(value)
        except TypeError:
            count = 0
        if count > MAX_ITEMS:
            raise _refuse(what, count, MAX_ITEMS, "items")
    if isinstance(value, Mapping):
        value = list(value)
    items = list(itertools.islice(value, MAX_ITEMS + 1))
    charge_items(len(items), what)
    return items


def word_count(text: str) -> int:
    """At least how many words a split on whitespace yields (exact for a long text), counted
    without building them."""
    if len(text) <= MAX_ITEMS // 4:
        return len(text) // 2 + 1
    return sum(1 for _ in re.finditer(r"\S+", text))


def nesting(value: Any) -> tuple[int, int]:
    """How many items (lines, once indented) and how deep the containers of ``value`` go, walked
    no further than :data:`MAX_ITEMS` items."""
    items, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and items <= MAX_ITEMS:
        item, depth = stack.pop()
        items += 1
        deepest = max(deepest, depth)
        if isinstance(item, Mapping):
            stack.extend((part, depth + 1) for part in item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((part, depth + 1) for part in item)
    return items, deepest


def check_result(value: Any, what: str) -> Any:
    """Refuse (and count) what an operation returned: text past :data:`MAX_TEXT`, a list past
    :data:`MAX_ITEMS` (for operations whose result is at most a small factor of their inputs)."""
    if isinstance(value, (str, bytes)):
        size = len(value)
        if size > MAX_TEXT:
            raise _refuse(what, size, MAX_TEXT, "characters")
        allowance = _current.get()
        if allowance is not None:
            allowance.left -= size
            if allowance.left < 0:
                _spend(0)
    elif isinstance(value, (list, tuple)):
        charge_items(len(value), what)
    elif isinstance(value, (dict, set, frozenset, Namespace)):
        # A hash table's entry is a hash and two references in a table kept partly empty
        # (namespace(d) copies d into one of its own).
        entries = len(getattr(value, "_Namespace__attrs", None) or ()) if isinstance(value, Namespace) else len(value)
        charge_items(entries, what)
        _spend(entries * 3 * ITEM_COST)
    elif isinstance(value, int) and not isinstance(value, bool):
        check_int_bits(value.bit_length(), what)
    return value


# --- printf-style formatting: `%`, |format ----------------------------------------------------

_PRINTF = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?(?P<conv>.?)"
)


def printf_size(template: str, args: Any) -> int:
    """An upper bound of ``len(template % args)``; stops at the first field Python would refuse
    anyway (it raises its own error then)."""
    positional: Iterator[Any] = iter(args if isinstance(args, tuple) else (args,))
    total = len(template)
    for match in _PRINTF.finditer(template):
        if match["conv"] == "%":
            continue
        try:
            width = _star(match["width"], positional)
            precision = _star(match["precision"], positional)
            keyed = match["key"] is not None and isinstance(args, Mapping)
            value = args[match["key"]] if keyed else next(positional)
        except (StopIteration, KeyError, TypeError, ValueError):
            return total
        shown = text_size(value, MAX_TEXT) if match["conv"] in ("s", "", None) else text_size(value, MAX_TEXT) * 10
        if isinstance(value, float):
            shown = 330  # '%f' of 1e308
        total += max(width, shown + precision) + precision
        if total > MAX_TEXT:
            return total
    return total


def _star(spec: str | None, positional: Iterator[Any]) -> int:
    if spec is None:
        return 0
    if spec == "*":
        value = next(positional)
        if not isinstance(value, int):
            raise TypeError
        return abs(value)
    return int(spec)


# --- str.format: the width and precision of each field -----------------------------------------


def format_field_size(value: Any, spec: str) -> int:
    """An upper bound of ``len(format(value, spec))``."""
    numbers = [int(n) for n in re.findall(r"\d+", spec)]
    shown = 330 if isinstance(value, float) else text_size(value, MAX_TEXT)
    return shown + sum(numbers) + 8


# --- the str and list methods a template may call -----------------------------------------------


def predict_method(
    method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """Refuse a call of a growing ``str``/``bytes`` method whose result would pass the caps;
    return the arguments to call it with (an iterable read once is passed on as a list), or None
    when the call is not one of them."""
    owner: Any = getattr(method, "__self__", None)
    name = getattr(method, "__name__", "")
    if not isinstance(owner, (str, bytes)):
        return None
    what = f"the text of str.{name}()"
    size = len(owner)
    count_in: Callable[[Any], int] = owner.count
    try:
        bound = _METHOD_SIGNATURES[name].bind(*args, **kwargs) if name in _METHOD_SIGNATURES else None
    except TypeError:
        return None  # Python reports the wrong call itself
    if bound is None:
        return None
    params = bound.arguments
    if name in ("ljust", "rjust", "center", "zfill"):
        width = params.get("width")
        if isinstance(width, int):
            charge_text(max(size, width), what)
    elif name == "expandtabs":
        tabsize = params.get("tabsize", 8)
        if isinstance(tabsize, int):
            charge_text(size + count_in(b"\t" if isinstance(owner, bytes) else "\t") * max(tabsize, 0), what)
    elif name == "replace":
        old, new, count = params.get("old"), params.get("new"), params.get("count", -1)
        if isinstance(old, type(owner)) and isinstance(new, type(owner)) and isinstance(count, int):
            found = count_in(old) if old else size + 1
            if count >= 0:
                found = min(found, count)
            charge_text(size + found * max(len(new) - len(old), 0), what)
    elif name == "join":
        items = bounded_items(params.get("iterable", ()), what)
        charge_text(sum(text_size(item) for item in items) + max(len(items) - 1, 0) * size, what)
        return (items,), {}
    elif name in ("split", "rsplit"):
        sep, limit = params.get("sep"), params.get("maxsplit", -1)
        parts = (count_in(sep) + 1 if sep else word_count(str(owner))) if isinstance(owner, str) else size + 1
        if isinstance(limit, int) and limit >= 0:
            parts = min(parts, limit + 1)
        charge_items(parts, f"the list of str.{name}()")
    elif name == "splitlines":
        charge_items(size + 1 if size < MAX_ITEMS else _line_count(owner), "the list of str.splitlines()")
    elif name == "translate":
        table = params.get("table")
        widest = max((text_size(v) for v in table.values()), default=1) if isinstance(table, Mapping) else 4
        charge_text(size * max(widest, 1), what)
    return args, kwargs


def _line_count(text: Any) -> int:
    pattern: Any = rb"\r\n|[\n\r]" if isinstance(text, bytes) else r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]"
    return sum(1 for _ in re.finditer(pattern, text)) + 1


_REQUIRED = inspect.Parameter.empty


def _signature(*params: tuple[str, Any]) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(name, kind, default=default) for name, default in params])


_WIDTH = (("width", _REQUIRED), ("fillchar", " "))
_METHOD_SIGNATURES = {
    "ljust": _signature(*_WIDTH),
    "rjust": _signature(*_WIDTH),
    "center": _signature(*_WIDTH),
    "zfill": _signature(("width", _REQUIRED)),
    "expandtabs": _signature(("tabsize", 8)),
    "replace": _signature(("old", _REQUIRED), ("new", _REQUIRED), ("count", -1)),
    "join": _signature(("iterable", _REQUIRED)),
    "split": _signature(("sep", None), ("maxsplit", -1)),
    "rsplit": _signature(("sep", None), ("maxsplit", -1)),
    "splitlines": _signature(("keepends", False)),
    "translate": _signature(("table", _REQUIRED)),
}


# --- binary operators ----------------------------------------------------------------------------


def predict_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse ``left <operator> right`` when its result would pass the caps."""
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes)) and isinstance(times, int):
                charge_text(len(seq) * max(times, 0), "the text of a `*`")
                return
            if isinstance(seq, (list, tuple)) and isinstance(times, int):
                charge_items(len(seq) * max(times, 0), "the list of a `*`")
                return
        if _is_int(left) and _is_int(right):
            check_int_bits(left.bit_length() + right.bit_length(), "the integer of a `*`")
    elif operator == "+":
        if isinstance(left, (str, bytes)) and isinstance(right, (str, bytes)):
            charge_text(len(left) + len(right), "the text of a `+`")
        elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
            charge_items(len(left) + len(right), "the list of a `+`")
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            # Compared before multiplying: 10**10**10 would be a bomb of its own here.
            bits = left.bit_length()
            if right > MAX_INT_BITS or (right * bits) > MAX_INT_BITS:
                raise _refuse("the integer of a `**`", min(right, MAX_INT_BITS + 1) * bits, MAX_INT_BITS, "bits")
    elif operator == "%" and isinstance(left, str):
        charge_text(printf_size(left, right), "the text of a `%`")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked_join(items: Iterable[Any], join: Callable[[Iterable[Any]], str], what: str) -> str:
    """``join(items)`` for the ``~`` operator and the template's own buffers, refused past
    :data:`MAX_TEXT` before the text is built."""
    parts = items if isinstance(items, (list, tuple)) else list(items)
    charge_text(sum(text_size(part) for part in parts), what)
    return join(parts)


def guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (a filter) with its result predicted from its arguments where it can outgrow them,
    and its result checked after (a filter's result is at most a small factor of its input)."""
    signature = _filter_signature(func)
    predict = _FILTER_PREDICTORS.get(name)
    what = f"the result of |{name}"
    bind = signature is not None and (predict is not None or name in _ITEM_FILTERS)
    text = name in _TEXT_FILTERS
    # Where the value sits among the positional arguments (after Jinja's own first one, if any).
    position = 1 if signature is not None and next(iter(signature.parameters), "") in _JINJA_FIRST else 0

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if bind:
            args, kwargs = _predicted(name, signature, predict, what, args, kwargs)  # type: ignore[arg-type]
        elif text and len(args) > position and type(args[position]) is not str:
            # Text the template holds is within the caps already; a list or a namespace may
            # hold one large value many times over.
            check_text_of(args[position], what)
        return check_result(func(*args, **kwargs), what)

    return guarded


def _predicted(
    name: str,
    signature: inspect.Signature,
    predict: Callable[[dict[str, Any], str], None] | None,
    what: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs  # Python reports the wrong call itself
    subject = _subject(signature, bound)
    if subject is not None:
        if name in _ITEM_FILTERS:
            bound.arguments[subject] = bounded_items(bound.arguments[subject], f"the items of |{name}")
        elif name in _TEXT_FILTERS:
            check_text_of(bound.arguments[subject], what)
    if predict is not None:
        bound.apply_defaults()
        predict(bound.arguments, what)
    return bound.args, bound.kwargs


def _filter_signature(func: Callable[..., Any]) -> inspect.Signature | None:
    """How Jinja calls ``func``: its own parameters, after the context, evaluation context or
    environment Jinja passes first when the filter asks for one (an async-aware filter of Jinja's
    asks through its wrapper, and its signature does not show it)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if _PassArg.from_obj(func) is not None and (not params or params[0].name not in _JINJA_FIRST):
        params.insert(0, inspect.Parameter("jinja_first", inspect.Parameter.POSITIONAL_ONLY))
        signature = signature.replace(parameters=params)
    return signature


_JINJA_FIRST = ("eval_ctx", "context", "environment", "env", "jinja_first")


def _subject(signature: inspect.Signature, bound: inspect.BoundArguments) -> str | None:
    """The name of the value a filter is applied to (the first argument after Jinja's own)."""
    for param in signature.parameters.values():
        if param.name in _JINJA_FIRST:
            continue
        return param.name if param.name in bound.arguments else None
    return None


def _center(params: dict[str, Any], what: str) -> None:
    width = params.get("width")
    if isinstance(width, int):
        charge_text(max(text_size(params.get("value")), width), what)


def _indent(params: dict[str, Any], what: str) -> None:
    text, width = str(params.get("s", "")), params.get("width", 4)
    prefix = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
    charge_text(len(text) + (text.count("\n") + 1) * max(prefix, 0), what)


def _wordwrap(params: dict[str, Any], what: str) -> None:
    text, wrap = str(params.get("s", "")), params.get("wrapstring") or "\n"
    charge_items(word_count(text) * 2 + 1, "the words of |wordwrap")
    charge_text(len(text) * (1 + len(str(wrap))) + len(str(wrap)), what)


def _replace(params: dict[str, Any], what: str) -> None:
    text, old, new = str(params.get("s", "")), str(params.get("old")), str(params.get("new"))
    count = params.get("count")
    found = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    charge_text(len(text) + found * max(len(new) - len(old), 0), what)


def _format(params: dict[str, Any], what: str) -> None:
    args = params.get("kwargs") or params.get("args") or ()
    charge_text(printf_size(str(params.get("value", "")), args), what)


def _join(params: dict[str, Any], what: str) -> None:
    items = params.get("value")
    if isinstance(items, list):
        separator = text_size(params.get("d", ""))
        charge_text(sum(text_size(item) for item in items) + max(len(items) - 1, 0) * separator, what)


# A list object of its own costs about what this many items do (56 bytes and more): |batch and
# |slice make one per batch, which the items of their result do not count.
_LIST_COST = 8


def _batch(params: dict[str, Any], what: str) -> None:
    count, items = params.get("linecount"), params.get("value")
    if isinstance(count, int) and count > MAX_ITEMS:
        raise _refuse("batches", count, MAX_ITEMS, "items")
    if isinstance(count, int) and count > 0 and isinstance(items, list):
        filled = count if params.get("fill_with") is not None else 0  # the last batch padded to size
        charge_items(filled, "the batches of |batch")
        _spend(-(-len(items) // count) * _LIST_COST * ITEM_COST)


def _slice(params: dict[str, Any], what: str) -> None:
    count = params.get("slices")
    if isinstance(count, int) and count > MAX_ITEMS:
        raise _refuse("slices", count, MAX_ITEMS, "items")
    if isinstance(count, int) and count > 0:
        filled = count if params.get("fill_with") is not None else 0  # one pad per slice, at most
        charge_items(filled, "the slices of |slice")
        _spend(count * _LIST_COST * ITEM_COST)


def _sum(params: dict[str, Any], what: str) -> None:
    start, items = params.get("start"), params.get("iterable")
    if isinstance(items, list) and isinstance(start, (list, tuple)):
        charge_items(len(start) + sum(len(i) for i in items if isinstance(i, (list, tuple))), what)


def _indented(params: dict[str, Any], what: str) -> None:
    # Each line of the dump is indented by its depth: a deep list of many items is many spaces.
    indent = params.get("indent", 1 if what.endswith("pprint") else None)
    if isinstance(indent, int) and indent > 0:
        value = params.get("value")
        lines, depth = nesting(value)
        charge_text(text_size(value) + lines * depth * indent, what)


def _words(params: dict[str, Any], what: str) -> None:
    text = params.get("s", params.get("value", ""))
    if isinstance(text, str):
        per_word = 1 if what.endswith("wordcount") else 2  # a split keeps the spaces between words too
        charge_items(word_count(text) * per_word + 1, f"the words of {what[14:]}")


_FILTER_PREDICTORS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "center": _center,
    "indent": _indent,
    "wordwrap": _wordwrap,
    "replace": _replace,
    "format": _format,
    "join": _join,
    "batch": _batch,
    "slice": _slice,
    "sum": _sum,
    "wordcount": _words,
    "tojson": _indented,
    "pprint": _indented,
    "urlize": _words,
    "title": _words,
    "striptags": _words,
}
# Filters that read their value as a list first: it is read once, at most MAX_ITEMS far.
_ITEM_FILTERS = frozenset(
    {"join", "list", "sum", "sort", "unique", "groupby", "min", "max", "batch", "slice", "random"}
)
# Filters that turn their value into text (of its size, or a small factor of it).
_TEXT_FILTERS = frozenset(
    {
        "string",
        "tojson",
        "pprint",
        "urlencode",
        "xmlattr",
        "escape",
        "e",
        "forceescape",
        "upper",
        "lower",
        "title",
        "capitalize",
        "trim",
        "striptags",
        "urlize",
        "wordcount",
        "truncate",
        "safe",
        "center",
        "indent",
        "wordwrap",
        "replace",
        "format",
        "inline",
        "cell",
        "md",
        "mdcode",
        "digest",
        "day",
    }
)


def checked_lipsum(*args: Any, **kwargs: Any) -> str:
    """Jinja's ``lipsum()``, refused when the paragraphs asked for would pass :data:`MAX_TEXT`
    (``lipsum(10**9)`` is a CPU bomb too: its paragraphs are made in Python, not in the template)."""
    try:
        bound = _LIPSUM.bind(*args, **kwargs)
    except TypeError:
        bound = None
    if bound is not None:
        bound.apply_defaults()
        paragraphs, longest = bound.arguments["n"], bound.arguments["max"]
        if isinstance(paragraphs, int) and isinstance(longest, int):
            charge_text(max(paragraphs, 0) * max(longest, 1) * 16, "the text of lipsum()")
    return generate_lorem_ipsum(*args, **kwargs)


_LIPSUM = inspect.signature(generate_lorem_ipsum)
