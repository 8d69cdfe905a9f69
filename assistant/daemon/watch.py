"""File-triggered tasks (SPEC D3): vault changes that match a rule become unattended turns.

A watchdog observer reports changes under the vault. Each path is debounced: the task
fires once the path has been quiet for the rule's debounce time, or sooner (`SETTLE_S`)
after an event that says the writer is done: a file closed after writing (Linux), or a
rename onto the note, which is how editors and the assistant's own atomic writes save.
When it fires, the vault index is updated first (even without a rule), then, unless the
assistant wrote the file itself, every matching rule queues a turn with its prompt.
Deletes and renames update the index at once. A failing index update or rule is logged
and the watcher carries on.

The vault and its index arrive through two small protocols, so this works before (and
without) the vault tools: with neither, only the rules run.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from assistant.config import Settings, WatchRule

log = logging.getLogger(__name__)

SETTLE_S = 0.1
IGNORED_SUFFIXES = (".tmp", ".swp", ".swx", ".part", ".crdownload", "~")


class VaultIndex(Protocol):
    """`tools.vault.index.VaultIndex`; paths are absolute, as strings."""

    def index_note(self, path: str) -> Any: ...

    def remove_note(self, path: str) -> Any: ...


class OwnWrites(Protocol):
    """`tools.vault.store.Vault`: did the assistant itself write this file's current state?"""

    def was_own_write(self, path: str) -> bool: ...


def glob_pattern(glob: str) -> re.Pattern[str]:
    """A vault glob as a regex on the POSIX relative path: '*' and '?' stay inside one
    folder, '**/' spans any number of folders (none included)."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class FileTask:
    """One rule's turn for one changed file."""

    rule: WatchRule
    path: str
    event: str
    prompt: str

    @property
    def trigger(self) -> dict[str, Any]:
        return {
            "kind": "file",
            "path": self.path,
            "event": self.event,
            "rule": self.rule.glob,
            "rule_name": self.rule.label,
            "write_scope": self.rule.write_scope,
        }


def render(rule: WatchRule, path: str, event: str) -> FileTask:
    pure = PurePosixPath(path)
    folder = "" if str(pure.parent) == "." else str(pure.parent)
    prompt = rule.prompt.format(path=path, title=pure.stem, folder=folder)
    return FileTask(rule=rule, path=path, event=event, prompt=prompt)


@dataclass
class _Pending:
    due: float
    events: list[str] = field(default_factory=list)


class Debouncer:
    """Fires `fire(key, events)` once a key has had no new event for its delay."""

    def __init__(self, fire: Callable[[str, list[str]], None]) -> None:
        self._fire = fire
        self._pending: dict[str, _Pending] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="watch-debounce", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def touch(self, key: str, event: str, delay_s: float) -> None:
        with self._cond:
            pending = self._pending.setdefault(key, _Pending(0.0))
            pending.due = time.monotonic() + delay_s
            pending.events.append(event)
            self._cond.notify()

    def discard(self, key: str) -> None:
        with self._cond:
            self._pending.pop(key, None)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        with self._cond:
            while not self._stopped:
                if not self._pending:
                    self._cond.wait()
                    continue
                key, pending = min(self._pending.items(), key=lambda item: item[1].due)
                wait_s = pending.due - time.monotonic()
                if wait_s > 0:
                    self._cond.wait(wait_s)
                    continue
                del self._pending[key]
                self._cond.release()
                try:
                    self._fire(key, pending.events)
                except Exception:  # one bad file must not stop the watcher
                    log.exception("watch: handling %s failed", key)
                finally:
                    self._cond.acquire()


