"""An order judge for tests of what recall and forget do with a judge's moves."""

from __future__ import annotations

from memory.orderjudge import OrderJudge
from memory.pairjudge import Tree


def always_sure() -> OrderJudge:
    """A judge sure of every newer row (one leaf, p ≈ 0.98): what recall and forget do
    with its moves is theirs. (The shipped judge, trained on both kinds of question, is
    rarely this sure.)"""
    leaf = Tree((-2,), (-2.0,), (-1,), (-1,), (4.0,))
    return OrderJudge((leaf,), base=0.0, rate=1.0, threshold=0.7)
