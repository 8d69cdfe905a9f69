"""Planned writes (SPEC V4): what a write would do, computed before anything changes.

A plan is a list of `Change`s, each one file's bytes before and after. Plans read the
vault (files.py) and never touch the disk; the journal (journal.py) applies them. Text is
edited as decoded (with the file's own line endings) and encoded back in the style of the
file it replaces, so a link update changes the link's bytes and nothing else. A note that
is not valid UTF-8 is never rewritten: a move names it, and the links it cannot update,
as a `not_updated` change that writes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from urllib.parse import unquote

from tools.base import ToolError
from tools.confirm import STALE_PREVIEW, GuardedPreview
from tools.vault.files import NoteFile, VaultFiles, bytes_hash, decode, encode_like, unified_diff
from tools.vault.jail import VaultPath
from tools.vault.notes import (
    LinkResolver,
    Note,
    Section,
    find_sections,
    note_title,
    parse_note,
    read_note_bytes,
    relink_edits,
    render_template,
)

NOT_UPDATED = "not_updated"


@dataclass(frozen=True)
class Change:
    """One file's part of a write. `before` None: the file did not exist; `after` None: it
    is removed. A move carries `new_path` and lands `after` there. `drop_folders`: folders
    (vault-relative) to remove once empty after this change (an undo of a move that made
    them). A `not_updated` change writes nothing: it names a file the write leaves as it
    is although it should change (its summary says why)."""

    op: str
    path: VaultPath
    before: bytes | None
    after: bytes | None
    new_path: VaultPath | None = None
    summary: str = ""
    drop_folders: tuple[str, ...] = ()

    @property
    def before_text(self) -> str | None:
        return decode(self.before)

    @property
    def after_text(self) -> str | None:
        return decode(self.after)

    @property
    def writes(self) -> bool:
        return self.op != NOT_UPDATED


def _refuse_rewrite(file: NoteFile, rel: str) -> None:
    if not file.utf8:
        raise ToolError(
            "NOT_UTF8",
            f"{rel} is not valid UTF-8 text (byte {file.bad_byte} and maybe others); it is "
            "never rewritten, so that none of its bytes are lost. Convert it to UTF-8 first.",
            path=rel,
        )


def _join(text: str, addition: str) -> str:
    """`addition` on its own line(s) after `text`, separated by one newline."""
    if not text.strip():
        return addition + "\n"
    return text.rstrip("\r\n") + _newline(text) + addition + "\n"


def _newline(text: str) -> str:
    """The line end `text` uses (CRLF when it uses it throughout)."""
    count = text.count("\n")
    return "\r\n" if count and text.count("\r\n") == count else "\n"


def plan_create(
    files: VaultFiles, path: str, content: str, *, overwrite: bool = False
) -> list[Change]:
    found = files.jail.note(path, for_write=True)
    if found.abs.exists() and found.abs.is_dir():
        raise ToolError("NOT_A_NOTE", f"{found.rel} is a folder, not a note")
    before = files.current(found)
    if before is not None and not overwrite:
        raise ToolError(
            "NOTE_EXISTS",
            f"{found.rel} already exists; append to it, or overwrite it (which the user "
            "must confirm)",
            path=found.rel,
        )
    op = "create" if before is None else "overwrite"
    text = content if content.endswith("\n") or not content else content + "\n"
    after = encode_like(text, before)
    return [Change(op, found, before, after, summary=f"{op} {found.rel}")]


def plan_append(
    files: VaultFiles, path: str, text: str, *, heading: str | None = None, create: bool = False
) -> list[Change]:
    """Add `text` at the end of the note, or at the end of one heading's own text."""
    found = files.jail.note(path, for_write=True)
    if not found.abs.exists():
        try:
            found = files.locate(path)  # a note of that title elsewhere in the vault
        except ToolError as exc:
            if exc.code != "NOT_FOUND" or not create:
                raise
            title = (heading or "").strip().lstrip("#").strip()
            return plan_create(files, found.rel, f"## {title}\n\n{text}" if title else text)
        files.jail.note(found.rel, for_write=True)
    file = files.read_file(found)
    _refuse_rewrite(file, found.rel)
    before = file.text
    addition = text.strip("\n")
    if not addition.strip():
        raise ToolError("INVALID_ARGUMENTS", "there is no text to append")
    if heading is None:
        after = _join(before, addition)
    else:
        note = parse_note(found.rel, before)
        section = one_section(note, heading)
        lines = note.lines
        later = [h.line for h in note.headings if h.line > section.start]
        end = min([section.end, *later])
        while end > section.start + 1 and not lines[end - 1].strip():
            end -= 1
        head, tail = "".join(lines[:end]), "".join(lines[end:])
        newline = _newline(before)
        after = _join(head, addition) + ((newline + tail.lstrip("\r\n")) if tail.strip() else "")
    where = f" under '{heading}'" if heading else ""
    return [
        Change(
            "append",
            found,
            file.data,
            encode_like(after, file.data),
            summary=f"append to {found.rel}{where}",
        )
    ]