class Watcher:
    """Watches the vault; `submit(task)` queues a rule's turn and returns its future."""

    def __init__(
        self,
        vault: Path,
        rules: Sequence[WatchRule],
        submit: Callable[[FileTask], Any],
        *,
        debounce_s: float = 1.0,
        index: VaultIndex | None = None,
        own_writes: OwnWrites | None = None,
        recent: int = 50,
    ) -> None:
        self.vault = vault.resolve()
        self.rules = list(rules)
        self.submit = submit
        self.debounce_s = debounce_s
        self.index = index
        self.own_writes = own_writes
        self._patterns = [(rule, glob_pattern(rule.glob)) for rule in self.rules]
        self._recent: deque[dict[str, Any]] = deque(maxlen=recent)
        self._recent_lock = threading.Lock()
        self._debouncer = Debouncer(self._settled)
        self._observer: Any = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        from watchdog.observers import Observer

        self._debouncer.start()
        observer = Observer()
        observer.schedule(_Handler(self), str(self.vault), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        log.info("watching %s (%d rule(s))", self.vault, len(self.rules))

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        self._debouncer.stop()

    @property
    def running(self) -> bool:
        return self._observer is not None

    # -- state for `watch list` -----------------------------------------------------------

    def recent(self) -> list[dict[str, Any]]:
        with self._recent_lock:
            return [dict(entry) for entry in reversed(self._recent)]

    def _note(self, **entry: Any) -> dict[str, Any]:
        entry["at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with self._recent_lock:
            self._recent.append(entry)
        return entry

    # -- events ------------------------------------------------------------------------------

    def relative(self, path: str | bytes) -> str | None:
        """The vault-relative POSIX path, or None for what the watcher ignores."""
        text = path.decode() if isinstance(path, bytes) else path
        try:
            relative = Path(text).resolve().relative_to(self.vault)
        except (ValueError, OSError):
            return None
        parts = relative.parts
        if not parts or any(part.startswith(".") for part in parts):
            return None  # .obsidian/, .trash/, editors' hidden temp files
        if parts[-1].endswith(IGNORED_SUFFIXES):
            return None
        return relative.as_posix()

    def changed(self, path: str, event: str) -> None:
        settles = event in ("closed", "moved")
        self._debouncer.touch(path, event, SETTLE_S if settles else self._debounce_for(path))

    def removed(self, path: str, event: str = "deleted") -> None:
        self._debouncer.discard(path)
        status = "no vault index"
        if path.endswith(".md") and self.index is not None:
            try:
                self.index.remove_note(str(self.vault / path))
                status = "removed from the vault index"
            except Exception as exc:  # logged; the next full index repairs it
                log.exception("watch: removing %s from the vault index failed", path)
                status = f"index update failed: {exc}"
        self._note(path=path, event=event, status=status)

    def _debounce_for(self, path: str) -> float:
        matching = [rule.debounce_s for rule, regex in self._patterns if regex.match(path)]
        chosen = [d if d is not None else self.debounce_s for d in matching]
        return max(chosen, default=self.debounce_s)

    def _settled(self, path: str, events: list[str]) -> None:
        full = self.vault / path
        if not full.is_file():
            return
        absolute = str(full)
        event = next((e for e in ("created", "moved") if e in events), "modified")
        if path.endswith(".md") and self.index is not None:
            try:
                self.index.index_note(absolute)
            except Exception:  # logged; the rules still run
                log.exception("watch: indexing %s failed", path)
        if self.own_writes is not None and self.own_writes.was_own_write(absolute):
            self._note(path=path, event=event, status="skipped: the assistant wrote it")
            return
        for rule, regex in self._patterns:
            if regex.match(path) and event in rule.on:
                self._trigger(render(rule, path, event))

    def _trigger(self, task: FileTask) -> None:
        entry = self._note(path=task.path, event=task.event, rule=task.rule.glob, status="queued")
        try:
            future = self.submit(task)
        except Exception as exc:  # noqa: BLE001 - e.g. the queue closed during shutdown
            with self._recent_lock:
                entry["status"] = f"not run: {exc}"
            return
        log.info("watch: %s %s -> rule %s", task.event, task.path, task.rule.glob)

        def finished(done: Any) -> None:
            error = done.exception()
            if error is None:
                outcome = done.result()
                update = {
                    "status": "done",
                    "turn_id": outcome.turn_id,
                    "session": outcome.session,
                    "stop_reason": outcome.stop_reason.value,
                }
            else:
                update = {"status": f"failed: {error}"}
            with self._recent_lock:
                entry.update(update)

        future.add_done_callback(finished)


def watch_state(settings: Settings, watcher: Watcher | None) -> dict[str, Any]:
    """What `watch list` and `status` show: the rules (debounce defaults filled in), and,
    while the daemon watches, the recent triggers."""
    default_s = settings.daemon.watch_debounce_s
    return {
        "vault": str(settings.vault) if settings.vault else None,
        "watching": watcher is not None and watcher.running,
        "rules": [
            {
                **rule.model_dump(),
                "debounce_s": default_s if rule.debounce_s is None else rule.debounce_s,
            }
            for rule in settings.watch
        ],
        "own_writes_skipped": watcher is not None and watcher.own_writes is not None,
        "vault_index": watcher is not None and watcher.index is not None,
        "recent": watcher.recent() if watcher is not None else [],
    }


class _Handler:
    """Watchdog's callback object: sorts raw events into changes and removals."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        if event.is_directory:
            return
        kind = event.event_type
        watcher = self.watcher
        try:
            if kind == "moved":
                source = watcher.relative(event.src_path)
                target = watcher.relative(event.dest_path)
                if source is not None:
                    watcher.removed(source, "moved away")
                if target is not None:
                    watcher.changed(target, "moved")
            elif kind == "deleted":
                if (path := watcher.relative(event.src_path)) is not None:
                    watcher.removed(path)
            elif kind in ("created", "modified", "closed") and (
                path := watcher.relative(event.src_path)
            ):
                watcher.changed(path, kind)
        except Exception:  # the observer thread must survive any one event
            log.exception("watch: could not handle %s", event)
