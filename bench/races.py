"""Races on the data directory (issue 13, item 5 and the move part of item 4).

Three scenarios, `--tries` each, on a real `python -m assistant daemon` (offline planner)
with a temporary data directory and vault:

- `start`: a daemon starts while CLI commands (`status`, `ask`, `memory list`) are launched
  at random moments 0-1 s around it; some find no daemon yet and run in-process, holding
  the data directory's lock while the daemon starts. Counted: failed starts (the daemon
  exited or never published its API), failed commands (non-zero exit or a wrong answer),
  and failed stops (SIGTERM did not end it with status 0).
- `restart`: one data directory; each try ends the running daemon (SIGTERM or kill -9,
  alternating) and starts the next one at once, with CLI commands launched 0-0.5 s
  around the start. Counted as above.
- `move`: a vault whose 300 notes link `[[Target]]`; a move of Target.md (pending, made
  in-process with a scripted model) is confirmed through the daemon and the daemon is
  killed with SIGKILL as soon as the first linking note changed (plus 0-50 ms). After a
  restart: a half-done move is one where some notes link the old name and some the new,
  or the note is in both places or neither, or a `.vault-tmp` file is left, or the action
  stays `running`.

    python bench/races.py [--tries 50] [--only start,restart,move] [--seed 13] [--json]

Linux only (kill -9, /proc). `--json` prints one JSON object as the last line; the exit
status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

START_TIMEOUT_S = 180.0
COMMAND_TIMEOUT_S = 300.0
LINKING_NOTES = 300


def _env(home: Path, vault: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(ASSISTANT_HOME=str(home), ASSISTANT_VAULT=str(vault))
    env["NO_PROXY"] = "127.0.0.1,localhost,::1"
    return env


class Daemon:
    def __init__(self, home: Path, vault: Path, logs: Path) -> None:
        self.home, self.vault, self.logs = home, vault, logs
        self.proc: subprocess.Popen[bytes] | None = None
        self.count = 0

    def spawn(self) -> None:
        self.count += 1
        with (self.logs / f"daemon-{self.count}.log").open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "assistant", "daemon"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_env(self.home, self.vault),
                cwd=ROOT,
            )

    def wait_published(self) -> bool:
        """True once this process published its API; False if it exited first."""
        assert self.proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                info = json.loads((self.home / "api.json").read_text(encoding="utf-8"))
                if info.get("pid") == self.proc.pid:
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        return False

    def log_text(self) -> str:
        return (self.logs / f"daemon-{self.count}.log").read_text(errors="replace")

    def stop(self, kill: bool = False) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            return self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def _command(env: dict[str, str], n: int) -> tuple[list[str], str | None]:
    kind = n % 3
    if kind == 0:
        return ["status", "--json"], '"data_dir"'
    if kind == 1:
        return ["ask", f"what is {n} + 1000"], str(n + 1000)
    return ["memory", "list", "--json"], None


def _run_commands(
    env: dict[str, str], rng: random.Random, count: int, spread_s: float, base: int
) -> list[dict[str, Any]]:
    """`count` CLI commands, each launched after its own random delay; their results."""
    results: list[dict[str, Any]] = [{} for _ in range(count)]

    def one(slot: int, delay: float) -> None:
        time.sleep(delay)
        args, expect = _command(env, base + slot)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "assistant", *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                timeout=COMMAND_TIMEOUT_S,
            )
            ok = done.returncode == 0 and (expect is None or expect in done.stdout)
            results[slot] = {
                "args": args,
                "ok": ok,
                "code": done.returncode,
                "error": done.stderr.strip().splitlines()[-1:] if not ok else [],
                "daemon": '"served_by": "daemon"' in done.stdout,
            }
        except subprocess.TimeoutExpired:
            results[slot] = {"args": args, "ok": False, "code": None, "error": ["timeout"]}

    threads = [
        threading.Thread(target=one, args=(slot, rng.uniform(0, spread_s))) for slot in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _launch(
    into: list[list[dict[str, Any]]],
    env: dict[str, str],
    rng: random.Random,
    count: int,
    spread_s: float,
    base: int,
) -> threading.Thread:
    """`_run_commands` in the background; its results land in `into`."""
    seed = rng.random()

    def run() -> None:
        into.append(_run_commands(env, random.Random(seed), count, spread_s, base))

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _tally(name: str, tries: int) -> dict[str, Any]:
    return {
        "scenario": name,
        "tries": tries,
        "failed_starts": 0,
        "failed_commands": 0,
        "commands": 0,
        "failed_stops": 0,
        "half_done_moves": 0,
        "examples": [],
        "seconds": 0.0,
    }


def _note(tally: dict[str, Any], text: str) -> None:
    if len(tally["examples"]) < 5:
        tally["examples"].append(text[:300])


def _small_vault(path: Path) -> Path:
    source = ROOT / "vault_example"
    if source.is_dir():
        shutil.copytree(source, path)
    else:
        path.mkdir(parents=True)
    return path


# -- scenario: starts under concurrent commands -------------------------------------------------


def scenario_start(root: Path, tries: int, rng: random.Random) -> dict[str, Any]:
    tally = _tally("start", tries)
    started = time.monotonic()
    home, vault, logs = root / "start-home", _small_vault(root / "start-vault"), root / "logs"
    home.mkdir()
    env = _env(home, vault)
    daemon = Daemon(home, vault, logs)
    for n in range(tries):
        commands_done: list[list[dict[str, Any]]] = []
        runner = _launch(commands_done, env, rng, 3, 1.0, n * 3)
        time.sleep(rng.uniform(0, 0.5))
        daemon.spawn()
        if not daemon.wait_published():
            tally["failed_starts"] += 1
            _note(tally, f"start {n}: {daemon.log_text()[-300:]}")
        runner.join()
        for result in commands_done[0]:
            tally["commands"] += 1
            if not result["ok"]:
                tally["failed_commands"] += 1
                _note(tally, f"start {n}: {result['args']} -> {result['error']}")
        if daemon.stop() != 0:
            tally["failed_stops"] += 1
            _note(tally, f"stop {n}: {daemon.log_text()[-300:]}")
    tally["seconds"] = round(time.monotonic() - started, 1)
    return tally


# -- scenario: restart loops -----------------------------------------------------------------


def scenario_restart(root: Path, tries: int, rng: random.Random) -> dict[str, Any]:
    tally = _tally("restart", tries)
    started = time.monotonic()
    home, vault, logs = root / "restart-home", _small_vault(root / "restart-vault"), root / "logs"
    home.mkdir()
    env = _env(home, vault)
    daemon = Daemon(home, vault, logs)
    daemon.spawn()
    if not daemon.wait_published():
        tally["failed_starts"] += 1
    for n in range(tries):
        code = daemon.stop(kill=n % 2 == 1)
        if n % 2 == 0 and code != 0:
            tally["failed_stops"] += 1
            _note(tally, f"stop {n}: exit {code}")
        commands_done: list[list[dict[str, Any]]] = []
        runner = _launch(commands_done, env, rng, 2, 0.5, n * 2 + 1)
        daemon.spawn()
        if not daemon.wait_published():
            tally["failed_starts"] += 1
            _note(tally, f"restart {n}: {daemon.log_text()[-300:]}")
        runner.join()
        for result in commands_done[0]:
            tally["commands"] += 1
            if not result["ok"]:
                tally["failed_commands"] += 1
                _note(tally, f"restart {n}: {result['args']} -> {result['error']}")
    daemon.stop()
    tally["seconds"] = round(time.monotonic() - started, 1)
    return tally


# -- scenario: kill -9 during a 300-link move ------------------------------------------------


def _linking_vault(path: Path) -> Path:
    (path / "Notes").mkdir(parents=True)
    (path / "Target.md").write_text("# Target\n\nThe note everyone links.\n", encoding="utf-8")
    for n in range(LINKING_NOTES):
        (path / "Notes" / f"Note {n:03d}.md").write_text(
            f"# Note {n}\n\nSee [[Target]] for the plan, item {n}.\n", encoding="utf-8"
        )
    return path


def _pending_move(home: Path, vault: Path) -> str:
    """A pending `vault_move` of Target.md, made in-process by a scripted model."""
    from assistant.app import Assistant
    from assistant.config import load_settings
    from assistant.testing import ScriptedModel, calls, text

    model = ScriptedModel(
        [calls(("vault_move", {"path": "Target.md", "new_path": "Archive/Moved.md"})), text("ok")]
    )
    previous = {k: os.environ.get(k) for k in ("ASSISTANT_HOME", "ASSISTANT_VAULT")}
    os.environ.update(ASSISTANT_HOME=str(home), ASSISTANT_VAULT=str(vault))
    try:
        assistant = Assistant(load_settings(), model=model)
        try:
            outcome = assistant.ask("move Target to Archive/Moved")
            [call] = outcome.tool_calls
            return str(call.result["action_id"])
        finally:
            assistant.close()
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _move_state(home: Path, vault: Path, action_id: str) -> dict[str, Any]:
    old = new = 0
    for note in (vault / "Notes").glob("*.md"):
        body = note.read_text(encoding="utf-8")
        old += "[[Target]]" in body
        new += "Moved" in body
    stray = [str(p.relative_to(vault)) for p in vault.rglob("*") if ".vault-tmp" in p.name]
    with sqlite3.connect(home / "assistant.db") as db:
        row = db.execute("SELECT status FROM pending_actions WHERE id = ?", (action_id,)).fetchone()
    return {
        "old_links": old,
        "new_links": new,
        "at_old": (vault / "Target.md").exists(),
        "at_new": (vault / "Archive" / "Moved.md").exists(),
        "stray": stray,
        "action": row[0] if row else None,
    }


def _half_done(state: dict[str, Any]) -> bool:
    complete = state["new_links"] == LINKING_NOTES and state["at_new"] and not state["at_old"]
    untouched = state["old_links"] == LINKING_NOTES and state["at_old"] and not state["at_new"]
    return not (complete or untouched) or bool(state["stray"]) or state["action"] == "running"


def scenario_move(root: Path, tries: int, rng: random.Random) -> dict[str, Any]:
    tally = _tally("move", tries)
    tally["states"] = []
    started = time.monotonic()
    logs = root / "logs"
    for n in range(tries):
        home, vault = root / f"move-home-{n}", _linking_vault(root / f"move-vault-{n}")
        home.mkdir()
        env = _env(home, vault)
        action_id = _pending_move(home, vault)
        daemon = Daemon(home, vault, logs)
        daemon.spawn()
        if not daemon.wait_published():
            tally["failed_starts"] += 1
            _note(tally, f"move {n}: start: {daemon.log_text()[-300:]}")
            continue
        confirm = subprocess.Popen(
            [sys.executable, "-m", "assistant", "confirm", action_id],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
        )
        probe = vault / "Notes" / f"Note {rng.randrange(LINKING_NOTES):03d}.md"
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while time.monotonic() < deadline and confirm.poll() is None:
            try:
                if "[[Target]]" not in probe.read_text(encoding="utf-8"):
                    break
            except OSError:
                pass
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.05))
        daemon.stop(kill=True)
        confirm.wait(timeout=COMMAND_TIMEOUT_S)
        daemon.spawn()  # the restart is where an interrupted move is completed or undone
        if not daemon.wait_published():
            tally["failed_starts"] += 1
            _note(tally, f"move {n}: restart: {daemon.log_text()[-300:]}")
        daemon.stop()
        state = _move_state(home, vault, action_id)
        tally["states"].append(state)
        if _half_done(state):
            tally["half_done_moves"] += 1
            _note(tally, f"move {n}: {state}")
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(vault, ignore_errors=True)
    tally["seconds"] = round(time.monotonic() - started, 1)
    return tally


SCENARIOS = {"start": scenario_start, "restart": scenario_restart, "move": scenario_move}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=50)
    parser.add_argument("--only", default="start,restart,move")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    report: dict[str, Any] = {"tries": args.tries, "seed": args.seed, "scenarios": []}
    with tempfile.TemporaryDirectory(prefix="races-") as tmp:
        root = Path(tmp)
        (root / "logs").mkdir()
        for name in args.only.split(","):
            tally = SCENARIOS[name](root, args.tries, rng)
            report["scenarios"].append(tally)
            print(
                f"{name}: {tally['tries']} tries, {tally['failed_starts']} failed starts, "
                f"{tally['failed_commands']}/{tally['commands']} failed commands, "
                f"{tally['failed_stops']} failed stops, {tally['half_done_moves']} half-done "
                f"moves ({tally['seconds']} s)",
                file=sys.stderr,
                flush=True,
            )
            for example in tally["examples"]:
                print(f"  e.g. {example}", file=sys.stderr)
    failed = any(
        t["failed_starts"] or t["failed_commands"] or t["failed_stops"] or t["half_done_moves"]
        for t in report["scenarios"]
    )
    if args.json:
        print(json.dumps(report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
