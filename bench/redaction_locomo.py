"""What the redactor masks in ordinary conversation: every dialog turn (and image caption)
of the LoCoMo dev file, which holds no secrets, so every mask is a false positive.

Prints the number of texts, characters, masks by kind, and each masked text (up to 20).
Usage: python bench/redaction_locomo.py [/work/shared/bench/locomo_dev.json]
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from memory.redact import Redactor

DEFAULT = Path("/work/shared/bench/locomo_dev.json")


def texts(path: Path) -> list[str]:
    found = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    found.append(turn["text"])
                    if turn.get("blip_caption"):
                        found.append(turn["blip_caption"])
        for qa in sample["qa"]:
            found.append(qa["question"])
            answer = qa.get("answer", qa.get("adversarial_answer"))
            if answer is not None:
                found.append(str(answer))
    return found


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    corpus = texts(path)
    redactor = Redactor()
    masks: Counter[str] = Counter()
    examples = []
    started = time.perf_counter()
    for text in corpus:
        masked = redactor.text(text)
        if masked != text:
            for kind in redactor.kinds:
                masks[kind] += masked.count(f"[REDACTED:{kind}]")
            examples.append((text, masked))
    seconds = time.perf_counter() - started
    print(f"{len(corpus)} texts, {sum(map(len, corpus))} characters, {seconds:.2f} s")
    print(f"masked: {sum(masks.values())} ({dict(masks) or 'none'})")
    for text, masked in examples[:20]:
        print(f"  {text!r}\n  -> {masked!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
