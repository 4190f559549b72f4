"""The Jinja templates of the views and the site: memosite's own, overridden by a vault's.

A vault may carry ``templates/`` with files of the same names as memosite's (``rows.md.j2``,
``views/TRAPS.md.j2``, ``site/record.md.j2``, …); the vault's file wins, and ``default:<name>``
always names memosite's own, so an override can extend it. Anything rendered from templates and
kept (the view fragments in the index) is keyed by :func:`templates_checksum` of the effective set,
and each vault builds its environment for that checksum: an override that appears, changes or goes
is picked up by the next command, and by a long-running ``serve``, ``watch`` or ``mcp`` on its next
rebuild.

A vault's templates are data, not code: they arrive with everything else from the shared git
remote. While any override takes part, every template is rendered in Jinja's immutable sandbox
(no attribute that starts with ``_``, no module, class or function internals, no changing the
values it is given, no more than :data:`RENDER_STEPS` lines of template code run in one render, no
value built past the caps of :mod:`memosite.template_limits`),
read without following a symlink, and never compiled to or loaded from a bytecode cache. What the
sandbox refuses is a :class:`~memosite.errors.SafetyViolation` naming the template and line.
memosite's own templates alone render unsandboxed, with their compiled code kept in this user's
cache directory (outside every vault), under a key of the vault, memosite's version and its
templates' checksum.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import stat
import string
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import jinja2
import jinja2.bccache
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, Macro, markup_join
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from markupsafe import Markup

from memosite import version
from memosite.errors import SafetyViolation, StorageError
from memosite.mdtext import code_span, markdown_text
from memosite.resources import data_path
from memosite.template_files import (
    DEFAULT_PREFIX,
    TEMPLATE_SUFFIX,
    builtin_checksum,
    override_names,
    templates_checksum,
)
from memosite.template_limits import (
    charge_text,
    check_result,
    check_text_of,
    checked_concat,
    checked_lipsum,
    format_field_size,
    guard_filter,
    predict_binop,
    predict_method,
    render_allowance,
    text_size,
)
from memosite.userdirs import private_dir, user_cache_dir
from memosite.vault import atomic_write_bytes, warn

if TYPE_CHECKING:
    from memosite.vault import Vault

# A template larger than this is no template a team writes by hand.
MAX_TEMPLATE_BYTES = 1 << 20
BYTECODE_DIR = "jinja"


def _inline(value: Any) -> str:
    return " ".join(str(value or "").split())


def _cell(value: Any) -> str:
    return _inline(value).replace("|", "\\|")


def _day(value: Any) -> str:
    return str(value)[:10] if value else ""


class _VaultTemplates(jinja2.BaseLoader):
    """A vault's ``templates/``: only ``*.j2`` files, read without following a symlink anywhere
    on the way, only regular files (a FIFO would hang the reader), at most MAX_TEMPLATE_BYTES."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        pieces = jinja2.loaders.split_template_path(template)
        if not pieces or not template.endswith(TEMPLATE_SUFFIX):
            raise jinja2.TemplateNotFound(template)
        path = self.root
        for piece in pieces[:-1]:
            path = path / piece
            if not os.path.isdir(path) or os.path.islink(path):
                raise jinja2.TemplateNotFound(template)
        path = path / pieces[-1]
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            raise jinja2.TemplateNotFound(template) from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TEMPLATE_BYTES:
                raise jinja2.TemplateNotFound(template)
            data = handle.read(MAX_TEMPLATE_BYTES + 1)
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SafetyViolation(f"refusing to render templates/{template}: it is not UTF-8 text") from None
        stamp = info.st_mtime_ns, info.st_size

        def uptodate() -> bool:
            try:
                now = os.stat(path, follow_symlinks=False)
            except OSError:
                return False
            return (now.st_mtime_ns, now.st_size) == stamp

        return source, str(path), uptodate


