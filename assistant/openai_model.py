"""`OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint (SPEC O1).

The SDK already retries 429, 5xx and connection errors with exponential backoff (and
honours Retry-After); this class sets its timeout and retry count from the settings and
turns every SDK failure into one of our `ModelError`s with a message naming the endpoint.
"""

from __future__ import annotations

import json
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
        self.endpoint = settings.base_url or "https://api.openai.com/v1"
        self._client = client or openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
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
        if timeout_s is not None:
            request["timeout"] = min(timeout_s, self.settings.timeout_s)
        try:
            completion = self._client.chat.completions.create(**request)
        except self._openai.OpenAIError as exc:
            raise self._translate(exc) from exc
        return self._reply(completion, messages)

    def _translate(self, exc: Exception) -> ModelError:
        openai, where = self._openai, f"{self.endpoint} (model {self.name})"
        retries = self.settings.max_retries
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(f"{where} did not answer within {self.settings.timeout_s:g} s")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(f"cannot reach {where}: {exc.__cause__ or exc}")
        if isinstance(exc, openai.RateLimitError):
            return ModelRateLimited(
                f"{where} kept answering 429 (rate limited) after {retries} retries"
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
