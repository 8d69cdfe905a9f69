"""The vault's files (SPEC V1, V4): listing, reading and writing notes byte for byte.

A note is read as bytes and decoded without newline translation, so its text holds the
file's own line endings and BOM; a write encodes text back in the style of the file it
replaces (`encode_like`), so CRLF, a BOM and a missing trailing newline survive. A note
that is not valid UTF-8 is read with replacement characters but never rewritten: only
its exact bytes are ever moved or put back. Writes are atomic (temp file in the same
folder, fsync, `os.replace`). Own writes are remembered briefly so a file watcher can tell
them from the user's. Planning (plans.py) and journaling (journal.py) build on this.
"""

from __future__ import annotations

import datetime as dt
import difflib
import errno
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tools.base import ToolError
from tools.vault.jail import VaultJail, VaultPath
from tools.vault.notes import (
    DEFAULT_DATE_FORMAT,
    DEFAULT_MAX_BYTES,
    NOT_UTF8_REASON,
    Backlink,
    LinkResolver,
    NotANote,
    Note,
    backlinks,
    head_reason,
    moment_format,
    name_problem,
    note_title,
    parse_note,
    read_note_bytes,
    readable_name,
    skip_reason,
    tag_matches,
)

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".vault-tmp"
OWN_WRITE_TTL_S = 120.0
OWN_WRITES_KEPT = 1024
DIFF_MAX_LINES = 400
PARSED_KEPT = 2000
_LONE_LF = re.compile(r"(?<!\r)\n")


def bytes_hash(data: bytes) -> str:
    """The hash of a file's content; equals `notes.content_hash` of its UTF-8 text."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class NoteFile:
    """A note as it is on disk: its exact bytes, and its text (decoded without newline
    translation; U+FFFD for bytes that are not UTF-8, in which case `utf8` is False)."""

    data: bytes
    text: str
    utf8: bool
    bad_byte: int | None = None  # the offset of the first byte that is not UTF-8
    listed: bool = True  # False: a file the vault skips as a note (not UTF-8 near its start)

    @classmethod
    def of(cls, data: bytes) -> NoteFile:
        try:
            return cls(data, data.decode("utf-8"), True)
        except UnicodeDecodeError as exc:
            return cls(data, data.decode("utf-8", errors="replace"), False, exc.start)


def decode(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def encode_like(text: str, like: bytes | None) -> bytes:
    """`text` as the bytes of a note that replaces `like` (None: a new note): with CRLF
    line ends if `like` uses CRLF throughout, and without a trailing newline if `like`
    had none. A BOM is part of the text (decoding keeps it) and so is kept too."""
    if like is not None:
        newlines = like.count(b"\n")
        if newlines and like.count(b"\r\n") == newlines:
            text = _LONE_LF.sub("\r\n", text)
        if like and not like.endswith(b"\n"):
            if text.endswith("\r\n"):
                text = text[:-2]
            elif text.endswith("\n"):
                text = text[:-1]
    return text.encode("utf-8")


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
class OwnWrite:
    mtime_ns: int | None
    digest: str | None
    at: float


def now_local() -> dt.datetime:
    return dt.datetime.now().astimezone()


def atomic_write(path: Path, data: bytes) -> list[Path]:
    """Write `data` so that `path` holds either the old or the new content, never a torn
    mix: a temp file in the same folder, fsync, then `os.replace` (atomic on POSIX). If
    anything fails (a full disk, say), the temp file and any folder made for it are
    removed and the old file is untouched. Returns the folders it created, deepest first."""
    made = make_folders(path.parent)
    try:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    except BaseException:
        remove_folders(made)
        raise
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, "the write made no progress")
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        with suppress(OSError):
            os.chmod(temp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(temp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        remove_folders(made)
        raise
    fsync_folder(path.parent)
    return made


def missing_folders(folder: Path) -> list[Path]:
    """`folder` and its parents that do not exist yet, deepest first."""
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return missing


def make_folders(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; return the ones created, deepest first."""
    missing = missing_folders(folder)
    for created in reversed(missing):
        with suppress(FileExistsError):
            created.mkdir()
            # like its parent, not the process umask (077 while the data directory is owned)
            with suppress(OSError):
                os.chmod(created, created.parent.stat().st_mode & 0o7777)
    return missing


