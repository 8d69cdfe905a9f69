"""What reaches the user's terminal is text, never terminal commands (issue 13, item 10).

Notes, file names, tool results and model answers may hold control characters: an escape
sequence such as `\\x1b[3A\\x1b[J` moves the cursor and erases lines, so a diff shown at a
`confirm: … [y/N]` prompt could be doctored to hide what would change. `visible` makes
each one visible instead (C0 controls as their Unicode control pictures, `\\x1b` as `␛`;
C1 controls, DEL and the bidirectional overrides that reorder a line as escapes like
`\\x9b` or `\\u202e`); newlines and tabs stay. The CLI wraps stdout and stderr in
`VisibleStream`, so every line it prints (answers, diffs, pending summaries, `vault list`,
trace views, log lines with file names) goes through this one function. JSON output is
escaped by `json_text`, and stays JSON. Output is plain text: nothing is ever read as
markup (no rich console renders model text), so `[bold]` prints as `[bold]`.
"""

from __future__ import annotations

import json
import re
from typing import Any, TextIO

_C0_PICTURES = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
_TABLE: dict[int, str] = {
    **_C0_PICTURES,
    0x7F: "\u2421",  # ␡
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},
    **{code: f"\\u{code:04x}" for code in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F))},
    **{code: f"\\u{code:04x}" for code in range(0x2066, 0x206A)},
}
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# what json.dumps leaves raw (it escapes only C0, quotes and backslashes)
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` safe to print to a terminal: every control character made visible; line
    breaks (a CRLF counts as one) and tabs kept."""
    if not _UNSAFE.search(text):
        return text
    return text.replace("\r\n", "\n").translate(_TABLE)


def json_text(value: Any) -> str:
    """`value` as indented JSON, safe to print: what json.dumps leaves raw (C1 controls,
    DEL, bidirectional overrides) is written as a `\\uXXXX` escape, so it is still the
    same JSON value."""
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def raw_stream(stream: Any) -> Any:
    """The terminal under a `VisibleStream`, for a renderer that writes its own control
    sequences (rich's spinner); what it shows must then pass `visible` and, for rich,
    `rich.markup.escape` first."""
    return stream.inner if isinstance(stream, VisibleStream) else stream


class VisibleStream:
    """A text stream that passes everything written to it through `visible`."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(visible(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer...
        return getattr(self.inner, name)
