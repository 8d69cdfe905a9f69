"""The path jail (SPEC V3): every path a user or model gives resolves inside the vault.

Paths are taken relative to the vault root. Refused, each with an error that says why:
absolute paths and `~`, `..` components, anything that resolves outside the root through
a symlink, Obsidian's settings folder and other hidden folders (`.obsidian/`, `.git/`,
`.trash/`), and non-markdown targets. A missing extension means a note: `.md` is added.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tools.base import ToolError
from tools.vault.notes import MARKDOWN_SUFFIX

PROTECTED = {
    ".obsidian": "Obsidian's settings folder",
    ".git": "the vault's git repository",
    ".trash": "Obsidian's trash folder",
}
# Obsidian refuses these in a note's name (its links would break on them: `#` starts a
# heading, `^` a block, `|` an alias, `[ ]` the link itself); the OS-level ones after
_OBSIDIAN_FORBIDDEN = re.compile(r"[#^\[\]|\\:]")
_OS_FORBIDDEN = re.compile(r'[\x00-\x1f\x7f<>"?*]')
_RESERVED = re.compile(r"^(?:CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(?:\..*)?$", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:")
_SHORT_SUFFIX = re.compile(r"^\.(?=[a-z0-9]*[a-z])[a-z0-9]{1,4}$")
_OTHER_EXTENSIONS = (
    ".markdown .canvas .base .excalidraw .txt .pdf .png .jpg .jpeg .gif .svg .webp .bmp .heic "
    ".mp3 .mp4 .m4a .wav .webm .mov .csv .json .yaml .yml .toml .html .htm .xml .docx .xlsx "
    ".pptx .zip .py .js .ts .sh .db .sqlite"
)
OTHER_FILES = frozenset(_OTHER_EXTENSIONS.split())
MAX_NAME_BYTES = 255


@dataclass(frozen=True)
class VaultPath:
    """A path proven to lie inside the vault: `rel` (POSIX, from the root) and `abs`."""

    rel: str
    abs: Path

    def __str__(self) -> str:
        return self.rel


class VaultJail:
    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def _parts(self, path: str, what: str) -> list[str]:
        raw = str(path)
        text = raw.strip().replace("\\", "/")
        if "\x00" in text:
            raise ToolError("INVALID_PATH", f"the {what} {raw!r} contains a NUL character")
        if text.startswith(("/", "~")) or _DRIVE.match(text):
            raise ToolError(
                "PATH_OUTSIDE_VAULT",
                f"{raw!r} is an absolute path; give the {what} relative to the vault root "
                "(e.g. 'Projects/Plan.md')",
            )
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise ToolError(
                "PATH_OUTSIDE_VAULT",
                f"{raw!r} uses '..'; paths stay inside the vault, relative to its root",
            )
        for part in parts:
            self._check_component(part, raw)
            self._check_length(part, raw)
        return parts

    @staticmethod
    def _check_length(part: str, raw: str) -> None:
        # no file system holds such a name: refuse it rather than fail in stat() (ENAMETOOLONG)
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise ToolError("INVALID_PATH", f"{raw!r}: the name {part[:40]!r}... is too long")

    @staticmethod
    def _check_component(part: str, raw: str) -> None:
        if part.casefold() in PROTECTED:
            raise ToolError(
                "PATH_FORBIDDEN",
                f"{raw!r} is inside {part}/ ({PROTECTED[part.casefold()]}), which the "
                "assistant never reads or writes",
            )
        if part.startswith("."):
            raise ToolError(
                "PATH_FORBIDDEN", f"{raw!r} is inside the hidden folder or file {part!r}"
            )

    @staticmethod
    def _check_name(part: str, raw: str) -> None:
        """A name a note or folder may be given (create, move): Obsidian's rules, then
        the file systems' (Windows' included: the vault may be synced to one)."""
        found = _OBSIDIAN_FORBIDDEN.search(part)
        if found:
            raise ToolError(
                "INVALID_PATH",
                f"{raw!r}: a note or folder name cannot contain {found.group(0)!r}; Obsidian "
                r"forbids # ^ [ ] | \ : in names (links to the note would break)",
                name=part,
            )
        found = _OS_FORBIDDEN.search(part)
        if found:
            shown = repr(found.group(0))
            raise ToolError(
                "INVALID_PATH",
                f"{raw!r}: a note or folder name cannot contain {shown}; file systems "
                r'forbid < > " ? * and control characters',
                name=part,
            )
        stem = part[: -len(MARKDOWN_SUFFIX)] if part.lower().endswith(MARKDOWN_SUFFIX) else part
        if _RESERVED.match(stem) or stem.endswith((".", " ")):
            raise ToolError(
                "INVALID_PATH",
                f"{raw!r}: {stem!r} cannot be a file name on Windows (a reserved name, or a "
                "name ending in a dot or a space)",
                name=part,
            )

    def _inside(self, candidate: Path, raw: str) -> VaultPath:
        """Resolve symlinks and prove the result is still inside the root."""
        resolved = candidate.resolve(strict=False)
        if not resolved.is_relative_to(self.root):
            raise ToolError(
                "PATH_OUTSIDE_VAULT",
                f"{raw!r} leads outside the vault through a symbolic link",
            )
        rel = resolved.relative_to(self.root).as_posix()
        for part in PurePosixPath(rel).parts:
            self._check_component(part, raw)
        return VaultPath("" if rel == "." else rel, resolved)

    def note(self, path: str, *, for_write: bool = False) -> VaultPath:
        """A note path: `.md` added when there is no extension; any other extension refused."""
        parts = self._parts(path, "note path")
        if not parts:
            raise ToolError("INVALID_PATH", "a note path is needed, e.g. 'Inbox/Idea.md'")
        suffix = PurePosixPath(parts[-1]).suffix
        if suffix.lower() != MARKDOWN_SUFFIX:
            titled = self.root.joinpath(*parts[:-1], parts[-1] + MARKDOWN_SUFFIX)
            looks_other = suffix.lower() in OTHER_FILES or _SHORT_SUFFIX.match(suffix)
            if looks_other and not (not for_write and titled.is_file()):
                raise ToolError(
                    "NOT_MARKDOWN",
                    f"{path!r} is a {suffix} file; only markdown notes (.md) can be "
                    f"{'written' if for_write else 'read'} (a note titled "
                    f"{parts[-1]!r} is {parts[-1] + MARKDOWN_SUFFIX!r}: give that name)",
                )
            parts[-1] += MARKDOWN_SUFFIX  # a title, dots and all (`Node.js`)
            self._check_length(parts[-1], str(path))
        if for_write:
            for part in parts:
                self._check_name(part, str(path))
                if len(part.encode("utf-8")) > MAX_NAME_BYTES:
                    raise ToolError(
                        "INVALID_PATH", f"{path!r}: the name {part[:40]!r}... is too long"
                    )
        found = self._inside(self.root.joinpath(*parts), str(path))
        if found.abs.suffix.lower() != MARKDOWN_SUFFIX:
            raise ToolError("NOT_MARKDOWN", f"{path!r} resolves to a file that is not markdown")
        return found

    def existing_file(self, path: str) -> VaultPath:
        """Any file inside the vault (a canvas a move updates, a journaled path): the
        same jail, without the markdown-only rule. Not for paths a model chose."""
        parts = self._parts(path, "path")
        if not parts:
            raise ToolError("INVALID_PATH", "a file path is needed")
        return self._inside(self.root.joinpath(*parts), str(path))

    def folder(self, path: str | None) -> VaultPath:
        """A folder inside the vault; empty, '.' or '/' is the root."""
        if path is None or path.strip() in ("", ".", "/"):
            return VaultPath("", self.root)
        parts = self._parts(path, "folder")
        return self._inside(self.root.joinpath(*parts), path)

    def relative(self, path: str | Path) -> str | None:
        """A path the file system reported (absolute or relative) as a vault-relative path,
        or None when it lies outside the vault. For watchers, not for model input."""
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            return candidate.resolve(strict=False).relative_to(self.root).as_posix()
        except ValueError:
            try:
                return candidate.relative_to(self.root).as_posix()
            except ValueError:
                return None
