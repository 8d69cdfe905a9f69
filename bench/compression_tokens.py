"""Does session compression keep the prompt flat over a long tool-heavy session (SPEC M2,
M8), and does a fact from turn 1 survive to turn 200?

A 200-turn session runs through `Assistant.ask(..., session=...)` on a temporary home
with a `ScriptedModel` (so the Assistant summarises and extracts with "the model"). Turn
1 asks to remember a locker code: the model calls `memory_remember`. Turns 2-199 are
tool-heavy, in English and Chinese: each calls a 24-hour weather lookup (about 1,500
characters of JSON) and `calc_evaluate` in parallel, then answers with their numbers.
Summary requests (`assistant.remembering.SUMMARY_PROMPT`) get a running summary capped
at 200 words, newest requests kept (so old facts fall out of it, as with a real model
told to use at most 200 words); with `--summariser growing` the summary keeps every line
(a model that ignores the limit) until the compressor asks it to shorten the summary.
Extraction requests get the "remember that ..." facts of the span. Turn 200 asks "what
is my locker code?".

Measured with `memory.tokens.estimate_message_tokens` on the messages the model received
in the first request of a turn, beside the full history (every stored message of the
session plus the system prompt without summary and the new user message, i.e. the prompt
without compression). Targets: turn 200 <= 1.3 x turn 20; since those two turns may fall
anywhere between folds, also the largest / smallest prompt from turn 20 on <= 1.3 (which
bounds the ratio of any two turns); 4417 recalled at turn 200 (in the answer, and where
the model found it: memory block, summary or history). The running summary's size is
printed at turns 20, 100 and 200.

    python bench/compression_tokens.py [--turns 200] [--summariser capped|growing] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from assistant.app import Assistant, system_prompt
from assistant.config import load_settings
from assistant.model import Message, ModelReply
from assistant.remembering import EXTRACTION_PROMPT, SHORTEN_REQUEST, SUMMARY_PROMPT
from assistant.testing import ScriptedModel, calls, text
from memory.compression import SUMMARY_PREFIX
from memory.tokens import estimate_message_tokens, estimate_tokens
from tools.base import ToolArgs, tool

FACT = "4417"
FIRST_TURN = f"Please remember that my locker code is {FACT}."
LAST_TURN = "What is my locker code?"
CITIES = ["Berlin", "Lyon", "Osaka", "Toronto", "Lisbon", "Nairobi", "Oslo", "Denver"]
ZH_CITIES = ["北京", "上海", "成都", "杭州", "广州", "西安", "武汉", "厦门"]
SUMMARY_WORDS = 200
SHORTEN_MARKER = re.escape(SHORTEN_REQUEST.split("{words}")[0].split(".")[-1].strip()) + r"\s*"


class WeatherArgs(ToolArgs):
    city: str = Field(description="City name, e.g. 'Berlin' or '成都'.")
    day: str = Field(description="Day as YYYY-MM-DD.")


@tool(version="1.0")
def weather_hourly(args: WeatherArgs) -> dict[str, Any]:
    """Hourly weather forecast for one city and day.

    Call this when the user asks about the weather, temperature or rain somewhere on a
    given day. Answer with the high, the low and the total rain from the result.
    """
    seed = int(hashlib.sha256(f"{args.city}|{args.day}".encode()).hexdigest()[:8], 16)
    hours = []
    for hour in range(24):
        temp = 8 + (seed >> (hour % 16)) % 15 + (hour in range(11, 17)) * 4
        hours.append(
            {
                "hour": f"{hour:02d}:00",
                "temp_c": temp,
                "rain_mm": round(((seed >> hour) % 7) * 0.3, 1),
                "wind_kmh": 5 + (seed >> (hour + 3)) % 20,
                "humidity": 40 + (seed >> (hour + 5)) % 50,
            }
        )
    temps = [h["temp_c"] for h in hours]
    return {
        "city": args.city,
        "day": args.day,
        "high_c": max(temps),
        "low_c": min(temps),
        "rain_total_mm": round(sum(h["rain_mm"] for h in hours), 1),
        "hours": hours,
    }


def user_text(turn: int) -> str:
    if turn == 1:
        return FIRST_TURN
    a, b = 17 + turn * 3, 29 + turn % 11
    day = f"2025-{1 + turn % 12:02d}-{1 + turn % 28:02d}"
    if turn % 2:
        return f"{ZH_CITIES[turn % len(ZH_CITIES)]}{day}的天气怎么样？另外 {a} 乘 {b} 等于多少？"
    return f"What's the weather in {CITIES[turn % len(CITIES)]} on {day}, and what is {a} * {b}?"


class Responder:
    """Plays the model: a tool round then an answer per turn; summaries; extraction."""

    def __init__(self, *, growing: bool = False) -> None:
        self.growing = growing
        self.turn_text = ""
        self.turn = 0
        self.summaries = 0
        self.shortenings = 0
        self.extractions = 0
        self.found_in: list[str] = []

    def __call__(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> ModelReply:
        head = messages[0].get("content") or ""
        if tools is None and head == SUMMARY_PROMPT:
            body = messages[1]["content"] or ""
            limit = re.search(SHORTEN_MARKER + r"(\d+) words", body)
            if limit:
                self.shortenings += 1
                return text(self.summary(body, int(limit.group(1))))
            self.summaries += 1
            return text(self.summary(body, None if self.growing else SUMMARY_WORDS))
        if tools is None and head == EXTRACTION_PROMPT:
            self.extractions += 1
            return text(self.extract(messages[1]["content"] or ""))
        last = messages[-1]
        if last["role"] == "tool":
            return text(self.answer(messages))
        if last["role"] == "user" and last.get("content") == self.turn_text:
            return self.plan(messages)
        return text(self.answer(messages))  # a corrective request (L16): same answer

    # -- the loop ---------------------------------------------------------------------

    def plan(self, messages: Sequence[Message]) -> ModelReply:
        prefix = f"t{self.turn}"
        if self.turn_text == FIRST_TURN:
            arguments = {"text": f"My locker code is {FACT}.", "kind": "fact"}
            arguments["subject"] = "locker code"
            return calls(("memory_remember", arguments), prefix=prefix)
        if self.turn_text == LAST_TURN:
            self.found_in = self.where_is_fact(messages)
            if self.found_in:
                return text(f"Your locker code is {FACT}.")
            return calls(("memory_recall", {"query": "locker code"}), prefix=prefix)
        city = re.search(r"weather in (\w+)", self.turn_text)
        zh_city = re.match(r"^(\D+?)\d", self.turn_text)
        day = re.search(r"\d{4}-\d{2}-\d{2}", self.turn_text)
        numbers = re.findall(r"(\d+) (?:\*|乘) (\d+)", self.turn_text)
        assert day and numbers, self.turn_text
        where = city.group(1) if city else (zh_city.group(1) if zh_city else "?")
        return calls(
            ("weather_hourly", {"city": where, "day": day.group()}),
            ("calc_evaluate", {"expression": f"{numbers[0][0]} * {numbers[0][1]}"}),
            prefix=prefix,
        )

    def answer(self, messages: Sequence[Message]) -> str:
        results: dict[str, Any] = {}
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            try:
                results.update(json.loads(message.get("content") or "{}"))
            except ValueError:
                continue
        if self.turn_text == FIRST_TURN:
            return f"Noted: your locker code is {FACT}."
        if self.turn_text == LAST_TURN:
            found = json.dumps(results, ensure_ascii=False)
            if FACT in found:
                self.found_in = ["memory_recall tool"]
                return f"Your locker code is {FACT}."
            return "I have nothing stored about your locker code."
        if "high_c" not in results or "value" not in results:
            return "Sorry, a tool failed."
        if re.search(r"[\u4e00-\u9fff]", self.turn_text):
            return (
                f"{results['city']}{results['day']}最高{results['high_c']}°C，最低"
                f"{results['low_c']}°C，降雨{results['rain_total_mm']}毫米；"
                f"{results['expression']} = {results['value']}。"
            )
        return (
            f"In {results['city']} on {results['day']}: high {results['high_c']}°C, low "
            f"{results['low_c']}°C, {results['rain_total_mm']} mm of rain. "
            f"{results['expression']} = {results['value']}."
        )

    def where_is_fact(self, messages: Sequence[Message]) -> list[str]:
        system = messages[0].get("content") or ""
        places = []
        memory_part, _, summary_part = system.partition("Summary of the earlier conversation")
        if FACT in memory_part:
            places.append("memory block (system prompt)")
        if FACT in summary_part:
            places.append("running summary")
        if any(FACT in (m.get("content") or "") for m in messages[1:-1]):
            places.append("verbatim history")
        return places

    # -- summariser and extractor -------------------------------------------------------

    def summary(self, body: str, max_words: int | None) -> str:
        """Previous lines plus one per new request; the newest that fit `max_words`
        (a model that ignores the limit is played with None)."""
        previous, _, new = body.partition("New messages:\n")
        lines = [
            line.strip()
            for line in previous.removeprefix("Previous summary:\n").splitlines()
            if line.strip().startswith("- ")
        ]
        for line in new.splitlines():
            if line.startswith("user: "):
                lines.append("- The user asked: " + line[len("user: ") :])
        words = 0
        kept: list[str] = []
        for line in reversed(lines):
            words += len(line.split()) + len(re.findall(r"[\u4e00-\u9fff]", line)) // 2
            if max_words is not None and words > max_words:
                break
            kept.append(line)
        return "\n".join(reversed(kept)) or "- Nothing to keep."

    def extract(self, transcript: str) -> str:
        found = []
        for line in transcript.splitlines():
            match = re.match(r"user: .*remember that (.+?)\.?$", line, re.IGNORECASE)
            if match:
                fact = match.group(1)
                fact = fact[0].upper() + fact[1:] + "."
                found.append({"text": fact, "kind": "fact", "subject": "locker code"})
        return json.dumps({"conclusions": found})


def run(
    turns: int, policy: dict[str, Any] | None = None, *, growing: bool = False
) -> dict[str, Any]:
    responder = Responder(growing=growing)
    model = ScriptedModel([responder] * (turns * 6 + 50), name="scripted-bench")
    per_turn: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="compression-tokens-") as home:
        assistant = Assistant(load_settings({"ASSISTANT_HOME": home}), model=model)
        try:
            assistant.registry.register(weather_hourly)
            assert assistant.memory is not None
            compressor = assistant.memory.compressor
            if policy:
                compressor.policy = compressor.policy.model_copy(update=policy)
            session = "bench-compression"
            answer = ""
            began = time.perf_counter()
            for turn in range(1, turns + 1):
                said = LAST_TURN if turn == turns else user_text(turn)
                responder.turn, responder.turn_text = turn, said
                full = _uncompressed_tokens(assistant, session, said)
                context = compressor.context(session)
                first_request = len(model.requests)
                outcome = assistant.ask(said, session=session)
                if not outcome.ok:
                    raise RuntimeError(f"turn {turn} stopped: {outcome.stop_reason}")
                request = next(r for r in model.requests[first_request:] if r["tools"] is not None)
                messages = request["messages"]
                per_turn.append(
                    {
                        "turn": turn,
                        "prompt_tokens": estimate_message_tokens(messages),
                        "full_history_tokens": full,
                        "messages": len(messages),
                        "summary_tokens": _summary_tokens(messages),
                        "tool_schema_tokens": estimate_tokens(json.dumps(request["tools"])),
                        "elided_results": context.elided_results,
                        "collapsed_turns": context.collapsed_turns,
                    }
                )
                folds = len(assistant.memory.compressor.history(session))
                per_turn[-1]["folded_after"] = folds > sum(r["folded_after"] for r in per_turn[:-1])
                answer = outcome.answer
                if turn % 25 == 0:
                    print(f"  turn {turn}/{turns}", file=sys.stderr, flush=True)
            elapsed = time.perf_counter() - began
            stored = assistant.memory.store.list()
            summaries = assistant.memory.compressor.history(session)
        finally:
            assistant.close()
    return {
        "per_turn": per_turn,
        "answer": answer,
        "found_in": responder.found_in,
        "summary_requests": responder.summaries,
        "shorten_requests": responder.shortenings,
        "stored_summary_tokens": [summary.tokens for summary in summaries],
        "extraction_requests": responder.extractions,
        "summaries_stored": len(summaries),
        "conclusions": [c.text for c in stored],
        "elapsed_s": round(elapsed, 1),
    }


def _uncompressed_tokens(assistant: Assistant, session: str, said: str) -> int:
    """The prompt without compression: system prompt (memory block, no summary), every
    stored message of the session, the new user message."""
    assert assistant.memory is not None
    block = assistant.memory.memory_block(assistant.memory.relevant(said))
    messages = [
        {"role": "system", "content": system_prompt(block)},
        *assistant.working.load(session),
        {"role": "user", "content": said},
    ]
    return estimate_message_tokens(messages)


def _summary_tokens(messages: Sequence[Message]) -> int:
    system = messages[0].get("content") or ""
    at = system.find("Summary of the earlier conversation")
    tokens = estimate_tokens(system[at:]) if at >= 0 else 0
    return tokens + sum(
        estimate_tokens(m.get("content") or "")
        for m in messages
        if m["role"] == "system" and (m.get("content") or "").startswith(SUMMARY_PREFIX)
    )


def report(result: dict[str, Any], turns: int, label: str) -> dict[str, Any]:
    rows = {row["turn"]: row for row in result["per_turn"]}
    early = rows[min(20, turns)]
    late = rows[turns]
    steady = [row["prompt_tokens"] for row in result["per_turn"] if row["turn"] >= early["turn"]]
    ratio = late["prompt_tokens"] / early["prompt_tokens"]
    # the strict target compares two turns, which could land anywhere between folds; the
    # largest over the smallest prompt from turn 20 on bounds that ratio for every pair
    worst = max(steady) / min(steady)
    recalled = FACT in result["answer"]
    first_band = [
        rows[t]["prompt_tokens"] for t in range(early["turn"], min(early["turn"] + 20, turns + 1))
    ]
    last_band = [rows[t]["prompt_tokens"] for t in range(max(turns - 19, 1), turns + 1)]
    at = sorted({min(t, turns) for t in (20, 100, turns)})
    summary = {
        "summariser": label,
        "turn_20": early,
        "turn_last": late,
        "ratio_last_to_20": round(ratio, 3),
        "target_ratio_met": ratio <= 1.3,
        "prompt_tokens_from_turn_20": {
            "median": statistics.median(steady),
            "min": min(steady),
            "max": max(steady),
        },
        "worst_ratio_any_two_turns_from_20": round(worst, 3),
        "flat_for_any_phase": worst <= 1.3,
        "envelope_turns_20_39": [min(first_band), max(first_band)],
        "envelope_last_20_turns": [min(last_band), max(last_band)],
        "envelope_growth": round(max(last_band) / max(first_band), 3),
        "summary_tokens_at": {str(t): rows[t]["summary_tokens"] for t in at},
        "stored_summary_tokens_max": max(result["stored_summary_tokens"], default=0),
        "fact_recalled": recalled,
        "answer": result["answer"],
        "found_in": result["found_in"],
        "summary_requests": result["summary_requests"],
        "shorten_requests": result["shorten_requests"],
        "summaries_stored": result["summaries_stored"],
        "extraction_requests": result["extraction_requests"],
        "active_conclusions": result["conclusions"],
        "elapsed_s": result["elapsed_s"],
        "machine": {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]},
    }
    print(f"Compression over a {turns}-turn tool-heavy session (ScriptedModel, {label} summariser)")
    print(f"  {os.cpu_count()} CPUs (shared); {result['elapsed_s']} s for {turns} turns")
    print(
        f"  {'turn':>5} {'prompt tokens':>13} {'full history':>12} {'messages':>8} "
        f"{'summary':>7} {'stubs':>5} {'collapsed':>9}"
    )
    shown = sorted({min(t, turns) for t in (2, 10, 13, 14, 20, 50, 100, 150, turns - 1, turns)})
    for row in (rows[t] for t in shown):
        print(
            f"  {row['turn']:>5} {row['prompt_tokens']:>13} {row['full_history_tokens']:>12} "
            f"{row['messages']:>8} {row['summary_tokens']:>7} {row['elided_results']:>5} "
            f"{row['collapsed_turns']:>9}"
        )
    band = summary["prompt_tokens_from_turn_20"]
    print(
        f"  turn {turns} / turn 20 = {late['prompt_tokens']} / {early['prompt_tokens']} = "
        f"{ratio:.2f} (target <= 1.3: {'met' if ratio <= 1.3 else 'NOT met'}); "
        f"uncompressed it would be {late['full_history_tokens']} at turn {turns}."
    )
    print(
        f"  any phase: from turn 20 on the prompt stays within {band['min']}-{band['max']} "
        f"tokens (median {band['median']}), so any later turn / any earlier turn <= "
        f"{worst:.2f} ({'flat' if worst <= 1.3 else 'NOT flat'} by the 1.3 target)"
    )
    print(
        f"  sawtooth envelope: turns 20-39 {min(first_band)}-{max(first_band)}, last 20 turns "
        f"{min(last_band)}-{max(last_band)} tokens: growth of the peak "
        f"{summary['envelope_growth']}x"
    )
    sizes = ", ".join(f"turn {t}: {rows[t]['summary_tokens']}" for t in at)
    print(
        f"  running summary as sent (tokens): {sizes}; largest stored "
        f"{summary['stored_summary_tokens_max']}"
    )
    print(
        f"  tool schemas add {late['tool_schema_tokens']} tokens per request on top (constant,"
        " not counted above)."
    )
    folds = [row["turn"] for row in result["per_turn"] if row["folded_after"]]
    summary["folded_after_turns"] = folds
    print(f"  history folded into the summary after turns {folds}")
    print(
        f"  {result['summary_requests']} summary requests, {result['shorten_requests']} "
        f"shorten requests, {result['summaries_stored']} summaries stored, "
        f"{result['extraction_requests']} extraction requests"
    )
    print(
        f"  turn {turns} {LAST_TURN!r} -> {result['answer']!r}: fact "
        f"{'recalled' if recalled else 'NOT recalled'}, found in "
        f"{', '.join(result['found_in']) or 'nothing the model received'}"
    )
    print(f"  active conclusions at the end: {result['conclusions']}")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--summariser",
        choices=("capped", "growing"),
        default="capped",
        help="capped: keeps to the prompt's 200 words; growing: ignores it (only a shorten"
        " request, at the summary cap, makes it shorter)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.turns < 20:
        parser.error("--turns must be at least 20")
    result = run(args.turns, growing=args.summariser == "growing")
    summary = report(result, args.turns, args.summariser)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