def one_section(note: Note, heading: str) -> Section:
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


def plan_replace_section(files: VaultFiles, path: str, heading: str, text: str) -> list[Change]:
    found = files.locate(path)
    files.jail.note(found.rel, for_write=True)
    file = files.read_file(found)
    _refuse_rewrite(file, found.rel)
    note = parse_note(found.rel, file.text)
    section = one_section(note, heading)
    lines = note.lines
    newline = _newline(file.text)
    # the heading line stays; everything under it (subsections too) is replaced
    body = text.strip("\n")
    replacement = [lines[section.start], *([f"{newline}{body}{newline}"] if body else []), newline]
    tail = lines[section.end :]
    if not tail:
        replacement[-1] = ""
    after = "".join([*lines[: section.start], *replacement, *tail])
    return [
        Change(
            "replace_section",
            found,
            file.data,
            encode_like(after, file.data),
            summary=f"replace the section '{section.heading.text}' of {found.rel}",
        )
    ]


def plan_delete(files: VaultFiles, path: str) -> list[Change]:
    found = files.locate(path)
    files.jail.note(found.rel, for_write=True)
    before = files.read_file(found).data
    return [Change("delete", found, before, None, summary=f"delete {found.rel}")]


def _cannot_update(note: Note, file: NoteFile, spans: list[str], where: VaultPath) -> Change:
    shown = ", ".join(sorted(set(spans))[:5])
    return Change(
        NOT_UPDATED,
        where,
        file.data,
        file.data,
        summary=(
            f"cannot update {len(spans)} link(s) in {note.path} ({shown}): it is not valid "
            "UTF-8 text, so it is never rewritten; those links will not find the note"
        ),
    )


def plan_move(
    files: VaultFiles, path: str, new_path: str, *, update_links: bool = True
) -> list[Change]:
    found = files.locate(path)
    files.jail.note(found.rel, for_write=True)
    if "/" not in new_path.strip().replace("\\", "/") and "/" in found.rel:
        new_path = f"{found.rel.rsplit('/', 1)[0]}/{new_path.strip()}"  # a rename in place
    target = files.jail.note(new_path, for_write=True)
    if target.rel == found.rel:
        raise ToolError("SAME_PATH", f"{found.rel} is already there")
    if target.abs.exists() and target.abs.resolve() != found.abs.resolve():
        raise ToolError("NOTE_EXISTS", f"{target.rel} already exists; pick another name")
    moving = files.read_file(found)
    changes: list[Change] = []
    skipped: list[Change] = []
    moved_bytes = moving.data
    if update_links:
        everything = files.note_files(undecodable=True)
        paths = [rel for rel, file in everything if file.listed]
        moved: Mapping[str, str] = {found.rel: target.rel}
        old_resolver = LinkResolver(paths)
        new_resolver = LinkResolver([moved.get(p, p) for p in paths])
        names = {note_title(found.rel).casefold(), note_title(target.rel).casefold()}
        parsed = [
            (note, file)
            for rel, file in everything
            if rel == found.rel or _may_name(file.text, names)
            for note in [files.parse_file(rel, file)]
            if note is not None
        ]
        for note, file in parsed:
            edits = relink_edits(
                note,
                moved.get(note.path, note.path),
                old_resolver,
                new_resolver,
                moved,
                file_exists=files.file_exists,
            )
            raw = note.raw
            for start, end, text in reversed(edits):
                raw = raw[:start] + text + raw[end:]
            if not edits or raw == note.raw:
                continue
            is_moving = note.path == found.rel
            if not file.utf8:
                where = found if is_moving else files.jail.note(note.path)
                spans = [note.raw[start:end] for start, end, _ in edits]
                skipped.append(_cannot_update(note, file, spans, where))
                continue
            if is_moving:
                moved_bytes = encode_like(raw, file.data)
                continue
            changes.append(
                Change(
                    "link_update",
                    files.jail.note(note.path),
                    file.data,
                    encode_like(raw, file.data),
                    summary=f"update {len(edits)} link(s) in {note.path}",
                )
            )
        changes += _other_files(files, found.rel, target.rel)
    move = Change(
        "move",
        found,
        moving.data,
        moved_bytes,
        new_path=target,
        summary=f"move {found.rel} to {target.rel}",
    )
    return [move, *changes, *skipped]


_CANVAS_FILE = re.compile(r'("file"\s*:\s*)"((?:[^"\\]|\\.)*)"')
CANVAS_SUFFIX, BASE_SUFFIX = ".canvas", ".base"


