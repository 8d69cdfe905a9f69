"""How `assistant ask` and `chat` show a turn while it runs, on a terminal.

A `TurnView` is the turn's observer (`assistant.events`): the answer's text goes to
stdout as it arrives, tool activity ("running vault_search…") and the elapsed time to
stderr, and a rich spinner turns on stderr until the first token. Piped output and
`--json` get no view (stdout stays the answer only, or one JSON object); `-v` adds the
request and tool lines as they happen, terminal or not. Imported only by the commands
that show a turn, so the CLI's module level stays light.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from assistant.events import (
    RequestStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEvent,
    TurnStopped,
)
from assistant.terminal import raw_stream, visible


class TurnView:
    """Prints one turn's events; `shown` says whether stdout already holds the answer."""

    def __init__(
        self,
        *,
        tokens: bool,
        spinner: bool,
        verbose: bool,
        out: TextIO | None = None,
        err: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tokens, self.verbose = tokens, verbose
        self.activity = tokens or verbose  # "running vault_search…" and the elapsed time
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.clock = clock
        self.started = clock()
        self.first_token_s: float | None = None
        self.streamed: dict[int, str] = {}
        self.shown = False
        self._open_line = False  # stdout has text without its newline yet
        self._status: Any = None
        if spinner:
            from rich.console import Console

            # rich writes its own cursor codes: to the terminal itself, and what it shows is
            # made visible and escaped first (_note, _spin)
            self._console = Console(file=raw_stream(self.err), stderr=True, highlight=False)
            self._status = self._console.status("thinking…", spinner="dots")
        self._spinning = False

    # -- the observer ----------------------------------------------------------------------

    def __call__(self, event: TurnEvent) -> None:
        if isinstance(event, TextDelta):
            self._text(event)
        elif isinstance(event, RequestStarted):
            self._request(event)
        elif isinstance(event, ToolStarted):
            self._end_line()
            if self.activity:
                self._note(f"running {event.name}…")
            self._spin(f"running {event.name}…")
        elif isinstance(event, ToolFinished):
            if self.verbose:
                self._note(f"{event.name}: {event.status} ({event.ms:.0f} ms)")
        elif isinstance(event, TurnStopped):
            self._stopped(event)

    def _request(self, event: RequestStarted) -> None:
        self._end_line()
        if self.verbose:
            why = {"check": ", to correct the answer", "wrap_up": ", to wrap up"}
            self._note(
                f"request {event.index + 1} to the model ({event.tools} tools offered"
                f"{why.get(event.purpose, '')})"
            )
        if event.purpose == "check" and self.tokens and self.streamed:
            self._note("(that answer contradicts a tool result; asking the model to correct it)")
        self._spin("checking…" if event.purpose == "check" else "thinking…")

    def _text(self, event: TextDelta) -> None:
        if not event.text:
            return
        if self.first_token_s is None:
            self.first_token_s = self.clock() - self.started
        self.streamed[event.index] = self.streamed.get(event.index, "") + event.text
        if not self.tokens:
            return
        self._unspin()
        self.out.write(event.text)
        self.out.flush()
        self._open_line = not event.text.endswith("\n")

    def _stopped(self, event: TurnStopped) -> None:
        self._unspin()
        last = self.streamed[max(self.streamed)].strip() if self.streamed else ""
        answer = event.answer.strip()
        failed = event.stop_reason == "model_error"
        if self.tokens and not failed and last and answer.startswith(last) and answer != last:
            self.out.write(answer[len(last) :])  # what the loop added (a cut-off note)
            self._open_line = True
            last = answer
        self.shown = self.tokens and not failed and last == answer
        self._end_line()
        if self.tokens and last and not self.shown and not failed:
            self._note("(the answer above was revised; the final answer follows)")
        if self.activity:
            elapsed = self.clock() - self.started
            first = (
                f", first token at {self.first_token_s:.1f} s"
                if self.verbose and self.first_token_s is not None
                else ""
            )
            self._note(f"({elapsed:.1f} s{first})")

    # -- output ----------------------------------------------------------------------------

    def _end_line(self) -> None:
        if self._open_line:
            self.out.write("\n")
            self.out.flush()
            self._open_line = False

    def _note(self, text: str) -> None:
        self.out.flush()
        if self._spinning:
            self._console.print(visible(text), markup=False)  # above the spinner
        else:
            print(text, file=self.err, flush=True)

    def _spin(self, label: str) -> None:
        if self._status is None:
            return
        from rich.markup import escape

        self._status.update(escape(visible(label)))  # a tool name comes from the model
        if not self._spinning:
            self._status.start()
            self._spinning = True

    def _unspin(self) -> None:
        if self._spinning:
            self._status.stop()
            self._spinning = False

    def close(self) -> None:
        """Stop the spinner and end the line (also after Ctrl-C or an error)."""
        self._unspin()
        self._end_line()


def view_for(args: Any) -> TurnView | None:
    """The view `ask`/`chat` use: tokens on a terminal, activity with -v; None for piped
    output without -v and for --json without -v (nothing to show as it happens)."""
    verbose = bool(getattr(args, "verbose", False))
    as_json = bool(getattr(args, "json", False))
    tokens = not as_json and sys.stdout.isatty()
    if not (tokens or verbose):
        return None
    return TurnView(tokens=tokens, spinner=tokens and sys.stderr.isatty(), verbose=verbose)


@contextmanager
def working(label: str, *, enabled: bool) -> Iterator[None]:
    """A spinner on stderr (on a terminal) while the work after an answer runs."""
    if not (enabled and sys.stderr.isatty()):
        yield
        return
    from rich.console import Console
    from rich.markup import escape

    with Console(file=raw_stream(sys.stderr), stderr=True).status(
        escape(visible(label)), spinner="dots"
    ):
        yield