def remove_folders(folders: list[Path]) -> list[Path]:
    """Remove each folder while it is empty (deepest first); return the ones removed."""
    removed = []
    for folder in folders:
        with suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def failure(exc: OSError) -> str:
    """An OSError as the user should read it; a full disk says so plainly."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device (the disk is full or over quota)"
    return str(exc.strerror or exc)


def fsync_folder(folder: Path) -> None:
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
    """Obsidian's settings, if readable: a regular file only (never blocks on a FIFO)."""
    try:
        data = json.loads(read_note_bytes(path, max_bytes=1 << 20).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class VaultFiles:
    """One vault folder's files: find, read, list; write bytes atomically.

    Daily-note and template settings default to Obsidian's own (`.obsidian/daily-notes.json`,
    `.obsidian/templates.json`, read only), then to `Daily/`, `YYYY-MM-DD`, `Templates/`.
    """

    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        daily_folder: str | None = None,
        daily_format: str | None = None,
        daily_template: str | None = None,
        templates_folder: str | None = None,
        clock: Callable[[], dt.datetime] = now_local,
        own_write_ttl_s: float = OWN_WRITE_TTL_S,
    ) -> None:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"the vault folder {root} does not exist")
        self.jail = VaultJail(root)
        self.root = self.jail.root
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
        self.own_write_ttl_s = own_write_ttl_s
        self._lock = threading.RLock()
        self._own: OrderedDict[str, OwnWrite] = OrderedDict()
        self._parsed: OrderedDict[str, tuple[str, Note]] = OrderedDict()
        self._listeners: list[Callable[[VaultEvent], None]] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

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

    def stray_temp_files(self) -> list[Path]:
        """Temp files of atomic writes a crash left behind (never a user's file: the
        assistant's temp names start with a dot and end with `.vault-tmp`)."""
        found = []
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += [
                Path(folder) / name
                for name in files
                if name.startswith(".") and name.endswith(TEMP_SUFFIX)
            ]
        return found

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

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """Every file's (path, mtime, size): equal signatures, the same vault as far as a
        plan can tell (a plan also checks each file's bytes when it is applied)."""
        found = []
        for rel, path in self.iter_files():
            with suppress(OSError):
                stat = path.stat()
                found.append((rel, stat.st_mtime_ns, stat.st_size))
        return tuple(found)

    def note_paths(self) -> list[str]:
        return [info.path for info in self.scan().notes]

    def resolver(self, paths: list[str] | None = None) -> LinkResolver:
        return LinkResolver(self.note_paths() if paths is None else paths)

    def file_exists(self, rel: str) -> bool:
        """A file (an attachment, say) at `rel` inside the vault; for keeping links to it."""
        path = self.root / rel
        return path.resolve().is_relative_to(self.root) and path.is_file()

    # -- reading ----------------------------------------------------------------------------

    def locate(self, path: str) -> VaultPath:
        """An existing note by path, or by title (`Project Phoenix`, `Node.js`) anywhere
        in the vault."""
        try:
            found = self.jail.note(path)
        except ToolError as exc:
            if exc.code != "NOT_MARKDOWN" or "/" in path.strip().replace("\\", "/"):
                raise
            titled = self.jail.note(path.strip() + ".md")  # a title with a dot in it
            wanted = note_title(titled.rel).casefold()
            if not any(note_title(p).casefold() == wanted for p in self.note_paths()):
                raise
            found = titled
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

    def read_file(self, found: VaultPath) -> NoteFile:
        """A note's bytes and text; `ToolError` for anything that is not a readable note."""
        try:
            reason = skip_reason(found.abs, max_bytes=self.max_bytes)
            if reason:
                raise ToolError("NOT_A_NOTE", f"{found.rel} is not read: {reason}")
            return NoteFile.of(read_note_bytes(found.abs, max_bytes=self.max_bytes))
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

    def read_text(self, found: VaultPath) -> str:
        return self.read_file(found).text

    def current(self, found: VaultPath) -> bytes | None:
        """The bytes of the file at `found` now; None when there is none."""
        if not found.abs.exists():
            return None
        return self.read_file(found).data

    def raw_bytes(self, found: VaultPath) -> bytes | None:
        """The exact bytes at `found` now, note or not (None when there is no file): what a
        write checks it is replacing."""
        try:
            return read_note_bytes(found.abs, max_bytes=self.max_bytes)
        except FileNotFoundError:
            return None
        except NotANote as exc:
            raise ToolError("NOT_A_NOTE", f"{found.rel} is not read: {exc}") from None
        except OSError as exc:
            raise ToolError(
                "READ_FAILED", f"cannot read {found.rel}: {exc.strerror or exc}"
            ) from exc

    def read(self, path: str) -> Note:
        found = self.locate(path)
        return parse_note(found.rel, self.read_text(found))

    def parse_all(self) -> list[Note]:
        """Every note, parsed; one that cannot be read or parsed is left out, not fatal."""
        return [note for note, _ in self.parse_all_files()]

    def parse_all_files(self, *, undecodable: bool = False) -> list[tuple[Note, NoteFile]]:
        """Every note parsed, with its bytes (a move must know which are not UTF-8). With
        `undecodable`, markdown files skipped as not UTF-8 are parsed too (with U+FFFD
        for their odd bytes), so a move can name the links it cannot update in them."""
        found = []
        for rel, file in self.note_files(undecodable=undecodable):
            note = self.parse_file(rel, file)
            if note is not None:
                found.append((note, file))
        return found

    def note_files(self, *, undecodable: bool = False) -> list[tuple[str, NoteFile]]:
        """Every note's bytes, unparsed (see `parse_all_files`); each file is read once
        and judged by its bytes as `scan` would judge it."""
        found = []
        for info in self.scan(peek=False).notes:
            try:
                data = read_note_bytes(info.abs, max_bytes=self.max_bytes)
            except OSError:
                continue
            reason = head_reason(data)
            if reason is None:
                found.append((info.path, NoteFile.of(data)))
            elif undecodable and reason == NOT_UTF8_REASON:
                found.append((info.path, replace(NoteFile.of(data), listed=False)))
        return found

    def parse_file(self, rel: str, file: NoteFile) -> Note | None:
        """The note parsed, from a small cache by content: a move's confirmation plans
        again from the same notes its preview parsed a moment before."""
        digest = bytes_hash(file.data)
        with self._lock:
            cached = self._parsed.get(rel)
            if cached is not None and cached[0] == digest:
                self._parsed.move_to_end(rel)
                return cached[1]
        try:
            note = parse_note(rel, file.text)
        except Exception:  # one odd note never stops the others
            log.warning("vault: cannot parse %s", rel, exc_info=True)
            return None
        with self._lock:
            self._parsed[rel] = (digest, note)
            while len(self._parsed) > PARSED_KEPT:
                self._parsed.popitem(last=False)
        return note

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
            parsed = self._parse_quietly(info) if needs_parse else None
            note = parsed[0] if parsed is not None else None
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

    def _parse_quietly(self, info: FileInfo) -> tuple[Note, NoteFile] | None:
        try:
            file = NoteFile.of(read_note_bytes(info.abs, max_bytes=self.max_bytes))
            return parse_note(info.path, file.text), file
        except OSError:
            return None
        except Exception:  # one odd note never stops the others
            log.warning("vault: cannot parse %s", info.path, exc_info=True)
            return None

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

    # -- own writes and listeners -----------------------------------------------------------

    def subscribe(self, listener: Callable[[VaultEvent], None]) -> None:
        """Call `listener` after every write and undo (the index keeps itself current)."""
        self._listeners.append(listener)

    def notify(self, event: VaultEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # the write happened; the index repairs on its next run
                log.exception("vault listener failed for %s", event)

    def remember_own(self, found: VaultPath) -> None:
        try:
            stat = found.abs.stat()
            digest = bytes_hash(read_note_bytes(found.abs, max_bytes=self.max_bytes))
            record = OwnWrite(stat.st_mtime_ns, digest, time.time())
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
            return bytes_hash(read_note_bytes(absolute, max_bytes=self.max_bytes)) == record.digest
        except OSError:
            return False