# How many lines of template code one render of a vault's templates may run (memosite's own run a
# few hundred per record page or view row): a loop that never ends, or one nested to 10^10 turns,
# is refused instead of holding every command of every teammate that synced it.
RENDER_STEPS = 5_000_000


class RenderBudgetExceeded(SecurityError):
    """A vault's template ran more than :data:`RENDER_STEPS` lines in one render."""


class _RenderBudget:
    """Counts the lines template code runs in this thread while it is installed (``sys.settrace``:
    only frames of compiled templates are traced line by line), and stops the render past the
    budget. Not installed under a debugger or a coverage tool, whose tracer it would replace."""

    def __init__(self, steps: int) -> None:
        self.left = steps

    def trace(self, frame: types.FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "call" and frame.f_code.co_filename.endswith(TEMPLATE_SUFFIX):
            return self.step
        return None

    def step(self, frame: types.FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            self.left -= 1
            if self.left < 0:
                # Raised in the template's frame: the render reports it as a sandbox refusal.
                raise RenderBudgetExceeded(
                    f"it ran more than {RENDER_STEPS:,} lines of template code in one render"
                    " (a loop that does not end?)"
                )
        return self.step


@contextlib.contextmanager
def render_budget(env: jinja2.Environment) -> Iterator[None]:
    """Within the block, template code of a :class:`VaultSandbox` runs at most
    :data:`RENDER_STEPS` lines and allocates within :mod:`memosite.template_limits`; once a
    render ran out of lines, every later one of that environment is refused at once (the same
    template would run out again, for every record)."""
    if not isinstance(env, VaultSandbox):
        yield
        return
    if env.exhausted is not None:
        raise env.exhausted
    with render_allowance():
        if sys.gettrace() is not None:  # a debugger, a coverage tool, or a render of this one already
            yield
            return
        budget = _RenderBudget(RENDER_STEPS)
        sys.settrace(budget.trace)
        try:
            yield
        except SafetyViolation as refused:
            if budget.left < 0:
                env.exhausted = refused
            raise
        finally:
            sys.settrace(None)


class _BudgetedTemplate(jinja2.Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        with render_budget(self.environment):
            return super().render(*args, **kwargs)

    @classmethod
    def _from_namespace(cls, environment: jinja2.Environment, namespace: Any, globals: Any) -> jinja2.Template:
        # `~` compiles to a call of str_join (markup_join): the module's own name for it is
        # replaced, so the sandbox's joins are checked and memosite's own templates keep Jinja's.
        if isinstance(environment, VaultSandbox):
            namespace["str_join"] = _str_join
            namespace["markup_join"] = _markup_join
        return super()._from_namespace(environment, namespace, globals)


# Values whose text is no larger than what they hold (an int prints at most 4,300 digits).
_PLAIN = frozenset({str, Markup, int, float, bool, type(None)})


def _str_join(parts: Any) -> str:
    parts = list(parts)
    if _PLAIN.issuperset(map(type, parts)):
        texts = list(map(str, parts))
        charge_text(sum(map(len, texts)), "the text of a `~`")
        return "".join(texts)
    charge_text(sum(map(text_size, parts)), "the text of a `~`")
    return "".join(map(str, parts))


def _markup_join(parts: Any) -> str:
    parts = list(parts)
    charge_text(sum(map(text_size, parts)), "the text of a `~`")
    return markup_join(parts)


def _printed(value: Any) -> Any:
    """The sandbox's ``finalize``: what a template prints is refused before it becomes text past
    the cap (``{{ [s] * 1000 }}`` holds a thousand references, its text a thousand copies)."""
    if type(value) is not str:
        check_text_of(value, "the text of a printed value")
    return value


def _check_conversion(value: Any, conversion: str | None) -> None:
    # `{0!r}`/`{0!s}`/`{0!a}` turn the value into text before format_field sees it: `!r` quotes
    # and escapes each text it holds, `!a` writes up to ten characters for one.
    if conversion in ("r", "s", "a"):
        size = text_size((value,)) if conversion == "r" else text_size(value)
        charge_text(size * (10 if conversion == "a" else 1), "the text of str.format()")


class _SizedFields(string.Formatter):
    """A str.format() whose fields are sized before they are built (mixed into Jinja's sandboxed
    formatters, which it comes before)."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        _check_conversion(value, conversion)
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        charge_text(format_field_size(value, format_spec), "the text of str.format()")
        return super().format_field(value, format_spec)


class _CheckedFormatter(_SizedFields, SandboxedFormatter):
    pass


class _CheckedEscapeFormatter(_SizedFields, SandboxedEscapeFormatter):
    pass


class _SandboxCodeGenerator(CodeGenerator):
    """Jinja's code generator, with a slice (``s[1:]``) going through ``environment.getitem`` as
    any other subscript does (Jinja writes a slice as Python's own, where no check sees it)."""

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if not isinstance(node.arg, nodes.Slice):
            super().visit_Getitem(node, frame)
            return
        self.write("environment.getitem(")
        self.visit(node.node, frame)
        self.write(", slice(")
        for position, part in enumerate((node.arg.start, node.arg.stop, node.arg.step)):
            self.write(", " if position else "")
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
        self.write("))")


class VaultSandbox(ImmutableSandboxedEnvironment):
    """The environment of a vault whose own templates take part (see the module docstring)."""

    override_dir: Path | None = None
    exhausted: SafetyViolation | None = None
    rows_failed = False  # said once: the vault's rows.md.j2 cannot render a row
    template_class = _BudgetedTemplate
    # The operators that can make a value larger than their operands (see template_limits).
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _SandboxCodeGenerator
    concat = staticmethod(checked_concat)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, finalize=_printed, **kwargs)
        self.globals["lipsum"] = checked_lipsum

    def guard_filters(self) -> None:
        """Hold every filter to the memory caps (called once its filters are all in)."""
        for name, func in list(self.filters.items()):
            self.filters[name] = guard_filter(name, func)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if not (type(left) is int and type(right) is int and operator == "+"):  # a loop's counter
            predict_binop(operator, left, right)
        return self.binop_table[operator](left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        # Jinja passes the loop's and block's variables along as keywords of its own (a call of
        # something that asks for the context gets them); the method's own arguments are the rest.
        what = f"the result of {getattr(__obj, '__qualname__', None) or getattr(__obj, '__name__', 'a call')}()"
        if not isinstance(getattr(__obj, "__self__", None), (str, bytes)):
            result = super().call(__context, __obj, *args, **kwargs)
            # A macro's text was counted as its buffer; any other call's result (s.copy(),
            # dict.fromkeys(...), a builtin's new list) is a new value a loop could keep many of.
            return result if isinstance(__obj, Macro) else check_result(result, what)
        own = {name: value for name, value in kwargs.items() if name not in ("_loop_vars", "_block_vars")}
        checked = predict_method(__obj, args, own)
        if checked is not None:
            args, own = checked
            kwargs = {**own, **{k: v for k, v in kwargs.items() if k not in own}}
        # Every str method's result is counted, not only the growing ones': s.upper() or s.encode()
        # of a large text kept in a list a thousand times is a thousand copies.
        return check_result(super().call(__context, __obj, *args, **kwargs), what)

    def getitem(self, obj: Any, argument: Any) -> Any:
        # A slice is a copy (s[1:] of a large text, a list's [::-1]): counted like any value built.
        result = super().getitem(obj, argument)
        return check_result(result, "the result of a slice") if isinstance(argument, slice) else result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if super().wrap_str_format(value) is None:
            return None
        owner: str = value.__self__
        formatter: SandboxedFormatter
        if isinstance(owner, Markup):
            formatter = _CheckedEscapeFormatter(self, escape=owner.escape)
        else:
            formatter = _CheckedFormatter(self)
        by_name = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            if not by_name:
                return type(owner)(formatter.vformat(owner, args, kwargs))
            if kwargs or len(args) != 1:
                raise TypeError("format_map() takes exactly one argument")
            return type(owner)(formatter.vformat(owner, (), args[0]))

        return checked

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # Nothing a template is given holds a module or a class on purpose; one that did would be
        # a way out of the sandbox (os.popen, type.__subclasses__), so neither is handed over.
        if isinstance(value, (types.ModuleType, type)):
            return False
        if isinstance(value, types.MethodType) and isinstance(value.__self__, type):
            return False  # a classmethod builds objects of its class: no template needs one
        return bool(super().is_safe_attribute(obj, attr, value))

    def unsafe_undefined(self, obj: Any, attribute: str) -> NoReturn:
        # Jinja's sandbox turns a refused attribute into an empty value that fails only when used
        # further; refusing at once names the template line that tried.
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")

    def handle_exception(self, source: str | None = None) -> NoReturn:
        error = sys.exc_info()[1]
        if isinstance(error, SecurityError):
            refused = refusal(error, self.override_dir)
        elif isinstance(error, RecursionError):
            refused = refusal(_TOO_DEEP, self.override_dir)
        else:
            super().handle_exception(source)
        raise refused from None


# A macro that calls itself without end stops at Python's recursion limit: a refusal like the others.
_TOO_DEEP = SecurityError("it calls a macro within itself too deep (a recursion that does not end?)")


def refusal(error: SecurityError, override_dir: Path | None) -> SafetyViolation:
    """The one line a sandbox refusal is reported as: which template, which line, what it tried."""
    from jinja2.debug import rewrite_traceback_stack

    where = ""
    try:
        rewritten = rewrite_traceback_stack(None)
    except Exception:  # the refusal matters, not where it happened
        rewritten = error
    tb = rewritten.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(TEMPLATE_SUFFIX):
            where = f"{_shown_template(filename, override_dir)} line {tb.tb_lineno}"
        tb = tb.tb_next
    return SafetyViolation(
        f"refusing to render {where or 'a template'}: {error.message}"
        " (a vault's templates are rendered in a sandbox: they format the values they are given, nothing else)",
        details={"template": where} if where else None,
    )


@contextlib.contextmanager
def sandbox_refusals(env: jinja2.Environment) -> Iterator[None]:
    """Report a sandbox refusal raised outside ``render`` (a macro called from Python) the way
    ``render`` reports it, and hold the code run there to the render budget
    (:func:`render_budget`)."""
    with render_budget(env):
        try:
            yield
        except SecurityError as error:
            raise refusal(error, getattr(env, "override_dir", None)) from None
        except RecursionError:
            if not isinstance(env, VaultSandbox):
                raise
            raise refusal(_TOO_DEEP, env.override_dir) from None


def _shown_template(filename: str, override_dir: Path | None) -> str:
    path = Path(filename)
    if override_dir is not None:
        with contextlib.suppress(ValueError):
            return "templates/" + path.relative_to(override_dir).as_posix()
    with contextlib.suppress(ValueError):
        return "default:" + path.relative_to(data_path("templates")).as_posix()
    return path.name


def build_environment(
    override_dir: Path | None, bytecode_dir: Path | None, filters: dict[str, Callable[..., Any]]
) -> jinja2.Environment:
    """An environment over ``override_dir``'s templates (when it has any) then memosite's, with
    ``default:<name>`` naming memosite's own.

    With overrides it is a :class:`VaultSandbox` and keeps no compiled code; with memosite's own
    templates alone it is a plain environment whose compiled templates are kept in
    ``bytecode_dir`` (a short-lived CLI process does not compile them again)."""
    builtin = jinja2.FileSystemLoader(str(data_path("templates")))
    defaults = jinja2.PrefixLoader({DEFAULT_PREFIX.rstrip(":"): builtin}, delimiter=":")
    options: dict[str, Any] = {
        "autoescape": False,  # Markdown, not HTML: the site sanitises the rendered HTML instead
        "trim_blocks": True,
        "lstrip_blocks": True,
        "keep_trailing_newline": True,
        "undefined": jinja2.Undefined,
    }
    env: jinja2.Environment
    if override_dir is not None and override_names(override_dir):
        loader = jinja2.ChoiceLoader([defaults, _VaultTemplates(override_dir), builtin])
        sandbox = VaultSandbox(loader=loader, **options)
        sandbox.override_dir = override_dir
        env = sandbox
    else:
        env = jinja2.Environment(
            loader=jinja2.ChoiceLoader([defaults, builtin]), bytecode_cache=_bytecode_cache(bytecode_dir), **options
        )
    env.filters.update(inline=_inline, cell=_cell, day=_day, md=markdown_text, mdcode=code_span, **filters)
    if isinstance(env, VaultSandbox):
        env.guard_filters()
    return env


class _NoFollowBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache, but a cache file is never read or written through a symlink: it is read
    with ``O_NOFOLLOW`` and written atomically (a rename replaces a planted link, not its target)."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            fd = os.open(self._get_cache_filename(bucket), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return
        with os.fdopen(fd, "rb") as handle:
            bucket.load_bytecode(handle)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        buffer = io.BytesIO()
        bucket.write_bytecode(buffer)
        with contextlib.suppress(StorageError):  # a cache, not a requirement
            atomic_write_bytes(Path(self._get_cache_filename(bucket)), buffer.getvalue(), durable=False)


def theme_bytecode_dir(cache_dir: Path | None = None) -> Path:
    """Where a site's theme templates (Material's, an override's) are kept compiled: this user's
    cache directory, one folder per Jinja version (a cached template is found by its source's
    checksum, so a changed theme is compiled again)."""
    return (cache_dir or user_cache_dir()) / THEME_BYTECODE_DIR / jinja2.__version__


def file_bytecode_cache(directory: Path) -> jinja2.BytecodeCache | None:
    """A bytecode cache in ``directory``, a folder only this user can write (None when it cannot
    be one): never read or written through a symlink."""
    return _bytecode_cache(directory)


def _bytecode_cache(directory: Path | None) -> jinja2.BytecodeCache | None:
    if directory is None:
        return None
    try:
        private_dir(directory)
    except StorageError as exc:
        warn(f"template cache not used: {exc.message}")
        return None  # a cache, not a requirement
    return _NoFollowBytecodeCache(str(directory))


THEME_BYTECODE_DIR = "theme-bytecode"


def bytecode_dir_for(vault: Vault, cache_dir: Path | None = None) -> Path:
    """Where memosite's own templates are kept compiled for ``vault``: this user's cache directory,
    one folder per vault, memosite version, Jinja version and set of shipped templates."""
    key = hashlib.blake2b(digest_size=12)
    for part in (version.__version__, jinja2.__version__, builtin_checksum(), str(vault.root.resolve())):
        key.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return (cache_dir or user_cache_dir()) / BYTECODE_DIR / key.hexdigest()


def environment_for(vault: Vault, filters: dict[str, Callable[..., Any]]) -> tuple[jinja2.Environment, str]:
    """The vault's environment for its current templates, and their checksum (one environment per
    vault object and checksum: an edited override gets a new one)."""
    override = vault.root / "templates"
    checksum = templates_checksum(override)  # the same as templates_checksum_for(vault)
    cached = vault.template_cache
    if cached is not None and cached[0] == checksum:
        return cached[1], checksum
    sandboxed = bool(override_names(override))
    env = build_environment(override, None if sandboxed else bytecode_dir_for(vault), filters)
    vault.template_cache = (checksum, env)
    return env, checksum
