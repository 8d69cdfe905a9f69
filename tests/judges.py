"""An order judge for tests of what recall and forget do with a judge's moves."""

from __future__ import annotations

import math

from memory.orderjudge import OrderJudge
from memory.pairjudge import Tree


def _one_leaf(log_odds: float, threshold: float) -> OrderJudge:
    leaf = Tree((-2,), (-2.0,), (-1,), (-1,), (log_odds,))
    return OrderJudge((leaf,), base=0.0, rate=1.0, threshold=threshold)


def always_sure() -> OrderJudge:
    """A judge sure of every newer row (one leaf, p ≈ 0.98): what recall and forget do
    with its moves is theirs. (The shipped judge, trained on both kinds of question, is
    rarely this sure.)"""
    return _one_leaf(4.0, 0.7)


def sure(p: float, threshold: float = 0.62) -> OrderJudge:
    """A judge that gives every newer row the probability `p` (moving it at `threshold`,
    the shipped judge's): how sure a move must be for what follows it."""
    return _one_leaf(math.log(p / (1 - p)), threshold)
