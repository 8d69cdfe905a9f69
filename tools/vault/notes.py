"""The vault model (SPEC V1): what a markdown note holds, read the way Obsidian reads it.

A note is YAML frontmatter (parsed with python-frontmatter's YAML handler; broken
frontmatter is reported and the note stays readable), a body with ATX headings and their
sections, `[[wikilinks]]` (with `#heading` and `|alias`), and tags from the frontmatter
and inline `#tags`. Code blocks, inline code and comments hold no headings, links or tags.
`relink` rewrites every form of link (wikilinks, embeds, markdown links, references)
when notes move, so that each still points at the note it pointed at.
Every function here is pure: paths in, values out; the `Vault` does the file I/O.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

import yaml
from frontmatter.default_handlers import SafeLoader, YAMLHandler

MARKDOWN_SUFFIX = ".md"
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
CHUNK_MAX_CHARS = 1200
NOT_UTF8_REASON = "not valid UTF-8 text"
# a frontmatter block is a few properties: past these it is refused, not parsed (a
# 311-byte YAML alias bomb expands to millions of nodes)
FRONTMATTER_MAX_CHARS = 64 * 1024
FRONTMATTER_MAX_NODES = 20_000

# a fence may sit in a blockquote or callout (`> ```md`) or a list item (`- ```` or
# indented under one): the container's markers come first
_CONTAINER = re.compile(r"^((?:[ \t]*>)*)[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)?[ \t]*")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})[ \t]+(.*?)[ \t]*$")
_HEADING_CLOSE = re.compile(r"[ \t]+#+$")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_COMMENTS = re.compile(r"<!--.*?-->|%%.*?%%", re.DOTALL)
_MD_LINK_URL = re.compile(r"\]\([^)\s]*\)|<?https?://\S+")
_INLINE_TAG = re.compile(r"(?<![\w/#&\]])#([\w/-]*[^\W\d_][\w/-]*)", re.UNICODE)
# `[text](dest "title")` / `![alt](<dest with spaces>)`: one level of brackets in the text,
# balanced parentheses in a bare destination
_MD_LINK = re.compile(
    r"!?\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]"
    r"\([ \t]*(?:<([^<>\n]*)>|((?:[^()\s]|\([^()\s]*\))+))"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)
# `[label]: dest` reference definitions (not `[^1]:` footnotes)
_MD_REFERENCE = re.compile(r"^[ ]{0,3}\[(?!\^)[^\]\n]+\]:[ \t]*(?:<([^<>\n]*)>|(\S+))")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# what a markdown link destination cannot hold as is
_URL_ESCAPES = {
    "%": "%25",
    " ": "%20",
    "\t": "%09",
    "(": "%28",
    ")": "%29",
    "<": "%3C",
    ">": "%3E",
    "#": "%23",
    "[": "%5B",
    "]": "%5D",
}


@dataclass(frozen=True)
class WikiLink:
    """`[[target#heading|alias]]`; `embed` for `![[...]]`; `line` counts from 0 in the raw text."""

    target: str
    heading: str | None
    alias: str | None
    embed: bool
    line: int
    raw: str


@dataclass(frozen=True)
class Heading:
    """`text` is the heading as Obsidian shows it (inline code, links and emphasis as
    their words); `source` is what the line says after its `#`s."""

    level: int
    text: str
    line: int
    source: str = ""


@dataclass(frozen=True)
class Section:
    """One heading and everything under it up to the next heading of the same or a higher
    level; `start` is the heading's line, `end` the first line after the section."""

    heading: Heading
    start: int
    end: int


@dataclass
class Chunk:
    """A piece of a note for the index: one heading's own text (subsections are their own
    chunks), split further when long. `hash` covers everything that is embedded."""

    path: str
    heading: str
    text: str
    ordinal: int
    hash: str = ""
    embed_text: str = ""

    @property
    def index_text(self) -> str:
        """What full text search indexes: the embedded text (links as the reader sees
        them) and the names of the notes the links point at."""
        names = link_target_names(self.text)
        return f"{self.embed_text}\n{' '.join(names)}" if names else self.embed_text


@dataclass
class Note:
    path: str
    raw: str
    frontmatter: dict[str, Any]
    frontmatter_error: str | None
    body_start: int
    headings: list[Heading] = field(default_factory=list)
    links: list[WikiLink] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return note_title(self.path)

    @property
    def body(self) -> str:
        return self.raw[self.body_start :]

    @property
    def lines(self) -> list[str]:
        return self.raw.splitlines(keepends=True)

    @property
    def body_line(self) -> int:
        """The index of the body's first line in `lines`."""
        return self.raw.count("\n", 0, self.body_start)


