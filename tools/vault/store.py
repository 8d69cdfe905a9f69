"""The vault on disk (SPEC V1, V4): listing, reading, and safe, journaled, undoable writes.

Every write is planned first (a list of `Change`s: the note's content before and after)
and then applied: the previous content goes into the SQLite journal, the file is written
atomically (temp file in the same folder, fsync, `os.replace`), and listeners (the index)
hear which notes changed. `undo(n)` walks the journal back, newest write first, and
refuses to undo over edits made since. Own writes are remembered briefly so a file
watcher can tell them from the user's.
"""

from __future__ import annotations

import datetime as dt
import difflib
import errno
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from memory.db import Database, Migrations
from memory.errors import StorageError
from tools.base import ToolError
from tools.confirm import STALE_PREVIEW, GuardedPreview
from tools.vault.jail import VaultJail, VaultPath
from tools.vault.notes import (
    DEFAULT_DATE_FORMAT,
    DEFAULT_MAX_BYTES,
    Backlink,
    LinkResolver,
    NotANote,
    Note,
    Section,
    backlinks,
    content_hash,
    find_sections,
    moment_format,
    name_problem,
    note_title,
    parse_note,
    read_note_bytes,
    readable_name,
    relink,
    render_template,
    skip_reason,
    tag_matches,
)

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".vault-tmp"
OWN_WRITE_TTL_S = 120.0
OWN_WRITES_KEPT = 1024
JOURNAL_KEEP = 500
DIFF_MAX_LINES = 400

migrations = Migrations("vault_journal")


@migrations
def m001_journal(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE vault_journal (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "write_id TEXT NOT NULL, at REAL NOT NULL, op TEXT NOT NULL, path TEXT NOT NULL, "
        "new_path TEXT, before TEXT, after_hash TEXT, actor TEXT, summary TEXT, "
        "undone_at REAL)"
    )
    db.execute("CREATE INDEX vault_journal_by_write ON vault_journal (write_id)")


@dataclass(frozen=True)
class Change:
    """One file's part of a write. `before` None: the note did not exist; `after` None: it
    is removed. A move carries `new_path` and lands `after` there."""

    op: str
    path: VaultPath
    before: str | None
    after: str | None
    new_path: VaultPath | None = None
    summary: str = ""


@dataclass(frozen=True)
class FileInfo:
    path: str
    abs: Path
    mtime: float
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass
class Scan:
    notes: list[FileInfo] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


@dataclass(frozen=True)
class VaultEvent:
    """What a write or undo did: notes whose content changed, and notes that are gone."""

    changed: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass
class WriteResult:
    write_id: str
    op: str
    path: str
    changes: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"write_id": self.write_id, "op": self.op, "path": self.path, "files": self.changes}


@dataclass
class UndoResult:
    undone: list[dict[str, Any]]
    stopped: str | None = None


@dataclass
class OwnWrite:
    mtime_ns: int | None
    digest: str | None
    at: float


def now_local() -> dt.datetime:
    return dt.datetime.now().astimezone()