def relink_canvas(text: str, old: str, new: str) -> tuple[str, int]:
    """A JSON Canvas with its `file` nodes that showed `old` showing `new` (paths from the
    vault root). Only those strings change: the file keeps its own formatting."""
    count = 0

    def swap(match: re.Match[str]) -> str:
        nonlocal count
        try:
            value = json.loads(f'"{match.group(2)}"')
        except ValueError:
            return match.group(0)
        if value != old:
            return match.group(0)
        count += 1
        return match.group(1) + json.dumps(new, ensure_ascii=False)

    return _CANVAS_FILE.sub(swap, text), count


def _other_files(files: VaultFiles, old: str, new: str) -> list[Change]:
    """What a move of `old` to `new` does to files that are not notes: JSON Canvas `file`
    nodes are updated; a Base (`.base`) that names the note is listed, not rewritten (its
    filters are expressions: only the user can tell what they meant)."""
    title = note_title(old)
    changes: list[Change] = []
    for rel, path in files.iter_files():
        suffix = path.suffix.lower()
        if suffix not in (CANVAS_SUFFIX, BASE_SUFFIX):
            continue
        try:
            data = read_note_bytes(path, max_bytes=files.max_bytes)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        where = files.jail.existing_file(rel)
        if suffix == CANVAS_SUFFIX:
            after, count = relink_canvas(text, old, new)
            if count:
                changes.append(
                    Change(
                        "link_update",
                        where,
                        data,
                        after.encode("utf-8"),
                        summary=f"update {count} card(s) in the canvas {rel}",
                    )
                )
        elif title in text or old[: -len(".md")] in text:
            changes.append(
                Change(
                    NOT_UPDATED,
                    where,
                    data,
                    data,
                    summary=f"the base {rel} names {title!r} and may filter on it; bases "
                    "are not rewritten, check its filters",
                )
            )
    return changes


def _may_name(text: str, names: set[str]) -> bool:
    """Could `text` hold a link whose target the move changes? Every such link names the
    moved note by its old or its new title (a path ends in it; a markdown link may
    percent-encode it), so a note that names neither is not parsed at all."""
    folded = text.casefold()
    if any(name in folded for name in names):
        return True
    if "%" in folded:
        decoded = unquote(folded)
        return any(name in decoded for name in names)
    return False


def plan_template(
    files: VaultFiles,
    template: str,
    path: str,
    *,
    variables: dict[str, str] | None = None,
) -> tuple[VaultPath, list[Change]]:
    """A new note from a template. Date variables in `path` are filled too, so
    `Weekly/{{date:GGGG-[W]WW}} 周报` names this week's report by the vault's clock."""
    source = files.template_path(template)
    now = files.clock()
    target = render_template(path, title="", now=now, variables=variables)
    found = files.jail.note(target, for_write=True)
    text = render_template(
        files.read_text(source), title=note_title(found.rel), now=now, variables=variables
    )
    return source, plan_create(files, found.rel, text)


def plan_daily(
    files: VaultFiles, text: str | None, day: dt.date | None = None
) -> tuple[VaultPath, list[Change]]:
    found = files.daily_note_path(day)
    if found.abs.exists():
        if not text:
            return found, []
        return found, plan_append(files, found.rel, text)
    content = ""
    if files.daily_template:
        with suppress(ToolError):
            source = files.template_path(files.daily_template)
            when = (
                files.clock() if day is None else dt.datetime.combine(day, files.clock().timetz())
            )
            content = render_template(
                files.read_text(source), title=note_title(found.rel), now=when
            )
    if text:
        content = _join(content, text.strip("\n"))
    return found, plan_create(files, found.rel, content)


def describe(changes: list[Change]) -> GuardedPreview:
    """What a planned write would do, as the user sees it before confirming, with the
    state of the notes it was planned from (so a confirm can tell if they changed)."""
    summary = "; ".join(change.summary for change in changes)
    diffs = []
    for change in changes:
        if not change.writes:
            continue
        if change.op == "move" and change.before == change.after:
            assert change.new_path is not None
            diffs.append(f"rename {change.path.rel} -> {change.new_path.rel}\n")
            continue
        new = change.new_path.rel if change.new_path else None
        diffs.append(unified_diff(change.before_text, change.after_text, change.path.rel, new))
    return GuardedPreview(summary=summary, diff="".join(diffs) or None, state=plan_state(changes))


def plan_state(changes: list[Change]) -> dict[str, str | None]:
    """Each file a plan reads or creates, with the hash of its content as planned from
    (None: absent). Two plans with the same state were made from the same files."""
    state: dict[str, str | None] = {}
    for change in changes:
        state[change.path.rel] = bytes_hash(change.before) if change.before is not None else None
        if change.new_path is not None and change.writes:
            state[change.new_path.rel] = None
    return state


def check_preview(changes: list[Change], expect: dict[str, str | None]) -> None:
    """Refuse (STALE_PREVIEW) a plan made from other content than the preview was."""
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