def note_title(path: str) -> str:
    """Obsidian's title of a note is its file name without `.md`."""
    name = PurePosixPath(path).name
    return name[: -len(MARKDOWN_SUFFIX)] if name.lower().endswith(MARKDOWN_SUFFIX) else name


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- frontmatter ---------------------------------------------------------------------------


class FrontmatterRefused(yaml.YAMLError):
    """Frontmatter too large, or aliases that would expand past the node limit."""


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """How many nodes the document holds once every alias is expanded (as `jsonable`
    and JSON output would expand it), counted without expanding: each distinct node's
    size is computed once. Stops early past `limit`; a cycle counts as past it."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if done:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in children)
            sizes[key] = min(size, limit + 1)
            if size > limit and node is root:
                return size
            continue
        if key in open_nodes:
            return limit + 1  # a node that contains itself never finishes expanding
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                return limit + 1
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


class _BoundedLoader(SafeLoader):  # type: ignore[misc, valid-type]
    """python-frontmatter's safe loader (the C one when available) that refuses a
    document whose aliases expand past `FRONTMATTER_MAX_NODES` before constructing it."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, FRONTMATTER_MAX_NODES)
        if size > FRONTMATTER_MAX_NODES:
            raise FrontmatterRefused(
                f"frontmatter expands past {FRONTMATTER_MAX_NODES} values (YAML aliases); "
                "not parsed"
            )
        return self.construct_document(node)


def load_frontmatter(block: str) -> Any:
    """The YAML of a frontmatter block, within the size and alias limits."""
    if len(block) > FRONTMATTER_MAX_CHARS:
        raise FrontmatterRefused(
            f"frontmatter is {len(block)} characters, over the limit of {FRONTMATTER_MAX_CHARS}"
        )
    return yaml.load(block, Loader=_BoundedLoader)


def split_frontmatter(raw: str) -> tuple[dict[str, Any], str | None, int]:
    """(data, error, body offset). A note without frontmatter has ({}, None, 0); broken
    YAML gives ({}, why, offset after the block) so the body still reads right. Any
    failure to read the block (bad YAML, `date: 2026-13-45`, an alias bomb, nesting
    deeper than the parser goes) is one note's error, never an exception."""
    handler = YAMLHandler()
    text = raw[1:] if raw.startswith("\ufeff") else raw
    bom = len(raw) - len(text)
    if not handler.detect(text):
        return {}, None, 0
    try:
        block, content = handler.split(text)
    except ValueError:
        return {}, "frontmatter starts with --- but has no closing --- line", 0
    offset = bom + len(text) - len(content)
    if content.startswith("\r\n"):
        offset += 2
    elif content.startswith("\n"):
        offset += 1
    try:
        data = load_frontmatter(block)
    except FrontmatterRefused as exc:
        return {}, str(exc), offset
    except yaml.YAMLError as exc:
        return {}, f"frontmatter is not valid YAML: {' '.join(str(exc).split())}", offset
    except RecursionError:
        return {}, "frontmatter is nested too deeply to read", offset
    except Exception as exc:  # noqa: BLE001 - e.g. ValueError for a date like 2026-13-45
        why = " ".join(str(exc).split())[:200]
        return {}, f"frontmatter has a value that cannot be read ({why})", offset
    if data is None:
        return {}, None, offset
    if not isinstance(data, dict):
        return {}, f"frontmatter is a {type(data).__name__}, not key: value pairs", offset
    return {str(key): value for key, value in data.items()}, None, offset


