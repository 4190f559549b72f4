"""The six commands of Claude's memory tool, on the vault: one implementation for the SDK classes
(:mod:`memosite.integrations.anthropic`) and the MCP ``memory`` tool.

Each command maps ``/memories`` paths onto records (:mod:`.tree`) and changes them only through the
store, like any agent's write: validated, secret-scanned, under the review policy (where review is
required the tool's writes wait for a person), in one unit of work each. ``delete`` archives
(never purges); ``rename`` keeps the record: within a kind it only moves the record's path, across
kinds the record at the new path supersedes the old one, which stays as history.

Expiry: a file the model keeps outside the kind directories is a ``state`` record with a ``ttl``
(:data:`DEFAULT_IDLE_TTL`) that every write through the tool starts again, so working notes
nobody has written for that long expire (gc then removes them, as it removes any expired state).
Reading does not restart the clock: no read ever rewrites a record. Records in the kind
directories keep their kind's own rules (durable kinds never expire; scratch and review do after
``ttl.scratchDays`` / ``ttl.reviewDays``).

Every result and refusal is a text for the model (:mod:`.texts`); a refusal is a
:class:`~memosite.errors.MemositeError` whose message is that text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from memosite.errors import InvalidArguments, MemositeError, RecordNotFound
from memosite.inputs import check_arguments
from memosite.lookup import locate_record
from memosite.memorytool import texts
from memosite.memorytool.edits import KEPT_FIELDS, fields_changed, fields_for_new, split_text
from memosite.memorytool.paths import (
    MODEL_FILES_KIND,
    ROOT,
    canonical_file_path,
    canonical_path,
    kind_for_path,
    parts_of,
)
from memosite.memorytool.reading import directory_view, file_view
from memosite.memorytool.tree import (
    MEMORY_PATH_FIELD,
    MemoryFile,
    MemoryTree,
    is_fixed_directory,
    load_tree,
)
from memosite.mutation import mutation
from memosite.reviewstate import is_pending
from memosite.schema import slugify, utc_now, validate_slug
from memosite.store import forget_record, slug_taken, unique_slug_candidates, upsert_record
from memosite.vault import Vault, is_record_name

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
DEFAULT_IDLE_TTL = "30d"
MAX_FILE_BYTES = 100_000  # one memory file; the docs ask implementers to cap what a file may grow to

_REQUIRED: dict[str, tuple[str, ...]] = {
    "view": ("path",),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}
_OPTIONAL: dict[str, tuple[str, ...]] = {"view": ("view_range",)}


@contextlib.contextmanager
def _as_tool_error(*, written_nothing: bool = True) -> Iterator[None]:
    """A core refusal (an invalid field, a secret, a locked vault …) as the tool's ``Error:`` text,
    keeping its code."""
    try:
        yield
    except MemositeError as exc:
        if exc.message.startswith("Error: "):
            raise
        tail = "; nothing was written" if written_nothing else ""
        error = type(exc)(f"Error: {exc.message}{tail}", details=exc.details)
        raise error from exc


class MemoryBackend:
    """The memory tool over one project of one vault. ``vault.actor`` says who writes (an agent)."""

    def __init__(
        self,
        vault: Vault,
        project: str,
        *,
        idle_ttl: str = DEFAULT_IDLE_TTL,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        vault.project_dir(project)  # a bad project id is refused before any path is built from it
        self.vault = vault
        self.project = project
        self.idle_ttl = idle_ttl
        self.clock = clock

    # --- dispatch ------------------------------------------------------------------------------
    def run(self, command: Mapping[str, Any]) -> str:
        """Run one command given as the API sends it (``{"command": "view", "path": ...}``)."""
        if not isinstance(command, Mapping):
            raise InvalidArguments("Error: a command is an object with a `command` and its parameters")
        name = command.get("command")
        if name not in _REQUIRED:
            raise InvalidArguments(f"Error: unknown command {name!r}: use one of {', '.join(COMMANDS)}")
        allowed = {"command", *_REQUIRED[name], *_OPTIONAL.get(name, ())}
        extra = sorted(key for key in command if key not in allowed and command[key] is not None)
        if extra:
            raise InvalidArguments(f"Error: {name} takes no {', '.join(extra)}")
        missing = [key for key in _REQUIRED[name] if command.get(key) is None]
        if missing:
            raise InvalidArguments(f"Error: Parameter `{missing[0]}` is required for command: {name}")
        args = {key: command.get(key) for key in allowed if key != "command"}
        try:
            check_arguments(args)  # a lone surrogate (JSON's "\ud800") can be neither stored nor shown
        except InvalidArguments as exc:
            raise InvalidArguments(f"Error: {exc.message}", details=exc.details) from exc
        method: Callable[..., str] = getattr(self, name)
        return method(**args)

    # --- reading -------------------------------------------------------------------------------
    def _tree(self) -> MemoryTree:
        with _as_tool_error(written_nothing=False):
            return load_tree(self.vault, self.project, self.clock())

    def _text(self, item: MemoryFile) -> str:
        with _as_tool_error(written_nothing=False):
            _, path = locate_record(self.vault, self.project, kind=item.entry.kind, slug=item.slug)
            return path.read_bytes().decode("utf-8")

    def view(self, path: str, view_range: Any = None) -> str:
        where = canonical_path(path)
        tree = self._tree()
        if tree.is_directory(where) or (is_fixed_directory(where) and where not in tree.files):
            return directory_view(tree, path, where)
        item = tree.file(where)
        if item is None:
            raise RecordNotFound(texts.no_such_path(path))
        return file_view(path, self._text(item), view_range)

    # --- writing -------------------------------------------------------------------------------
    def create(self, path: str, file_text: str) -> str:
        where = canonical_path(path)
        _check_size(path, file_text)
        tree = self._tree()
        if where in tree.files:
            raise InvalidArguments(texts.already_exists(path))
        if where == ROOT or tree.is_directory(where) or is_fixed_directory(where):
            raise InvalidArguments(f"Error: {path} is a directory")
        _check_parents(tree, where, path)
        kind = kind_for_path(where)
        slug, named = self._free_slug(kind, where)
        text = split_text(file_text, path)
        fields = fields_for_new(text.frontmatter, slug=slug, kind=kind, where=path)
        if named:
            fields[MEMORY_PATH_FIELD] = where
        if kind == MODEL_FILES_KIND and fields.get("ttl") is None and fields.get("expires_at") is None:
            fields["ttl"] = self.idle_ttl
        with _as_tool_error():
            upsert_record(
                self.vault, self.project, kind=kind, slug=slug, body=text.body, frontmatter=fields, allow_duplicate=True
            )
        return texts.created(path)

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        item = self._existing_file(path, prefix="Error: ")
        if not isinstance(old_str, str) or not isinstance(new_str, str) or old_str == "":
            raise InvalidArguments("Error: old_str must be a non-empty text and new_str a text")
        text = self._text(item)
        count = text.count(old_str)
        if count == 0:
            raise InvalidArguments(texts.not_found_verbatim(old_str, path))
        if count > 1:
            lines, start = [], 0
            while (found := text.find(old_str, start)) != -1:
                lines.append(text[:found].count("\n") + 1)
                start = found + 1
            raise InvalidArguments(texts.not_unique(old_str, lines))
        at = text.find(old_str)
        changed = text[:at] + new_str + text[at + len(old_str) :]
        stored = self._rewrite(item, path, changed)
        line = _stored_line(changed, stored, changed[:at].count("\n"))
        stored_lines = stored.split("\n")
        start = max(0, line - 2)
        end = min(len(stored_lines), line + new_str.count("\n") + 3)
        return f"{texts.edited_snippet_header()}\n{texts.numbered(stored_lines[start:end], start + 1)}"

    def insert(self, path: str, insert_line: Any, insert_text: str) -> str:
        item = self._existing_file(path, prefix="Error: ", short=True)
        if not isinstance(insert_text, str):
            raise InvalidArguments("Error: insert_text must be a text")
        lines = texts.split_lines(self._text(item))
        if isinstance(insert_line, bool) or not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
            raise InvalidArguments(texts.bad_insert_line(insert_line, len(lines)))
        lines.insert(insert_line, insert_text.rstrip("\n"))
        self._rewrite(item, path, "\n".join(lines) + "\n")
        return texts.inserted(path)

    def delete(self, path: str) -> str:
        where = canonical_path(path)
        if where == ROOT:
            raise InvalidArguments("Error: Cannot delete the /memories directory itself")
        tree = self._tree()
        item = tree.file(where)
        if item is not None:
            self._may_retire(item)
            with _as_tool_error():
                forget_record(self.vault, self.project, kind=item.entry.kind, slug=item.slug)
            return texts.deleted(path)
        if is_fixed_directory(where):
            raise InvalidArguments(
                f"Error: {path} is where the project's {where.rsplit('/', 1)[-1]} live: delete its files one by one"
                " (each is archived, not destroyed)"
            )
        if not tree.is_directory(where):
            raise RecordNotFound(texts.no_such_path_short(path))
        items = tree.files_under(where)
        for each in items:
            self._may_retire(each)
        with _as_tool_error(written_nothing=False), mutation(self.vault, f"memory tool: delete {where}"):
            for each in items:
                forget_record(self.vault, self.project, kind=each.entry.kind, slug=each.slug)
        return texts.deleted(path)

    def rename(self, old_path: str, new_path: str) -> str:
        old, new = canonical_path(old_path), canonical_path(new_path)
        if old == ROOT:
            raise InvalidArguments("Error: Cannot rename the /memories directory itself")
        tree = self._tree()
        if not tree.exists(old):
            raise RecordNotFound(texts.no_such_path_short(old_path))
        if tree.exists(new) or is_fixed_directory(new):
            raise InvalidArguments(texts.destination_exists(new_path))
        if new.startswith(old + "/"):
            raise InvalidArguments(f"Error: cannot move {old_path} into itself")
        _check_parents(tree, new, new_path)
        item = tree.file(old)
        if item is not None:
            self._may_retire(item)
            with _as_tool_error():
                self._move(item, new)
            return texts.renamed(old_path, new_path)
        if is_fixed_directory(old):
            raise InvalidArguments(f"Error: {old_path} is a kind directory of memosite: it cannot be renamed")
        items = tree.files_under(old)
        for each in items:
            self._may_retire(each)
        with _as_tool_error(written_nothing=False), mutation(self.vault, f"memory tool: rename {old} to {new}"):
            for each in items:
                self._move(each, new + each.path[len(old) :])
        return texts.renamed(old_path, new_path)

    # --- the write path --------------------------------------------------------------------------
    def _existing_file(self, path: str, *, prefix: str = "", short: bool = False) -> MemoryFile:
        where = canonical_path(path)
        item = self._tree().file(where)
        if item is None:
            raise RecordNotFound(texts.no_such_path_short(path) if short else prefix + texts.no_such_path(path))
        return item

    def _rewrite(self, item: MemoryFile, path: str, new_text: str) -> str:
        """Write ``new_text`` as the record's new file through the store; the stored text after."""
        _check_size(path, new_text)
        before = split_text(self._text(item), path, written=False)
        after = split_text(new_text, path)
        changes = fields_changed(before.frontmatter or {}, after.frontmatter, path)
        if (
            item.entry.kind == MODEL_FILES_KIND
            and (before.frontmatter or {}).get("ttl") is not None
            and "ttl" not in changes
            and "expires_at" not in changes
        ):
            changes["ttl"] = (before.frontmatter or {})["ttl"]  # written through the tool: its clock starts again
        with _as_tool_error():
            upsert_record(
                self.vault,
                self.project,
                kind=item.entry.kind,
                slug=item.slug,
                body=after.body,
                frontmatter=changes,
                allow_duplicate=True,
            )
        return self._text(item)

    def _move(self, item: MemoryFile, new: str) -> None:
        """Give a record a new path: the same record when the path keeps its kind, else a record of
        the new kind that supersedes it (the old one stays, superseded)."""
        entry = item.entry
        kind = kind_for_path(new)
        if kind == entry.kind:
            canonical = canonical_file_path(kind, PurePosixPath(entry.path).name)
            upsert_record(
                self.vault,
                self.project,
                kind=kind,
                slug=item.slug,
                body=None,
                frontmatter={MEMORY_PATH_FIELD: None if new == canonical else new},
            )
            return
        slug, named = self._free_slug(kind, new)
        text = split_text(self._text(item), item.path, written=False)
        # The record's own fields go over, and its date (the history starts where it did); what
        # memosite recorded of the old record (review, usage, its place in a chain) stays with it.
        carried = {
            key: value for key, value in (text.frontmatter or {}).items() if key == "created" or key not in KEPT_FIELDS
        }
        carried.update({"supersedes": entry.id, MEMORY_PATH_FIELD: new if named else None})
        if kind == MODEL_FILES_KIND and carried.get("ttl") is None and carried.get("expires_at") is None:
            carried["ttl"] = self.idle_ttl
        upsert_record(
            self.vault, self.project, kind=kind, slug=slug, body=text.body, frontmatter=carried, allow_duplicate=True
        )

    def _free_slug(self, kind: str, where: str) -> tuple[str, bool]:
        """A slug no record of the project uses (nor one differing only in letter case), and
        whether the record must name its path (its file name is not the path's)."""
        name = parts_of(where)[-1]
        stem = name.removesuffix(".md")
        own_name = name.endswith(".md") and canonical_file_path(kind, name) == where and _usable_slug(stem)
        if own_name:
            base = stem
        else:
            wanted = stem if len(parts_of(where)) == 2 and kind != MODEL_FILES_KIND else "-".join(parts_of(where))
            base = slugify(wanted.removesuffix(".md")) or kind
        try:
            for candidate in unique_slug_candidates(base):
                if not slug_taken(self.vault, self.project, kind, candidate):
                    return candidate, not (own_name and candidate == base)
        except InvalidArguments:
            pass
        raise InvalidArguments(f"Error: no free name left for {where}")

    def _may_retire(self, item: MemoryFile) -> None:
        """An agent never displaces memory a person accepted: where review is required for the
        record's kind, only a record still waiting for review may be deleted or moved by the tool."""
        entry = item.entry
        if entry.kind in self.vault.config.review_required and not is_pending(entry.frontmatter):
            raise InvalidArguments(
                f"Error: {item.path} is reviewed memory (review is required for {entry.kind} records): the memory"
                " tool cannot delete or move it; propose a change with str_replace instead (a person reviews it)"
            )


