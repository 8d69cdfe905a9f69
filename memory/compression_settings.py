"""The session-compression knobs, apart from the compressor: the configuration inherits
them, and loading the configuration should not import SQLite or the store."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CompressionSettings(BaseModel):
    """The compression knobs (SPEC M2 defaults): one declaration for the `[memory]`
    section of the configuration and for `memory.compression.CompressionPolicy`, which
    both inherit them."""

    compress_after_turns: int = Field(
        12, ge=2, description="Fold when more user turns than this are verbatim."
    )
    keep_turns: int = Field(4, ge=1, description="User turns that stay verbatim after folding.")
    token_budget: int = Field(
        6000, ge=100, description="Estimated tokens of the unfolded history (as sent) to fold past."
    )
    mask_after_turns: int = Field(
        4, ge=1, description="Turns whose tool results are sent in full; older ones as stubs."
    )
    mask_preview_chars: int = Field(200, ge=0, description="Characters of a result in its stub.")
    older_turns_tokens: int = Field(
        400,
        ge=0,
        description="Tokens for unfolded turns older than mask_after_turns, stubs included; "
        "past it the oldest are sent as request and answer only.",
    )
    summary_max_tokens: int = Field(
        500, ge=50, description="Cap on the running summary; past it the summariser shortens it."
    )