def atomic_write(path: Path, text: str) -> None:
    """Write `text` so that `path` holds either the old or the new content, never a torn
    mix: a temp file in the same folder, fsync, then `os.replace` (atomic on POSIX). If
    anything fails (a full disk, say), the temp file and any folder made for it are
    removed and the old file is untouched."""
    made = _make_folders(path.parent)
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    except BaseException:
        _remove_folders(made)
        raise
    try:
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                written = os.write(fd, data)
                if written <= 0:
                    raise OSError(errno.EIO, "the write made no progress")
                data = data[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        with suppress(OSError):
            os.chmod(temp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(temp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        _remove_folders(made)
        raise
    _fsync_folder(path.parent)


def _make_folders(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; return the ones created, deepest first."""
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        with suppress(FileExistsError):
            created.mkdir()
    return missing


def _remove_folders(folders: list[Path]) -> None:
    for folder in folders:
        with suppress(OSError):
            folder.rmdir()  # only while still empty


def _failure(exc: OSError) -> str:
    """An OSError as the user should read it; a full disk says so plainly."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device (the disk is full or over quota)"
    return str(exc.strerror or exc)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; not every platform lets a folder be fsynced."""
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def unified_diff(
    before: str | None, after: str | None, path: str, new_path: str | None = None
) -> str:
    old_lines = (before or "").splitlines(keepends=True)
    new_lines = (after or "").splitlines(keepends=True)
    lines = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile="/dev/null" if before is None else f"a/{path}",
            tofile="/dev/null" if after is None else f"b/{new_path or path}",
        )
    )
    lines = [line if line.endswith("\n") else line + "\n" for line in lines]
    if len(lines) > DIFF_MAX_LINES:
        lines = [*lines[:DIFF_MAX_LINES], f"... {len(lines) - DIFF_MAX_LINES} more diff lines\n"]
    return "".join(lines)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class Vault:
    """One vault folder. Reads need nothing else; writes are journaled in `database`.

    Daily-note and template settings default to Obsidian's own (`.obsidian/daily-notes.json`,
    `.obsidian/templates.json`, read only), then to `Daily/`, `YYYY-MM-DD`, `Templates/`.
    """

    def __init__(
        self,
        root: Path,
        database: Database,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        daily_folder: str | None = None,
        daily_format: str | None = None,
        daily_template: str | None = None,
        templates_folder: str | None = None,
        clock: Callable[[], dt.datetime] = now_local,
        journal_keep: int = JOURNAL_KEEP,
        own_write_ttl_s: float = OWN_WRITE_TTL_S,
    ) -> None:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"the vault folder {root} does not exist")
        self.jail = VaultJail(root)
        self.root = self.jail.root
        self.database = database
        self.max_bytes = max_bytes
        daily = _read_json(self.root / ".obsidian" / "daily-notes.json")
        templates = _read_json(self.root / ".obsidian" / "templates.json")
        self.daily_folder = (
            daily_folder if daily_folder is not None else daily.get("folder")
        ) or "Daily"
        self.daily_format = daily_format or daily.get("format") or DEFAULT_DATE_FORMAT
        self.daily_template = daily_template or daily.get("template") or None
        self.templates_folder = templates_folder or templates.get("folder") or "Templates"
        self.clock = clock
        self.journal_keep = journal_keep
        self.own_write_ttl_s = own_write_ttl_s
        self._lock = threading.RLock()
        self._own: OrderedDict[str, OwnWrite] = OrderedDict()
        self._listeners: list[Callable[[VaultEvent], None]] = []
        database.migrate(migrations)

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    # -- files ------------------------------------------------------------------------------

    def iter_files(self) -> Iterator[tuple[str, Path]]:
        """Every file below the root, hidden folders (`.obsidian`, `.git`, ...) left out."""
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            base = Path(folder)
            for name in sorted(files):
                if name.startswith("."):
                    continue
                path = base / name
                yield path.relative_to(self.root).as_posix(), path

    def scan(self, *, peek: bool = True) -> Scan:
        """The notes of the vault, and every other file with the reason it is skipped.
        Without `peek`, markdown files are not opened to look for binary content (the
        index checks the files it reads itself)."""
        found = Scan()
        for rel, path in self.iter_files():
            bad_name = name_problem(rel)
            if bad_name:
                found.skipped.append(Skipped(readable_name(rel), bad_name))
                continue
            try:
                if path.is_symlink() and not path.resolve().is_relative_to(self.root):
                    found.skipped.append(Skipped(rel, "symbolic link leading outside the vault"))
                    continue
                stat = path.stat()
                reason = skip_reason(
                    path,
                    max_bytes=self.max_bytes,
                    size=stat.st_size,
                    mode=stat.st_mode,
                    peek=peek,
                )
            except OSError as exc:
                found.skipped.append(Skipped(rel, f"unreadable: {exc.strerror or exc}"))
                continue
            if reason:
                found.skipped.append(Skipped(rel, reason))
            else:
                found.notes.append(
                    FileInfo(rel, path, stat.st_mtime, stat.st_mtime_ns, stat.st_size)
                )
        return found

    def note_paths(self) -> list[str]:
        return [info.path for info in self.scan().notes]

    def resolver(self, paths: list[str] | None = None) -> LinkResolver:
        return LinkResolver(self.note_paths() if paths is None else paths)

    # -- reading ----------------------------------------------------------------------------

    def locate(self, path: str) -> VaultPath:
        """An existing note by path, or by title (`Project Phoenix`) anywhere in the vault."""
        found = self.jail.note(path)
        if found.abs.exists() and not found.abs.is_dir():
            return found  # a FIFO or device is found here and refused when read
        wanted = note_title(found.rel).casefold()
        paths = self.note_paths()
        by_title = [p for p in paths if note_title(p).casefold() == wanted]
        if "/" not in found.rel and len(by_title) == 1:
            return self.jail.note(by_title[0])
        if "/" not in found.rel and len(by_title) > 1:
            raise ToolError(
                "AMBIGUOUS_NOTE",
                f"several notes are called {note_title(found.rel)!r}; give the full path",
                candidates=by_title,
            )
        titles = {note_title(p): p for p in paths}
        close = difflib.get_close_matches(note_title(found.rel), list(titles), n=5, cutoff=0.5)
        extra: dict[str, Any] = {"did_you_mean": [titles[t] for t in close]} if close else {}
        raise ToolError("NOT_FOUND", f"there is no note {found.rel!r} in the vault", **extra)

    def read_text(self, found: VaultPath) -> str:
        try:
            reason = skip_reason(found.abs, max_bytes=self.max_bytes)
            if reason:
                raise ToolError("NOT_A_NOTE", f"{found.rel} is not read: {reason}")
            return read_note_bytes(found.abs, max_bytes=self.max_bytes).decode(
                "utf-8", errors="replace"
            )
        except NotANote as exc:
            raise ToolError("NOT_A_NOTE", f"{found.rel} is not read: {exc}") from None
        except FileNotFoundError:
            raise ToolError("NOT_FOUND", f"there is no note {found.rel!r} in the vault") from None
        except IsADirectoryError:
            raise ToolError("NOT_A_NOTE", f"{found.rel} is a folder, not a note") from None
        except OSError as exc:
            raise ToolError(
                "READ_FAILED", f"cannot read {found.rel}: {exc.strerror or exc}"
            ) from exc

    def read(self, path: str) -> Note:
        found = self.locate(path)
        return parse_note(found.rel, self.read_text(found))

    def parse_all(self) -> list[Note]:
        """Every note, parsed; one that cannot be read or parsed is left out, not fatal."""
        notes = []
        for info in self.scan().notes:
            note = self._parse_quietly(info)
            if note is not None:
                notes.append(note)
        return notes

    def backlinks(self, path: str) -> list[Backlink]:
        target = self.locate(path).rel
        notes = self.parse_all()
        return backlinks(notes, target, LinkResolver(n.path for n in notes))

    def list_notes(
        self,
        folder: str | None = None,
        *,
        tag: str | None = None,
        since: float | None = None,
        recent_first: bool = False,
        limit: int | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """Notes under `folder` (recursively), with `tag`, changed after `since`; returns
        (rows, how many matched in all)."""
        base = self.jail.folder(folder)
        if not base.abs.is_dir():
            raise ToolError("NOT_FOUND", f"there is no folder {base.rel!r} in the vault")
        prefix = f"{base.rel}/" if base.rel else ""
        infos = [i for i in self.scan().notes if i.path.startswith(prefix)]
        if since is not None:
            infos = [i for i in infos if i.mtime >= since]
        infos.sort(key=(lambda i: -i.mtime) if recent_first else (lambda i: i.path))
        rows: list[dict[str, Any]] = []
        matched = 0
        for info in infos:
            needs_parse = tag is not None or limit is None or len(rows) < limit
            note = self._parse_quietly(info) if needs_parse else None
            if tag is not None and (note is None or not tag_matches(note.tags, tag)):
                continue
            matched += 1
            if limit is None or len(rows) < limit:
                row: dict[str, Any] = {
                    "path": info.path,
                    "title": note_title(info.path),
                    "modified": dt.datetime.fromtimestamp(info.mtime).isoformat(timespec="seconds"),
                    "size": info.size,
                }
                if note is not None and note.tags:
                    row["tags"] = note.tags
                rows.append(row)
        return rows, matched

    def _parse_quietly(self, info: FileInfo) -> Note | None:
        try:
            data = read_note_bytes(info.abs, max_bytes=self.max_bytes)
            return parse_note(info.path, data.decode("utf-8", errors="replace"))
        except OSError:
            return None
        except Exception:  # one odd note never stops the others
            log.warning("vault: cannot parse %s", info.path, exc_info=True)
            return None

    # -- planning writes (nothing touches the disk) ------------------------------------------

    def _current(self, found: VaultPath) -> str | None:
        if not found.abs.exists():
            return None
        return self.read_text(found)

    def plan_create(self, path: str, content: str, *, overwrite: bool = False) -> list[Change]:
        found = self.jail.note(path, for_write=True)
        before = self._current(found)
        if before is not None and not overwrite:
            raise ToolError(
                "NOTE_EXISTS",
                f"{found.rel} already exists; append to it, or overwrite it (which the user "
                "must confirm)",
                path=found.rel,
            )
        if found.abs.exists() and not found.abs.is_file():
            raise ToolError("NOT_A_NOTE", f"{found.rel} is a folder, not a note")
        op = "create" if before is None else "overwrite"
        text = content if content.endswith("\n") or not content else content + "\n"
        return [Change(op, found, before, text, summary=f"{op} {found.rel}")]

    def plan_append(
        self, path: str, text: str, *, heading: str | None = None, create: bool = False
    ) -> list[Change]:
        """Add `text` at the end of the note, or at the end of one heading's own text."""
        found = self.jail.note(path, for_write=True)
        if not found.abs.exists():
            try:
                found = self.locate(path)  # a note of that title elsewhere in the vault
            except ToolError as exc:
                if exc.code != "NOT_FOUND" or not create:
                    raise
                title = (heading or "").strip().lstrip("#").strip()
                return self.plan_create(found.rel, f"## {title}\n\n{text}" if title else text)
            self.jail.note(found.rel, for_write=True)
        before = self.read_text(found)
        addition = text.strip("\n")
        if not addition.strip():
            raise ToolError("INVALID_ARGUMENTS", "there is no text to append")
        if heading is None:
            after = _join(before, addition)
        else:
            note = parse_note(found.rel, before)
            section = self._one_section(note, heading)
            lines = note.lines
            later = [h.line for h in note.headings if h.line > section.start]
            end = min([section.end, *later])
            while end > section.start + 1 and not lines[end - 1].strip():
                end -= 1
            head, tail = "".join(lines[:end]), "".join(lines[end:])
            after = _join(head, addition) + (("\n" + tail.lstrip("\n")) if tail.strip() else "")
        where = f" under '{heading}'" if heading else ""
        return [Change("append", found, before, after, summary=f"append to {found.rel}{where}")]

    def _one_section(self, note: Note, heading: str) -> Section:
        found = find_sections(note, heading)
        if not found:
            raise ToolError(
                "SECTION_NOT_FOUND",
                f"{note.path} has no heading {heading!r}",
                headings=[h.text for h in note.headings],
            )
        if len(found) > 1:
            raise ToolError(
                "AMBIGUOUS_SECTION",
                f"{note.path} has {len(found)} headings called {heading!r}",
                lines=[s.start + 1 for s in found],
            )
        return found[0]

    def plan_replace_section(self, path: str, heading: str, text: str) -> list[Change]:
        found = self.locate(path)
        self.jail.note(found.rel, for_write=True)
        before = self.read_text(found)
        note = parse_note(found.rel, before)
        section = self._one_section(note, heading)
        lines = note.lines
        # the heading line stays; everything under it (subsections too) is replaced
        body = text.strip("\n")
        replacement = [lines[section.start], *([f"\n{body}\n"] if body else []), "\n"]
        tail = lines[section.end :]
        if not tail:
            replacement[-1] = ""
        after = "".join([*lines[: section.start], *replacement, *tail])
        return [
            Change(
                "replace_section",
                found,
                before,
                after,
                summary=f"replace the section '{section.heading.text}' of {found.rel}",
            )
        ]

    def plan_delete(self, path: str) -> list[Change]:
        found = self.locate(path)
        self.jail.note(found.rel, for_write=True)
        before = self.read_text(found)
        return [Change("delete", found, before, None, summary=f"delete {found.rel}")]

    def plan_move(self, path: str, new_path: str, *, update_links: bool = True) -> list[Change]:
        found = self.locate(path)
        self.jail.note(found.rel, for_write=True)
        if "/" not in new_path.strip().replace("\\", "/") and "/" in found.rel:
            new_path = f"{found.rel.rsplit('/', 1)[0]}/{new_path.strip()}"  # a rename in place
        target = self.jail.note(new_path, for_write=True)
        if target.rel == found.rel:
            raise ToolError("SAME_PATH", f"{found.rel} is already there")
        if target.abs.exists() and target.abs.resolve() != found.abs.resolve():
            raise ToolError("NOTE_EXISTS", f"{target.rel} already exists; pick another name")
        before = self.read_text(found)
        changes: list[Change] = []
        moved_text = before
        if update_links:
            notes = self.parse_all()
            paths = [n.path for n in notes]
            moved = {found.rel: target.rel}
            old_resolver = LinkResolver(paths)
            new_resolver = LinkResolver([moved.get(p, p) for p in paths])
            for note in notes:
                text, count = relink(
                    note,
                    moved.get(note.path, note.path),
                    old_resolver,
                    new_resolver,
                    moved,
                    file_exists=self._file_exists,
                )
                if not count or text == note.raw:
                    continue
                if note.path == found.rel:
                    moved_text = text
                    continue
                changes.append(
                    Change(
                        "link_update",
                        self.jail.note(note.path),
                        note.raw,
                        text,
                        summary=f"update {count} link(s) in {note.path}",
                    )
                )
        move = Change(
            "move",
            found,
            before,
            moved_text,
            new_path=target,
            summary=f"move {found.rel} to {target.rel}",
        )
        return [move, *changes]

    def _file_exists(self, rel: str) -> bool:
        """A file (an attachment, say) at `rel` inside the vault; for keeping links to it."""
        path = self.root / rel
        return path.resolve().is_relative_to(self.root) and path.is_file()

    def plan_template(
        self,
        template: str,
        path: str,
        *,
        variables: dict[str, str] | None = None,
    ) -> tuple[VaultPath, list[Change]]:
        """A new note from a template. Date variables in `path` are filled too, so
        `Weekly/{{date:GGGG-[W]WW}} 周报` names this week's report by the vault's clock."""
        source = self.template_path(template)
        now = self.clock()
        target = render_template(path, title="", now=now, variables=variables)
        found = self.jail.note(target, for_write=True)
        text = render_template(
            self.read_text(source), title=note_title(found.rel), now=now, variables=variables
        )
        return source, self.plan_create(found.rel, text)

    # -- templates and daily notes ------------------------------------------------------------

    def templates(self) -> list[str]:
        folder = self.jail.folder(self.templates_folder)
        prefix = f"{folder.rel}/" if folder.rel else ""
        return [p for p in self.note_paths() if p.startswith(prefix)]

    def template_path(self, name: str) -> VaultPath:
        """A template by name (`周报模板`), file name, or path from the vault root."""
        candidates = [name] if "/" in name.strip().replace("\\", "/") else []
        candidates.append(f"{self.templates_folder.rstrip('/')}/{name.strip()}")
        for candidate in candidates:
            found = self.jail.note(candidate)
            if found.abs.is_file():
                return found
        wanted = note_title(self.jail.note(name.strip().split("/")[-1]).rel).casefold()
        available = self.templates()
        matches = [p for p in available if wanted in note_title(p).casefold()]
        if len(matches) == 1:
            return self.jail.note(matches[0])
        raise ToolError(
            "TEMPLATE_NOT_FOUND",
            f"there is no template {name!r} in {self.templates_folder}/",
            templates=available,
        )

    def daily_note_path(self, day: dt.date | None = None) -> VaultPath:
        when = self.clock()
        if day is not None:
            when = dt.datetime.combine(day, when.timetz())
        name = moment_format(when, self.daily_format)
        folder = self.daily_folder.strip("/")
        return self.jail.note(f"{folder}/{name}" if folder else name, for_write=True)

    def plan_daily(
        self, text: str | None, day: dt.date | None = None
    ) -> tuple[VaultPath, list[Change]]:
        found = self.daily_note_path(day)
        if found.abs.exists():
            if not text:
                return found, []
            return found, self.plan_append(found.rel, text)
        content = ""
        if self.daily_template:
            with suppress(ToolError):
                source = self.template_path(self.daily_template)
                when = (
                    self.clock() if day is None else dt.datetime.combine(day, self.clock().timetz())
                )
                content = render_template(
                    self.read_text(source), title=note_title(found.rel), now=when
                )
        if text:
            content = _join(content, text.strip("\n"))
        return found, self.plan_create(found.rel, content)

    # -- applying writes ----------------------------------------------------------------------

    def describe(self, changes: list[Change]) -> GuardedPreview:
        """What a planned write would do, as the user sees it before confirming, with the
        state of the notes it was planned from (so a confirm can tell if they changed)."""
        summary = "; ".join(change.summary for change in changes)
        diffs = []
        for change in changes:
            if change.op == "move" and change.before == change.after:
                assert change.new_path is not None
                diffs.append(f"rename {change.path.rel} -> {change.new_path.rel}\n")
                continue
            new = change.new_path.rel if change.new_path else None
            diffs.append(unified_diff(change.before, change.after, change.path.rel, new))
        return GuardedPreview(
            summary=summary, diff="".join(diffs) or None, state=plan_state(changes)
        )

    def apply(
        self,
        changes: list[Change],
        *,
        actor: str | None = None,
        expect: dict[str, str | None] | None = None,
    ) -> WriteResult:
        """Journal and perform a planned write; a file changed since it was planned stops
        it. `expect`: the `plan_state` the user saw in a preview; a plan made from other
        content is refused (STALE_PREVIEW) and nothing is written."""
        if not changes:
            raise ToolError("NOTHING_TO_DO", "the write changes nothing")
        if expect is not None:
            _check_preview(changes, expect)
        write_id = f"w_{uuid.uuid4().hex[:12]}"
        with self._lock:
            for change in changes:
                self._check_unchanged(change)
            performed: list[tuple[Change, int]] = []
            for change in changes:
                try:
                    row_id = self._journal(write_id, change, actor)
                except StorageError as exc:
                    raise self._failed(
                        change, performed, f"the vault journal failed: {exc}"
                    ) from exc
                try:
                    self._perform(change)
                except OSError as exc:
                    performed.append((change, row_id))  # half done: put back with the rest
                    raise self._failed(change, performed, _failure(exc)) from exc
                performed.append((change, row_id))
            with suppress(StorageError):  # an old entry kept a while longer does no harm
                self._prune_journal()
            self._notify(_event(changes))
        main = changes[0]
        where = main.new_path.rel if main.new_path is not None else main.path.rel
        return WriteResult(write_id, main.op, where, [_change_row(c) for c in changes])

    def _failed(self, failed: Change, performed: list[tuple[Change, int]], why: str) -> ToolError:
        """A write stopped part way (a full disk, say): put back what it had done so far,
        newest first, and drop its journal rows, so the vault is as before and the journal
        claims nothing. What cannot be put back stays journaled for `vault undo`."""
        stuck: list[Change] = []
        for change, row_id in reversed(performed):
            try:
                self._revert(change)
            except OSError:
                stuck.append(change)
                continue
            try:
                self.database.write("DELETE FROM vault_journal WHERE id = ?", (row_id,))
            except StorageError:  # undo sees the file as it was and skips the entry
                log.warning("could not drop journal row %s of a failed write", row_id)
        if stuck:
            self._notify(_event(stuck))
            names = ", ".join(change.path.rel for change in stuck)
            outcome = (
                f"{len(stuck)} file(s) could not be put back ({names}); `assistant vault "
                "undo` restores them once there is room"
            )
        elif any(change is not failed for change, _ in performed):
            outcome = "nothing was changed (the files already written were put back)"
        else:
            outcome = "the note is unchanged"
        note = failed.path.rel
        return ToolError("WRITE_FAILED", f"could not write {note}: {why}; {outcome}", path=note)

    def _revert(self, change: Change) -> None:
        """Put back one change this write performed, or half performed."""
        old = change.path.abs
        if change.op == "move":
            assert change.new_path is not None
            new = change.new_path.abs
            if not new.exists():
                return  # nothing landed
            if old.exists() and not os.path.samefile(old, new):
                os.unlink(new)  # the copy landed, the note is still where it was
            elif change.before == change.after:
                os.replace(new, old)
            else:
                assert change.before is not None
                atomic_write(old, change.before)
                if not os.path.samefile(old, new):
                    os.unlink(new)
            return
        try:
            current: str | None = old.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            current = None
        if current == change.before:
            return  # the write never reached the file
        if change.before is None:
            os.unlink(old)
        else:
            atomic_write(old, change.before)

    def _check_unchanged(self, change: Change) -> None:
        current = self._current(change.path)
        if current != change.before:
            state = "now exists" if change.before is None else "changed on disk"
            raise ToolError(
                "NOTE_CHANGED", f"{change.path.rel} {state} since this write was planned; retry"
            )

    def _journal(self, write_id: str, change: Change, actor: str | None) -> int:
        after_hash = content_hash(change.after) if change.after is not None else None
        return self.database.write(
            "INSERT INTO vault_journal (write_id, at, op, path, new_path, before, after_hash, "
            "actor, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                write_id,
                time.time(),
                change.op,
                change.path.rel,
                change.new_path.rel if change.new_path else None,
                change.before,
                after_hash,
                actor,
                change.summary,
            ),
        )

    def _perform(self, change: Change) -> None:
        if change.op == "move":
            assert change.new_path is not None and change.after is not None
            if change.after == change.before:
                change.new_path.abs.parent.mkdir(parents=True, exist_ok=True)
                os.replace(change.path.abs, change.new_path.abs)
                _fsync_folder(change.new_path.abs.parent)
            else:
                atomic_write(change.new_path.abs, change.after)
                os.unlink(change.path.abs)
            self._remember_own(change.new_path)
            self._remember_own(change.path)
        elif change.after is None:
            os.unlink(change.path.abs)
            self._remember_own(change.path)
        else:
            atomic_write(change.path.abs, change.after)
            self._remember_own(change.path)

    def _prune_journal(self) -> None:
        self.database.write(
            "DELETE FROM vault_journal WHERE id < (SELECT min(first) FROM (SELECT min(id) AS "
            "first FROM vault_journal GROUP BY write_id ORDER BY first DESC LIMIT ?))",
            (self.journal_keep,),
        )

    # convenience: plan and apply in one call ---------------------------------------------------

    def create(
        self, path: str, content: str, *, overwrite: bool = False, actor: str | None = None
    ) -> WriteResult:
        return self.apply(self.plan_create(path, content, overwrite=overwrite), actor=actor)

    def append(
        self,
        path: str,
        text: str,
        *,
        heading: str | None = None,
        create: bool = False,
        actor: str | None = None,
    ) -> WriteResult:
        return self.apply(self.plan_append(path, text, heading=heading, create=create), actor=actor)

    def replace_section(
        self, path: str, heading: str, text: str, *, actor: str | None = None
    ) -> WriteResult:
        return self.apply(self.plan_replace_section(path, heading, text), actor=actor)

    def move(
        self, path: str, new_path: str, *, update_links: bool = True, actor: str | None = None
    ) -> WriteResult:
        return self.apply(self.plan_move(path, new_path, update_links=update_links), actor=actor)

    def delete(self, path: str, *, actor: str | None = None) -> WriteResult:
        return self.apply(self.plan_delete(path), actor=actor)

    # -- the journal and undo -----------------------------------------------------------------

    def journal(self, limit: int = 20, *, include_undone: bool = False) -> list[dict[str, Any]]:
        """The latest writes, newest first: one row per write with the files it touched."""
        undone = "" if include_undone else "WHERE undone_at IS NULL"
        writes = self.database.query(
            f"SELECT write_id, max(id) AS last FROM vault_journal {undone} GROUP BY write_id "
            "ORDER BY last DESC LIMIT ?",
            [limit],
        )
        rows = []
        for write in writes:
            entries = self._entries(write["write_id"])
            main = entries[0]
            rows.append(
                {
                    "write_id": write["write_id"],
                    "at": dt.datetime.fromtimestamp(main["at"]).isoformat(timespec="seconds"),
                    "op": main["op"],
                    "path": main["new_path"] or main["path"],
                    "summary": "; ".join(e["summary"] for e in entries if e["summary"]),
                    "files": len(entries),
                    "actor": main["actor"],
                    "undone": main["undone_at"] is not None,
                }
            )
        return rows

    def _entries(self, write_id: str) -> list[dict[str, Any]]:
        return self.database.query(
            "SELECT * FROM vault_journal WHERE write_id = ? ORDER BY id", [write_id]
        )

    def undo(self, n: int = 1, *, force: bool = False) -> UndoResult:
        """Undo the last `n` writes, newest first. A write whose notes were edited since is
        not undone (unless `force`): undo stops there and says why."""
        result = UndoResult([])
        with self._lock:
            writes = self.database.query(
                "SELECT write_id, max(id) AS last FROM vault_journal WHERE undone_at IS NULL "
                "GROUP BY write_id ORDER BY last DESC LIMIT ?",
                [max(n, 0)],
            )
            for write in writes:
                entries = list(reversed(self._entries(write["write_id"])))
                try:
                    steps = [self._undo_step(entry, force) for entry in entries]
                except ToolError as exc:
                    result.stopped = exc.detail
                    break
                changed: list[str] = []
                removed: list[str] = []
                try:
                    for step in steps:
                        step(changed, removed)
                except OSError as exc:
                    result.stopped = f"undo of {write['write_id']} failed: {_failure(exc)}"
                    self._notify(VaultEvent(tuple(changed), tuple(removed)))
                    break
                self.database.update(
                    "UPDATE vault_journal SET undone_at = ? WHERE write_id = ?",
                    (time.time(), write["write_id"]),
                )
                main = entries[-1]
                result.undone.append(
                    {
                        "write_id": write["write_id"],
                        "op": main["op"],
                        "path": main["new_path"] or main["path"],
                        "summary": main["summary"],
                    }
                )
                self._notify(VaultEvent(tuple(changed), tuple(removed)))
        return result

    def _state(self, rel: str) -> tuple[VaultPath, str | None]:
        found = self.jail.note(rel)
        return found, self._current(found) if found.abs.is_file() else None

    def _undo_step(
        self, entry: dict[str, Any], force: bool
    ) -> Callable[[list[str], list[str]], None]:
        """Check that one journal entry can be undone; return the action that undoes it."""
        path, current = self._state(entry["path"])
        before = entry["before"]
        after_hash = entry["after_hash"]

        def conflict(why: str) -> ToolError:
            return ToolError("UNDO_CONFLICT", f"cannot undo '{entry['summary']}': {why}")

        def restore(changed: list[str], removed: list[str]) -> None:
            if before is None:
                if path.abs.exists():
                    os.unlink(path.abs)
                    removed.append(path.rel)
            else:
                atomic_write(path.abs, before)
                changed.append(path.rel)
            self._remember_own(path)

        def nothing(changed: list[str], removed: list[str]) -> None:
            return None

        if entry["op"] == "move":
            target, moved = self._state(entry["new_path"])
            if current == before and moved is None:
                return nothing
            if not force and (moved is None or content_hash(moved) != after_hash):
                raise conflict(f"{target.rel} was changed or removed since")
            if not force and current is not None:
                raise conflict(f"a note now exists at {path.rel}")

            def move_back(changed: list[str], removed: list[str]) -> None:
                atomic_write(path.abs, before)
                if target.abs.exists():
                    os.unlink(target.abs)
                self._remember_own(path)
                self._remember_own(target)
                changed.append(path.rel)
                removed.append(target.rel)

            return move_back
        if current == before:
            return nothing  # already as it was (or the write never reached the disk)
        if force:
            return restore
        if entry["op"] == "delete":
            if current is None:
                return restore
            raise conflict(f"a note was created at {path.rel} since")
        if current is None:
            raise conflict(f"{path.rel} was removed since")
        if content_hash(current) != after_hash:
            raise conflict(f"{path.rel} was edited since")
        return restore

    # -- own writes and listeners -----------------------------------------------------------

    def subscribe(self, listener: Callable[[VaultEvent], None]) -> None:
        """Call `listener` after every write and undo (the index keeps itself current)."""
        self._listeners.append(listener)

    def _notify(self, event: VaultEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # the write happened; the index repairs on its next run
                log.exception("vault listener failed for %s", event)

    def _remember_own(self, found: VaultPath) -> None:
        try:
            stat = found.abs.stat()
            record = OwnWrite(
                stat.st_mtime_ns, content_hash(found.abs.read_text(encoding="utf-8")), time.time()
            )
        except OSError:
            record = OwnWrite(None, None, time.time())
        with self._lock:
            self._own[found.rel] = record
            self._own.move_to_end(found.rel)
            while len(self._own) > OWN_WRITES_KEPT:
                self._own.popitem(last=False)

    def was_own_write(self, path: str | Path) -> bool:
        """Did the assistant itself produce the file's current state (or its removal)?
        For a file watcher: `path` may be absolute. Temp files of atomic writes count."""
        rel = self.jail.relative(path)
        if rel is None:
            return False
        name = Path(rel).name
        if name.startswith(".") and name.endswith(TEMP_SUFFIX):
            return True
        with self._lock:
            record = self._own.get(rel)
        if record is None or time.time() - record.at > self.own_write_ttl_s:
            return False
        absolute = self.root / rel
        try:
            stat = absolute.stat()
        except OSError:
            return record.digest is None
        if record.mtime_ns is None:
            return False
        if stat.st_mtime_ns == record.mtime_ns:
            return True
        try:
            return content_hash(absolute.read_text(encoding="utf-8")) == record.digest
        except (OSError, UnicodeDecodeError):
            return False


def _join(text: str, addition: str) -> str:
    """`addition` on its own line(s) after `text`, separated by one newline."""
    if not text.strip():
        return addition + "\n"
    return text.rstrip("\n") + "\n" + addition + "\n"


def plan_state(changes: list[Change]) -> dict[str, str | None]:
    """Each note a plan reads or creates, with the hash of its content as planned from
    (None: absent). Two plans with the same state were made from the same notes."""
    state: dict[str, str | None] = {}
    for change in changes:
        state[change.path.rel] = content_hash(change.before) if change.before is not None else None
        if change.new_path is not None:
            state[change.new_path.rel] = None
    return state


def _check_preview(changes: list[Change], expect: dict[str, str | None]) -> None:
    state = plan_state(changes)
    if state == expect:
        return
    changed = sorted(
        path for path in {*state, *expect} if state.get(path, "") != expect.get(path, "")
    )
    names = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    raise ToolError(
        STALE_PREVIEW,
        f"{names} changed since the preview was made, so nothing was changed",
        paths=changed,
    )


def _event(changes: list[Change]) -> VaultEvent:
    changed: list[str] = []
    removed: list[str] = []
    for change in changes:
        if change.op == "move":
            assert change.new_path is not None
            removed.append(change.path.rel)
            changed.append(change.new_path.rel)
        elif change.after is None:
            removed.append(change.path.rel)
        else:
            changed.append(change.path.rel)
    return VaultEvent(tuple(changed), tuple(removed))


def _change_row(change: Change) -> dict[str, Any]:
    row: dict[str, Any] = {"op": change.op, "path": change.path.rel}
    if change.new_path is not None:
        row["new_path"] = change.new_path.rel
    return row
