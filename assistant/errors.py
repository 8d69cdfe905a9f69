"""The few exceptions that leave the loop; each carries a message a user can act on.

Tool failures never raise out of the loop (they become data for the model), and bound
hits are outcomes, not exceptions. What remains is: bad configuration, a model endpoint
that misbehaves or cannot be reached, and storage faults.
"""

from __future__ import annotations


class AssistantError(Exception):
    """Base of every error the CLI reports as a clear one-line message."""


class CommandError(AssistantError):
    """An operation that cannot be done; `code` names why, `status` is its HTTP status.

    Raised by the operations, the job book and the light client alike, so it lives here
    rather than with any of them.
    """

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class ConfigError(AssistantError):
    """The configuration (file or environment) is missing, unreadable or invalid."""


class ModelError(AssistantError):
    """The model endpoint failed; `code` names the kind of failure for traces and clients."""

    code = "MODEL_ERROR"


class ModelCancelled(ModelError):
    """The turn was cancelled (the daemon is stopping) while a request was in flight."""

    code = "CANCELLED"


class ModelUnavailable(ModelError):
    code = "MODEL_UNAVAILABLE"


class ModelTimeout(ModelError):
    code = "MODEL_TIMEOUT"


class ModelRateLimited(ModelError):
    code = "MODEL_RATE_LIMITED"


class ModelServerError(ModelError):
    code = "MODEL_SERVER_ERROR"


class ModelRequestError(ModelError):
    """The endpoint rejected the request (bad key, unknown model, bad payload); `status`
    is the HTTP status when the server sent one."""

    code = "MODEL_REQUEST_REJECTED"
    status: int | None = None


class ModelReplyError(ModelError):
    """The endpoint answered with something that is not a usable chat completion."""

    code = "MODEL_BAD_REPLY"


class ModelContextOverflow(ModelRequestError):
    """The request does not fit the model's context window (the server said so, or our
    estimate against `[model] context_window` did): compress and try once more."""

    code = "MODEL_CONTEXT_OVERFLOW"


class ModelEmptyReply(ModelReplyError):
    """The model answered nothing, even when asked again without tools."""

    code = "MODEL_EMPTY_REPLY"
