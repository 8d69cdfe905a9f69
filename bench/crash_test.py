"""Crash test: kill -9 the daemon at random moments and check that nothing acknowledged is
lost (issue 6, item 4).

Runs a real `python -m assistant daemon` (offline planner) on a temporary data directory
and a temporary copy of `vault_example/` through `--turns` turns sent with
`assistant ask --json` (arithmetic, "remember that item N is X", a daily-note append, a
weekly note from the template). Before `--kills` seeded-random turns, a timer SIGKILLs the
daemon a random moment after the ask starts; the daemon is restarted after each kill.
Then it checks:

- every acknowledged turn (the ask printed its JSON and exited 0) is in SQLite: its
  `turns` row, and its user message and answer in the session's messages;
- no torn note: every .md in the vault is UTF-8 and its frontmatter parses unless it was
  already broken in `vault_example/`; every acknowledged daily append is in its note and
  every acknowledged template note exists;
- no dangling tool call: each session's history, as loaded, pairs every tool call with
  its result (and the raw rows are counted too);
- SQLite and Chroma in step: after a final kill -9 and restart (its start-up repair) the
  ids in the conclusions collection equal the ids of the conclusions in SQLite (every
  active one, and the superseded and retired ones `memory search --all` finds).

    python bench/crash_test.py [--turns 50] [--kills N] [--seed 7] [--json]

`--json` prints one JSON object as the last line; the exit status is 1 when a check fails.
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

from assistant.client import published  # noqa: E402

START_TIMEOUT_S = 180.0
ASK_TIMEOUT_S = 180.0


def prompt_for(n: int) -> str:
    kind = n % 4
    if kind == 0:
        return f"{15 + n}加27等于多少"
    if kind == 1:
        return f"remember that item {n} is colour {n * 7 % 11}"
    if kind == 2:
        return f"在今天的日记里加上 item {n}"
    return "用周报模板创建本周周报"


def frontmatter_error(raw: str) -> str | None:
    from tools.vault.notes import split_frontmatter

    return split_frontmatter(raw)[1]


def note_problems(vault: Path) -> dict[str, str]:
    problems: dict[str, str] = {}
    for path in sorted(vault.rglob("*.md")):
        if ".obsidian" in path.parts:
            continue
        relative = path.relative_to(vault).as_posix()
        try:
            raw = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            problems[relative] = f"not UTF-8: {exc}"
            continue
        if error := frontmatter_error(raw):
            problems[relative] = error
    return problems


class CrashRun:
    def __init__(self, turns: int, kills: int, seed: int, root: Path | None = None) -> None:
        self.turns = turns
        self.rng = random.Random(seed)
        self.kill_turns = set(self.rng.sample(range(turns), min(kills, turns)))
        self.seed = seed
        self.root = root or Path(tempfile.mkdtemp(prefix="crash-test-"))
        self.home = self.root / "home"
        self.vault = self.root / "vault"
        self.home.mkdir(parents=True)
        shutil.copytree(ROOT / "vault_example", self.vault)
        (self.vault / "Inbox").mkdir(exist_ok=True)
        self.baseline = note_problems(self.vault)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
        env.update(ASSISTANT_HOME=str(self.home), ASSISTANT_VAULT=str(self.vault))
        env["NO_PROXY"] = "127.0.0.1,localhost,::1"
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.acks: list[dict[str, Any]] = []
        self.unacked: list[dict[str, Any]] = []
        self.kills_done = 0
        self.kills_mid_ask = 0

    # -- the daemon --------------------------------------------------------------------------

    def start(self) -> None:
        self.starts += 1
        log = (self.root / f"daemon-{self.starts}.stderr").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "assistant", "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                text = (self.root / f"daemon-{self.starts}.stderr").read_text(errors="replace")
                raise RuntimeError(f"the daemon exited with {self.proc.returncode}:\n{text}")
            client = published(self.home)
            if client is not None and client.pid == self.proc.pid:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not publish api.json in time")
            time.sleep(0.1)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=60)
            self.kills_done += 1

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    # -- turns -------------------------------------------------------------------------------

    def turn(self, n: int) -> None:
        text = prompt_for(n)
        session = f"crash-{n}"
        ask = subprocess.Popen(
            [sys.executable, "-m", "assistant", "ask", "--json", "--session", session, text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        killer: threading.Timer | None = None
        if n in self.kill_turns:
            killer = threading.Timer(self.rng.uniform(0.0, 2.0), self.kill)
            killer.start()
        try:
            out, err = ask.communicate(timeout=ASK_TIMEOUT_S)
        finally:
            if ask.poll() is None:
                ask.kill()
                ask.wait()
            if killer is not None:
                killer.join()
        record = {"n": n, "text": text, "session": session, "rc": ask.returncode}
        data = None
        if ask.returncode == 0:
            try:
                data = json.loads(out)
            except ValueError:
                data = None
        if data is not None:
            record.update(
                turn_id=data["turn_id"],
                answer=data["answer"],
                served_by=data.get("served_by"),
                writes=[
                    c["result"]
                    for c in data.get("tool_calls", ())
                    if c.get("status") == "ok"
                    and isinstance(c.get("result"), dict)
                    and c.get("tool", "").startswith("vault_")
                    and c.get("tool") not in ("vault_list", "vault_read", "vault_search")
                ],
            )
            self.acks.append(record)
        else:
            record["stderr"] = err.strip()[-300:]
            self.unacked.append(record)
        if killer is not None:
            if self.proc is not None and self.proc.poll() is None:
                self.kill()  # the timer fired after the ask finished: still a crash
            else:
                self.kills_mid_ask += 1
            self.start()

    # -- checks ------------------------------------------------------------------------------

    def check(self) -> dict[str, Any]:
        db = sqlite3.connect(f"file:{self.home / 'assistant.db'}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        missing: list[str] = []
        for ack in self.acks:
            turn = db.execute("SELECT answer FROM turns WHERE id = ?", (ack["turn_id"],)).fetchone()
            if turn is None:
                missing.append(f"turn {ack['n']}: no trace {ack['turn_id']}")
                continue
            roles = {
                (row["role"], row["content"])
                for row in db.execute(
                    "SELECT role, content FROM messages WHERE session = ?", (ack["session"],)
                )
            }
            if ("user", ack["text"]) not in roles:
                missing.append(f"turn {ack['n']}: user message missing")
            if ("assistant", ack["answer"]) not in roles:
                missing.append(f"turn {ack['n']}: answer missing")
        raw_dangling = 0
        sessions = [row[0] for row in db.execute("SELECT id FROM sessions")]
        for session in sessions:
            rows = db.execute(
                "SELECT role, tool_calls, tool_call_id FROM messages WHERE session = ? ORDER BY id",
                (session,),
            ).fetchall()
            answered = {row["tool_call_id"] for row in rows if row["role"] == "tool"}
            for row in rows:
                for call in json.loads(row["tool_calls"] or "[]"):
                    raw_dangling += call["id"] not in answered
        active = {row[0] for row in db.execute("SELECT id FROM conclusions WHERE status='active'")}
        # the index holds every conclusion, superseded and retired too (`memory search --all`)
        indexed = {row[0] for row in db.execute("SELECT id FROM conclusions")}
        db.close()

        from memory.db import Database
        from memory.working import WorkingMemory

        database = Database(self.home / "assistant.db")
        loaded_dangling: list[str] = []
        try:
            working = WorkingMemory(database)
            for session in sessions:
                loaded_dangling += [f"{session}: {p}" for p in dangling(working.load(session))]
        finally:
            database.close()

        torn = {
            path: why
            for path, why in note_problems(self.vault).items()
            if self.baseline.get(path) != why
        }
        lost_writes: list[str] = []
        for ack in self.acks:
            for write in ack.get("writes", ()):
                path = self.vault / write.get("path", "")
                if not path.is_file():
                    lost_writes.append(f"turn {ack['n']}: {write.get('path')} is missing")
                elif ack["n"] % 4 == 2 and f"item {ack['n']}" not in path.read_text("utf-8"):
                    lost_writes.append(f"turn {ack['n']}: 'item {ack['n']}' not in {path.name}")

        vector_ids = conclusion_vector_ids(self.home)
        checks = {
            "acknowledged_turns_stored": not missing,
            "no_torn_note": not torn and not lost_writes,
            "no_dangling_tool_call": not loaded_dangling,
            "sqlite_and_chroma_in_step": active <= vector_ids and vector_ids == indexed,
        }
        return {
            "missing": missing[:20],
            "torn_notes": torn,
            "lost_writes": lost_writes[:20],
            "sessions": len(sessions),
            "raw_dangling_tool_calls": raw_dangling,
            "loaded_dangling_tool_calls": loaded_dangling[:20],
            "active_conclusions": len(active),
            "conclusions": len(indexed),
            "conclusion_vectors": len(vector_ids),
            "only_in_sqlite": sorted(indexed - vector_ids)[:20],
            "only_in_chroma": sorted(vector_ids - indexed)[:20],
            "checks": checks,
            "passed": all(checks.values()),
        }

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        try:
            self.start()
            for n in range(self.turns):
                self.turn(n)
            # a last kill -9 and start: its repair on open is what the last check looks at
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=60)
            self.start()
            exit_code = self.stop()
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        result: dict[str, Any] = {
            "turns": self.turns,
            "seed": self.seed,
            "kills": self.kills_done,
            "kills_during_an_ask": self.kills_mid_ask,
            "daemon_starts": self.starts,
            "acknowledged": len(self.acks),
            "not_acknowledged": len(self.unacked),
            "served_in_process": sum(1 for a in self.acks if a.get("served_by") != "daemon"),
            "final_exit_code": exit_code,
            "wall_s": round(time.monotonic() - started, 1),
        }
        result.update(self.check())
        return result


def dangling(messages: list[dict[str, Any]]) -> list[str]:
    """Tool calls without their result right after them, and results without a call."""
    problems = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if message["role"] == "tool":
            problems.append(f"a tool result without a call at {index}")
        ids = [call["id"] for call in message.get("tool_calls") or ()]
        index += 1
        answered = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answered.append(messages[index].get("tool_call_id"))
            index += 1
        if answered != ids:
            problems.append(f"calls {ids} answered by {answered}")
    return problems


def conclusion_vector_ids(home: Path) -> set[str]:
    """The ids in the conclusions collection, read straight from Chroma (no repair)."""
    from memory.vectors import open_chroma

    client = open_chroma(home / "chroma")
    try:
        collection = client.get_collection("conclusions")
    except Exception:  # noqa: BLE001 - no collection: no vectors
        return set()
    return set(collection.get(include=[])["ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--kills", type=int, help="how many kills (default: turns // 4)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    kills = args.kills if args.kills is not None else max(1, args.turns // 4)
    run = CrashRun(args.turns, kills, args.seed)
    try:
        result = run.run()
    finally:
        if not args.keep:
            shutil.rmtree(run.root, ignore_errors=True)
    print(
        f"crash test: {result['turns']} turns, {result['kills']} SIGKILLs "
        f"({result['kills_during_an_ask']} during an ask), seed {result['seed']}, "
        f"{result['wall_s']} s"
    )
    print(
        f"acknowledged {result['acknowledged']}, not acknowledged {result['not_acknowledged']} "
        f"({result['served_in_process']} served in-process after a kill)"
    )
    print(
        f"sessions {result['sessions']}; dangling tool calls: raw rows "
        f"{result['raw_dangling_tool_calls']}, "
        f"after load {len(result['loaded_dangling_tool_calls'])}"
    )
    print(
        f"conclusions {result['conclusions']} ({result['active_conclusions']} active), "
        f"conclusion vectors "
        f"{result['conclusion_vectors']}"
    )
    for name, ok in result["checks"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    for key in ("missing", "torn_notes", "lost_writes", "only_in_sqlite", "only_in_chroma"):
        if result[key]:
            print(f"  {key}: {result[key]}")
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
