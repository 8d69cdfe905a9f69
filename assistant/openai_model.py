"""`OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint (SPEC O1).

Retries (429, 5xx, connection errors and timeouts) happen here, not in the SDK: with
exponential backoff that honours Retry-After, and only while the caller's time budget
lasts, so a turn's wall-clock bound also bounds its retries. Every failure becomes one
of our `ModelError`s with a message naming the endpoint.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from typing import Any

from assistant.config import ModelSettings
from assistant.errors import (
    ModelError,
    ModelRateLimited,
    ModelReplyError,
    ModelRequestError,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
)
from assistant.model import Message, ModelReply, ToolCall, Usage
from memory.tokens import estimate_message_tokens, estimate_tokens


class OpenAIChatModel:
    def __init__(self, settings: ModelSettings, *, client: Any | None = None) -> None:
        import openai

        self._openai = openai
        self.settings = settings
        self.name = settings.name
        self.remote = True  # see ChatModel: commit before each request
        self.endpoint = settings.base_url or "https://api.openai.com/v1"
        self._client = client or openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            timeout=settings.timeout_s,
            max_retries=0,
        )

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        temperature: float,
        timeout_s: float | None = None,
    ) -> ModelReply:
        request: dict[str, Any] = {
            "model": self.name,
            "messages": list(messages),
            "temperature": temperature,
        }
        if tools:
            request["tools"] = list(tools)
        budget = self.settings.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + budget
        attempt = 0
        while True:
            wait_s = min(self.settings.timeout_s, max(deadline - time.monotonic(), 0.05))
            try:
                completion = self._client.chat.completions.create(**request, timeout=wait_s)
            except self._openai.OpenAIError as exc:
                error = self._translate(exc, wait_s, attempt)
                pause = self._retry_pause(exc, attempt)
                retryable = pause is not None and attempt < self.settings.max_retries
                if not retryable or time.monotonic() + pause >= deadline:
                    raise error from exc
                time.sleep(pause)
                attempt += 1
                continue
            except ValueError as exc:  # a 200 whose body is cut short or is not JSON at all
                raise ModelReplyError(
                    f"{self.endpoint} (model {self.name}) gave an unusable reply: "
                    f"the body is not valid JSON ({exc})"
                ) from exc
            return self._reply(completion, messages)

    def _retry_pause(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when retrying cannot help."""
        openai = self._openai
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        retryable = isinstance(exc, openai.APIConnectionError | openai.RateLimitError) or (
            isinstance(exc, openai.APIStatusError) and exc.status_code >= 500
        )
        should_retry = str(headers.get("x-should-retry", "")).lower()
        if should_retry in {"true", "false"}:  # the server's own word wins, as in the SDK
            retryable = should_retry == "true"
        if not retryable:
            return None
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                return min(float(headers[name]) * scale, 60.0)
            except (KeyError, TypeError, ValueError):
                continue
        return min(0.5 * 2**attempt, 8.0) * (0.75 + random.random() / 2)

    def _translate(self, exc: Exception, waited_s: float, retries: int) -> ModelError:
        openai, where = self._openai, f"{self.endpoint} (model {self.name})"
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(f"{where} did not answer within {waited_s:.3g} s")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(f"cannot reach {where}: {exc.__cause__ or exc}")
        if isinstance(exc, openai.RateLimitError):
            return ModelRateLimited(
                f"{where} kept answering 429 (rate limited); gave up after {retries} retries"
            )
        if isinstance(exc, openai.APIStatusError):
            detail = _error_message(exc)
            if exc.status_code >= 500:
                return ModelServerError(
                    f"{where} answered HTTP {exc.status_code} after {retries} retries: {detail}"
                )
            return ModelRequestError(
                f"{where} rejected the request (HTTP {exc.status_code}): {detail}"
            )
        return ModelReplyError(f"{where} gave an unusable reply: {exc}")

    def _reply(self, completion: Any, messages: Sequence[Message]) -> ModelReply:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ModelReplyError(f"{self.endpoint} returned a completion without choices")
        message = choices[0].message
        calls = tuple(
            ToolCall(
                id=call.id or f"call_{index}",
                name=call.function.name,
                arguments=call.function.arguments or "",
            )
            for index, call in enumerate(message.tool_calls or ())
            if getattr(call, "function", None) is not None
        )
        usage = getattr(completion, "usage", None)
        if usage is not None and usage.prompt_tokens is not None:
            counted = Usage(usage.prompt_tokens, usage.completion_tokens or 0)
        else:
            produced = (message.content or "") + json.dumps(
                [c.arguments for c in calls], ensure_ascii=False
            )
            counted = Usage(
                estimate_message_tokens(messages), estimate_tokens(produced), estimated=True
            )
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            usage=counted,
            finish_reason=choices[0].finish_reason,
        )


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))