def _usable_slug(stem: str) -> bool:
    """A file name the record can keep as its own: a valid slug, and none of the names memosite
    keeps for the files beside a record (``x.accepted``, ``x.conflict.…``)."""
    try:
        validate_slug(stem)
    except InvalidArguments:
        return False
    return is_record_name(f"{stem}.md")


def _check_size(path: str, text: Any) -> None:
    if not isinstance(text, str):
        raise InvalidArguments("Error: the file's text must be a string")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise InvalidArguments(
            f"Error: {path} would hold {size} bytes; a memory file holds at most {MAX_FILE_BYTES}: split it into"
            " smaller files"
        )


def _check_parents(tree: MemoryTree, where: str, shown: str) -> None:
    parts = parts_of(where)
    for depth in range(1, len(parts)):
        parent = "/".join([ROOT, *parts[:depth]])
        if parent in tree.files:
            raise InvalidArguments(f"Error: {parent} is a file, so {shown} cannot be inside it")


def _stored_line(written: str, stored: str, line: int) -> int:
    """Where line ``line`` (0-based) of the text the model wrote is in the file as stored: the body
    is kept byte for byte, only the frontmatter may have grown (an update time, a review state)."""
    written_top, stored_top = _body_start(written), _body_start(stored)
    return line - written_top + stored_top if line >= written_top else line


def _body_start(text: str) -> int:
    try:
        body = split_text(text, "", written=False).body
    except InvalidArguments:
        return 0
    return text[: len(text) - len(body)].count("\n")


__all__ = ["COMMANDS", "DEFAULT_IDLE_TTL", "MAX_FILE_BYTES", "MemoryBackend"]