def jsonable(value: Any) -> Any:
    """Frontmatter as JSON data: dates as ISO strings, anything odd as its text."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(item) for item in value]
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def frontmatter_tags(data: dict[str, Any]) -> list[str]:
    """`tags:` (or `tag:`) as a list or a comma/space separated string; `#` optional."""
    found: list[str] = []
    for key in ("tags", "tag"):
        value = data.get(key)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is None:
                continue
            for part in re.split(r"[,\s]+", str(item)):
                part = part.strip().lstrip("#")
                if part:
                    found.append(part)
    return found


# -- body structure ------------------------------------------------------------------------


def _code_lines(lines: Sequence[str]) -> set[int]:
    """Lines inside fenced code blocks (fences included), also inside blockquotes,
    callouts and list items. A fence opened inside a blockquote ends with it."""
    inside: set[int] = set()
    fence: str | None = None
    depth = 0
    for number, line in enumerate(lines):
        container = _CONTAINER.match(line)
        assert container is not None  # the pattern matches every line
        quotes = container.group(1).count(">")
        rest = line[container.end() :]
        match = _FENCE.match(rest)
        if fence is None:
            if match and not (match.group(1)[0] == "`" and "`" in rest[match.end() :]):
                fence, depth = match.group(1), quotes
                inside.add(number)
            continue
        if depth and quotes < depth:
            fence = None  # the blockquote holding the fence ended
            continue
        inside.add(number)
        if match and match.group(1).startswith(fence) and not rest.strip().strip(fence[0]):
            fence = None
    return inside


def _blank(text: str) -> str:
    """Spaces for every character but line breaks: offsets and line numbers stay put."""
    return "".join(ch if ch in _LINE_BREAKS else " " for ch in text)


def _masked_lines(raw: str) -> list[str]:
    """The raw lines (ends kept) with comments and inline code blanked out; fenced code
    lines are left to the caller (`_code_lines`)."""
    text = _COMMENTS.sub(lambda m: _blank(m.group(0)), raw)
    return [
        _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for line in text.splitlines(keepends=True)
    ]


def _prose_lines(raw: str, first_line: int) -> list[tuple[int, str]]:
    """(line number, text) of body lines outside code, with inline code and comments blanked."""
    lines = [line.rstrip(_LINE_BREAKS) for line in _masked_lines(raw)]
    code = _code_lines(lines)
    return [
        (number, line)
        for number, line in enumerate(lines)
        if number >= first_line and number not in code
    ]


def _link_name(inner: str) -> tuple[str, str]:
    """A wikilink's inside as (target part, alias). In a table the alias separator is
    escaped (`[[Note\\|shown]]`): the backslash belongs to neither part."""
    target, bar, alias = inner.partition("|")
    if bar and target.endswith("\\"):
        target = target[:-1]
    return target, alias


def parse_links_in(prose: Iterable[tuple[int, str]]) -> list[WikiLink]:
    links = []
    for number, line in prose:
        for match in _WIKILINK.finditer(line):
            inner = match.group(2)
            target, alias = _link_name(inner)
            target, _, heading = target.partition("#")
            target = target.strip()
            links.append(
                WikiLink(
                    target=target,
                    heading=heading.strip() or None,
                    alias=alias.strip() or None,
                    embed=match.group(1) == "!",
                    line=number,
                    raw=match.group(0),
                )
            )
    return links


def parse_links(text: str) -> list[WikiLink]:
    """The wikilinks of a piece of markdown (outside code)."""
    return parse_links_in(_prose_lines(text, 0))


def parse_note(path: str, raw: str) -> Note:
    """Parse one note. Never raises on content: problems are reported on the note."""
    data, error, body_start = split_frontmatter(raw)
    note = Note(
        path=path, raw=raw, frontmatter=data, frontmatter_error=error, body_start=body_start
    )
    prose = _prose_lines(raw, note.body_line)
    tags = frontmatter_tags(data)
    raw_lines: list[str] | None = None
    for number, line in prose:
        match = _HEADING.match(line)
        if match:
            if raw_lines is None:
                raw_lines = raw.splitlines()
            # the heading's words come from the raw line: inline code, links and
            # emphasis are part of a heading's text (`## `ob sync-setup``)
            written = _HEADING.match(raw_lines[number].rstrip(_LINE_BREAKS))
            source = written.group(2) if written else match.group(2)
            shown = heading_text(source)
            note.headings.append(Heading(len(match.group(1)), shown, number, source.strip()))
        scan = _WIKILINK.sub(" ", _MD_LINK_URL.sub(" ", line))
        tags.extend(tag.rstrip("/") for tag in _INLINE_TAG.findall(scan))
    note.links = parse_links_in(prose)
    note.tags = unique_tags(tags)
    return note


def unique_tags(tags: Iterable[str]) -> list[str]:
    """Tags are case-insensitive: keep the first spelling of each."""
    seen: dict[str, str] = {}
    for tag in tags:
        seen.setdefault(tag.casefold(), tag)
    return list(seen.values())


def tag_matches(tags: Iterable[str], wanted: str) -> bool:
    """`project` matches `project` and nested `project/alpha`, case-insensitively."""
    wanted = wanted.strip().lstrip("#").casefold()
    return any(t.casefold() == wanted or t.casefold().startswith(wanted + "/") for t in tags)


def sections(note: Note) -> list[Section]:
    found = []
    line_count = len(note.lines)
    for index, heading in enumerate(note.headings):
        end = line_count
        for later in note.headings[index + 1 :]:
            if later.level <= heading.level:
                end = later.line
                break
        found.append(Section(heading, heading.line, end))
    return found


_HEADING_MARKUP = [
    (re.compile(r"(`+)(.+?)\1"), r"\2"),  # inline code: its content
    (re.compile(r"!?\[\[([^\[\]|]*?)(?:\\?\|([^\[\]]*))?\]\]"), None),  # wikilinks
    (re.compile(r"!?\[([^\[\]]*)\]\([^)]*\)"), r"\1"),  # markdown links: their text
    (re.compile(r"(\*\*|__|~~|==)(.+?)\1"), r"\2"),  # strong, strike, highlight
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)"), r"\1"),  # _emphasis_
]
_BLOCK_ID_END = re.compile(r"\s+\^[A-Za-z0-9-]+$")


def _shown_link(match: re.Match[str]) -> str:
    target, alias = match.group(1), match.group(2)
    if alias:
        return alias
    name, _, heading = target.partition("#")
    return f"{name} > {heading}" if name and heading else (name or heading)


def heading_text(source: str) -> str:
    """A heading as Obsidian shows it: closing `#`s and a block id dropped, inline code,
    links and emphasis as their words."""
    text = _BLOCK_ID_END.sub("", _HEADING_CLOSE.sub("", source.strip())).strip()
    for pattern, replacement in _HEADING_MARKUP:
        text = pattern.sub(_shown_link if replacement is None else replacement, text)
    return " ".join(text.split())


def _heading_key(text: str) -> str:
    return " ".join(text.strip().lstrip("#").split()).casefold()


def find_sections(note: Note, heading: str) -> list[Section]:
    """Sections whose heading matches `heading` (case-insensitive, `#`s optional), as
    shown (`ob sync-setup`) or as written (`` `ob sync-setup` ``)."""
    wanted = _heading_key(heading)
    return [
        section
        for section in sections(note)
        if wanted
        in (_heading_key(section.heading.text), _heading_key(section.heading.source or ""))
    ]


def section_text(note: Note, section: Section, *, with_heading: bool = True) -> str:
    lines = note.lines[section.start if with_heading else section.start + 1 : section.end]
    return "".join(lines)


# -- links across the vault ------------------------------------------------------------------


def _without_md(path: str) -> str:
    return path[: -len(MARKDOWN_SUFFIX)] if path.lower().endswith(MARKDOWN_SUFFIX) else path


class LinkResolver:
    """Resolves link targets to note paths the way Obsidian does: a bare name finds the note
    with that file name anywhere (same folder first, then the shortest path); a name with a
    folder is a path from the vault root (or from the linking note's folder)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = sorted(paths)
        self._by_path = {_without_md(p).casefold(): p for p in self.paths}
        self._by_name: dict[str, list[str]] = {}
        for path in self.paths:
            self._by_name.setdefault(note_title(path).casefold(), []).append(path)

    def resolve(self, target: str, source: str | None = None) -> str | None:
        target = _without_md(target.strip().replace("\\", "/")).strip("/")
        if not target:
            return source  # [[#Heading]] points into the same note
        key = target.casefold()
        if "/" in target:
            if source is not None:
                relative = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
                if relative.casefold() in self._by_path:
                    return self._by_path[relative.casefold()]
            return self._by_path.get(posixpath.normpath(target).casefold())
        candidates = self._by_name.get(key, [])
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        if source is not None:
            folder = PurePosixPath(source).parent
            for candidate in candidates:
                if PurePosixPath(candidate).parent == folder:
                    return candidate
        return min(candidates, key=lambda p: (p.count("/"), len(p), p))

    def has(self, path: str) -> bool:
        """Is there a note at `path` (from the vault root, `.md` optional)?"""
        return _without_md(path).casefold() in self._by_path

    def unique_name(self, path: str) -> bool:
        return len(self._by_name.get(note_title(path).casefold(), [])) == 1

    def link_text(self, path: str) -> str:
        """How a link to `path` is written: the bare name when it is unambiguous."""
        return note_title(path) if self.unique_name(path) else _without_md(path)


@dataclass(frozen=True)
class Backlink:
    source: str
    line: int
    link: str


def backlinks(notes: Iterable[Note], target: str, resolver: LinkResolver) -> list[Backlink]:
    """Links in `notes` (other than `target` itself) that resolve to `target`."""
    found = []
    for note in notes:
        if note.path == target:
            continue
        for link in note.links:
            if link.target and resolver.resolve(link.target, note.path) == target:
                found.append(Backlink(note.path, link.line + 1, link.raw))
    return found


@dataclass(frozen=True)
class LinkRef:
    """Where a link's target sits in a note's raw text: `start:end` is the part a move
    rewrites (a wikilink's name, a markdown destination's path), so `#heading`, `|alias`,
    `<...>` and titles stay as written. `target` is the path as meant (URL-decoded)."""

    kind: str  # "wiki" or "markdown"
    start: int
    end: int
    target: str
    angle: bool = False


def link_refs(raw: str, body_line: int = 0) -> list[LinkRef]:
    """Every link to a note or file outside code: wikilinks and embeds (also in the
    frontmatter, where Obsidian allows them in properties), markdown links and images,
    and reference definitions. URLs (`https:`, `mailto:`, ...) and `#anchor`-only links
    are left out."""
    masked = _masked_lines(raw)
    code = _code_lines([line.rstrip(_LINE_BREAKS) for line in masked])
    refs: list[LinkRef] = []
    offset = 0
    for number, line in enumerate(masked):
        base, offset = offset, offset + len(line)
        if number in code:
            continue
        for match in _WIKILINK.finditer(line):
            name = _link_name(match.group(2))[0].partition("#")[0]
            lead = len(name) - len(name.lstrip())
            if name.strip():
                start = base + match.start(2) + lead
                refs.append(LinkRef("wiki", start, start + len(name.strip()), name.strip()))
        if number < body_line:
            continue  # frontmatter: only wikilinks are links there
        prose = _WIKILINK.sub(lambda m: " " * len(m.group(0)), line)
        found = [*_MD_LINK.finditer(prose), *_MD_REFERENCE.finditer(prose)]
        for match in found:
            angle = match.group(1) is not None
            group = 1 if angle else 2
            path = match.group(group).partition("#")[0]
            target = unquote(path).strip()
            if not target or _URL_SCHEME.match(target) or target.startswith("//"):
                continue
            start = base + match.start(group)
            refs.append(LinkRef("markdown", start, start + len(path), target, angle))
    return sorted(refs, key=lambda ref: ref.start)


def _encode_destination(path: str) -> str:
    return "".join(_URL_ESCAPES.get(ch, ch) for ch in path)


def _link_path(
    ref: LinkRef, source: str, new_source: str, dest: str, old: LinkResolver, new: LinkResolver
) -> str | None:
    """How `ref` is spelled once it must point at the note `dest` (its path after the
    move), in the link's own style: a bare name stays a bare name while that is
    unambiguous, a path relative to the linking note stays relative, a path from the vault
    root stays one; `.md` is kept or left off as it was. None: no spelling resolves."""
    target = ref.target.replace("\\", "/")
    shown = dest if target.lower().endswith(MARKDOWN_SUFFIX) else _without_md(dest)
    absolute = ("/" if target.startswith("/") else "") + shown
    candidates = [absolute]
    if "/" not in target:
        candidates.insert(0, PurePosixPath(shown).name)
    else:
        old_folder = posixpath.dirname(source)
        relative = posixpath.normpath(posixpath.join(old_folder, _without_md(target)))
        if target.startswith(("./", "../")) or (old_folder and old.has(relative)):
            path = posixpath.relpath(shown, posixpath.dirname(new_source) or ".")
            if target.startswith("./") and not path.startswith("../"):
                path = "./" + path
            candidates.insert(0, path)
    for candidate in candidates:
        if new.resolve(candidate, new_source) == dest:
            return (
                _encode_destination(candidate)
                if ref.kind == "markdown" and not ref.angle
                else candidate
            )
    return None


def relink(
    note: Note,
    new_source: str,
    old: LinkResolver,
    new: LinkResolver,
    moved: Mapping[str, str],
    *,
    file_exists: Callable[[str], bool] | None = None,
) -> tuple[str, int]:
    """The note's text after notes moved (`moved`: old path -> new path; the note itself
    may be one of them, landing at `new_source`): every link that pointed at a note still
    points at it, whatever its form (wikilink, embed, markdown link, reference), with
    headings, aliases, anchors and titles kept. With `file_exists`, relative links to
    attachments are kept pointing at them when the note itself changes folder. Code and
    comments are left alone. Returns (text, how many links changed)."""
    edits = relink_edits(note, new_source, old, new, moved, file_exists=file_exists)
    raw = note.raw
    for start, end, text in reversed(edits):
        raw = raw[:start] + text + raw[end:]
    return raw, len(edits)


def relink_edits(
    note: Note,
    new_source: str,
    old: LinkResolver,
    new: LinkResolver,
    moved: Mapping[str, str],
    *,
    file_exists: Callable[[str], bool] | None = None,
) -> list[tuple[int, int, str]]:
    """The edits `relink` makes: (start, end, new text) in the raw text, in order."""
    edits: list[tuple[int, int, str]] = []
    old_folder = posixpath.dirname(note.path)
    new_folder = posixpath.dirname(new_source)
    for ref in link_refs(note.raw, note.body_line):
        was = old.resolve(ref.target, note.path)
        if was is None:
            if file_exists is None or old_folder == new_folder or "/" not in ref.target:
                continue
            attachment = posixpath.normpath(posixpath.join(old_folder, ref.target))
            if attachment.startswith("../") or not file_exists(attachment):
                continue
            path = posixpath.relpath(attachment, new_folder or ".")
            if ref.kind == "markdown" and not ref.angle:
                path = _encode_destination(path)
            edits.append((ref.start, ref.end, path))
            continue
        dest = moved.get(was, was)
        if new.resolve(ref.target, new_source) == dest:
            continue
        text = _link_path(ref, note.path, new_source, dest, old, new)
        if text is not None:
            edits.append((ref.start, ref.end, text))
    return edits


# -- files that are not notes ----------------------------------------------------------------


class NotANote(OSError):
    """A file that is not read as a note; the message is the reason."""


def readable_name(rel: str) -> str:
    """A path as text that can be stored and shown: bytes that are not UTF-8 (kept by
    Python as lone surrogates) become `\\xNN` escapes."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def name_problem(rel: str) -> str | None:
    """Why a file name cannot be a note's name (None when it can)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return "the file name is not valid UTF-8"
    return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def read_note_bytes(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`, else `NotANote`. Opened without
    blocking and checked after opening: a FIFO named `x.md` would hang a plain open, and
    a file swapped for one between a stat and the open is caught too."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotANote(f"{_kind(info.st_mode)}, not a note")
        if info.st_size > max_bytes:
            raise NotANote(_too_large(info.st_size, max_bytes))
        chunks = []
        left = max_bytes + 1
        while left > 0:
            data = os.read(fd, min(left, 1 << 20))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise NotANote(_too_large(len(data), max_bytes))
        return data
    finally:
        os.close(fd)


def _too_large(size: int, max_bytes: int) -> str:
    return f"too large ({size / 1_048_576:.1f} MB > {max_bytes / 1_048_576:.1f} MB)"


def skip_reason(
    path: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    size: int | None = None,
    peek: bool = True,
    mode: int | None = None,
) -> str | None:
    """Why a file in the vault is not a note: non-markdown, not a regular file, huge, or
    (when `peek`ing at its first bytes) binary; None for a note."""
    if path.suffix.lower() != MARKDOWN_SUFFIX:
        return f"not markdown ({path.suffix or 'no extension'})"
    if mode is None or size is None:
        info = path.stat()
        mode, size = info.st_mode, info.st_size
    if not stat.S_ISREG(mode):
        return f"{_kind(mode)}, not a note"
    if size > max_bytes:
        return _too_large(size, max_bytes)
    if not peek:
        return None
    try:
        return head_reason(read_note_bytes(path, max_bytes=max_bytes))
    except NotANote as exc:
        return str(exc)


def head_reason(data: bytes) -> str | None:
    """Why a markdown file's bytes are not a note, judged by the first 8 KiB: binary
    (NUL bytes) or not UTF-8 there. Odd bytes further on keep it a note (one that is
    never rewritten)."""
    head = data[:8192]
    if b"\x00" in head:
        return "binary content (NUL bytes)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not merely a character cut at the 8 KiB boundary
            return NOT_UTF8_REASON
    return None


# -- text as a reader sees it (for the index and snippets) ------------------------------------

_SHOWN_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_SHOWN_MD_LINK = re.compile(r"(!?)\[([^\[\]\n]*)\]\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)")
_BLOCK_ID = re.compile(r"(?<!\S)\^[A-Za-z0-9-]+(?=\s*$)", re.MULTILINE)


def _wikilink_shown(match: re.Match[str]) -> str:
    target, alias = _link_name(match.group(1))
    if alias.strip():
        return alias.strip()
    name, _, heading = target.partition("#")
    name = PurePosixPath(_without_md(name.strip())).name if name.strip() else ""
    heading = "" if heading.strip().startswith("^") else heading.strip()
    return " ".join(part for part in (name, heading) if part)


def shown_text(text: str) -> str:
    """Markdown with links as a reader sees them: a wikilink as its alias (else its
    note's name and heading), a markdown link as its text; block ids (`^id`) dropped.
    A chunk whose only change is where a link points embeds the same text (and keeps its
    vector); snippets never highlight inside link syntax."""
    text = _SHOWN_WIKILINK.sub(_wikilink_shown, text)
    text = _SHOWN_MD_LINK.sub(lambda m: m.group(2), text)
    return _BLOCK_ID.sub("", text)


def link_target_names(text: str) -> list[str]:
    """The names of the notes `text` links to, where the link shows other words."""
    names: list[str] = []
    for match in _SHOWN_WIKILINK.finditer(text):
        target, alias = _link_name(match.group(1))
        name = PurePosixPath(_without_md(target.partition("#")[0].strip())).name
        if alias.strip() and name and name not in names:
            names.append(name)
    return names


def chunk_embed_text(title: str, heading: str, piece: str) -> str:
    """What a chunk embeds: the note's title, the heading trail, the text as shown."""
    if not piece:
        return title
    shown = shown_text(piece)
    return f"{title}\n{heading}\n{shown}" if heading else f"{title}\n{shown}"


# -- chunks for the index --------------------------------------------------------------------


def _natural_cut(unit: str) -> bool:
    """May a piece end after this block? Decided by how the block begins, not by where
    the piece began or how the block ends, so editing a line moves no cut. About one
    block in three qualifies."""
    start = unit.strip()[:32]
    digest = hashlib.blake2b(start.encode("utf-8"), digest_size=2).digest()
    return int.from_bytes(digest, "big") % 3 == 0


def _split_long(text: str, limit: int) -> list[str]:
    """Split at blank lines, then lines, then hard, so every piece is at most `limit`.
    A piece of two blocks or more ends at a block `_natural_cut` picks: editing a line
    changes no block count and no cut, so it changes one piece (its hash, its embedding),
    not every piece after it as filling pieces up to the limit would. Only an edit that
    pushes a piece past the limit moves cuts, and only up to the next natural one."""
    if len(text) <= limit:
        return [text]
    units: list[str] = []
    for block in re.split(r"(?<=\n)(?=\s*\n)", text):
        for part in [block] if len(block) <= limit else block.splitlines(keepends=True):
            units.extend(part[start : start + limit] for start in range(0, len(part), limit))
    pieces: list[str] = []
    current, blocks = "", 0
    for unit in units:
        if len(current) + len(unit) > limit and current.strip():
            pieces.append(current)
            current, blocks = "", 0
        current += unit
        blocks += 1 if unit.strip() else 0
        if blocks >= 2 and _natural_cut(unit):
            pieces.append(current)
            current, blocks = "", 0
    if current.strip():
        pieces.append(current)
    return pieces


def chunk_note(note: Note, *, max_chars: int = CHUNK_MAX_CHARS) -> list[Chunk]:
    """Chunks by heading: the text before the first heading, then each heading's own text.
    Each chunk is embedded with the note's title and heading trail for context."""
    lines = note.lines
    starts = [(note.body_line, None), *((h.line, h) for h in note.headings)]
    chunks: list[Chunk] = []
    trail: list[Heading] = []
    for index, (start, heading) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        if heading is not None:
            trail = [h for h in trail if h.level < heading.level] + [heading]
        text = "".join(lines[start:end]).strip()
        if not text:
            continue
        label = " > ".join(h.text for h in trail) if heading is not None else ""
        for piece in _split_long(text, max_chars):
            piece = piece.strip()
            if not piece:
                continue
            embed_text = chunk_embed_text(note.title, label, piece)
            chunks.append(
                Chunk(
                    path=note.path,
                    heading=label,
                    text=piece,
                    ordinal=len(chunks),
                    hash=content_hash(embed_text),
                    embed_text=embed_text,
                )
            )
    if not chunks:
        embed_text = note.title
        chunks.append(Chunk(note.path, "", "", 0, content_hash(embed_text), embed_text))
    return chunks


# -- templates ---------------------------------------------------------------------------------

_MOMENT = re.compile(
    r"\[[^\]]*\]|YYYY|YY|Q|MMMM|MMM|MM|M|DDDD|DDD|Do|DD|D|dddd|ddd|dd|d|E|GGGG|gggg|WW|W|ww|w"
    r"|HH|H|hh|h|mm|m|ss|s|A|a|X|x|ZZ|Z"
)
_TEMPLATE_VARIABLE = re.compile(r"\{\{\s*([\w.-]+)\s*(?::\s*([^}]*?)\s*)?\}\}", re.UNICODE)
DEFAULT_DATE_FORMAT = "YYYY-MM-DD"
DEFAULT_TIME_FORMAT = "HH:mm"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def moment_format(when: dt.datetime, fmt: str) -> str:
    """Format a date with Moment.js tokens, as Obsidian's templates and daily notes do
    (`YYYY-MM-DD`, `gggg-[W]ww`, `dddd`, `HH:mm`; `[text]` is literal)."""
    iso_year, iso_week, iso_day = when.isocalendar()
    hour12 = when.hour % 12 or 12
    values = {
        "YYYY": f"{when.year:04d}",
        "YY": f"{when.year % 100:02d}",
        "Q": str((when.month - 1) // 3 + 1),
        "MMMM": when.strftime("%B"),
        "MMM": when.strftime("%b"),
        "MM": f"{when.month:02d}",
        "M": str(when.month),
        "DDDD": f"{when.timetuple().tm_yday:03d}",
        "DDD": str(when.timetuple().tm_yday),
        "Do": _ordinal(when.day),
        "DD": f"{when.day:02d}",
        "D": str(when.day),
        "dddd": when.strftime("%A"),
        "ddd": when.strftime("%a"),
        "dd": when.strftime("%a")[:2],
        "d": str(when.isoweekday() % 7),
        "E": str(iso_day),
        "GGGG": f"{iso_year:04d}",
        "gggg": f"{iso_year:04d}",
        "WW": f"{iso_week:02d}",
        "W": str(iso_week),
        "ww": f"{iso_week:02d}",
        "w": str(iso_week),
        "HH": f"{when.hour:02d}",
        "H": str(when.hour),
        "hh": f"{hour12:02d}",
        "h": str(hour12),
        "mm": f"{when.minute:02d}",
        "m": str(when.minute),
        "ss": f"{when.second:02d}",
        "s": str(when.second),
        "A": "AM" if when.hour < 12 else "PM",
        "a": "am" if when.hour < 12 else "pm",
        "X": str(int(when.timestamp())),
        "x": str(int(when.timestamp() * 1000)),
        "ZZ": when.strftime("%z") or "+0000",
        "Z": (lambda z: f"{z[:3]}:{z[3:]}")(when.strftime("%z") or "+0000"),
    }
    return _MOMENT.sub(
        lambda m: m.group(0)[1:-1] if m.group(0)[0] == "[" else values[m.group(0)], fmt
    )


def render_template(
    text: str, *, title: str, now: dt.datetime, variables: dict[str, str] | None = None
) -> str:
    """Fill Obsidian template variables: `{{title}}`, `{{date}}`, `{{time}}`, with an
    optional Moment format (`{{date:YYYY-MM-DD}}`), plus any extra `variables` given.
    Unknown variables are left as they are."""
    extra = {key.casefold(): value for key, value in (variables or {}).items()}

    def fill(match: re.Match[str]) -> str:
        name, fmt = match.group(1).casefold(), match.group(2)
        if name == "title" and not fmt:
            return title
        if name == "date":
            return moment_format(now, fmt or DEFAULT_DATE_FORMAT)
        if name == "time":
            return moment_format(now, fmt or DEFAULT_TIME_FORMAT)
        if name in extra and not fmt:
            return str(extra[name])
        return match.group(0)

    return _TEMPLATE_VARIABLE.sub(fill, text)
