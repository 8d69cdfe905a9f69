"""The tool contract: a typed function plus a pydantic argument model.

The JSON schema the model sees is derived from the argument model; the description is
the function's docstring and says *when* to call the tool. Flags tell the runner how the
tool may be scheduled, cached and confirmed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model, model_validator

from tools.schema_subset import make_portable


class ToolError(Exception):
    """A failure the model should see as data: `{"error": code, "detail": detail}`."""

    def __init__(self, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.extra = extra

    def payload(self) -> dict[str, Any]:
        return {"error": self.code, "detail": self.detail, **self.extra}


def _is_sequence_annotation(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    return any(_is_sequence_annotation(arg) for arg in get_args(annotation))


class ToolArgs(BaseModel):
    """Base of argument models: forgiving about the shapes models really send.

    Lax coercion ("3" -> 3) is pydantic's default; on top of it a one-element list where
    a single value is expected is unwrapped, and unknown keys are ignored.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _unwrap_singleton_lists(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(isinstance(v, list) for v in data.values()):
            return data
        fixed = dict(data)
        for name, info in cls.model_fields.items():
            keys = [name, info.alias] if info.alias else [name]
            for key in keys:
                value = fixed.get(key)
                if (
                    isinstance(value, list)
                    and len(value) == 1
                    and not _is_sequence_annotation(info.annotation)
                ):
                    fixed[key] = value[0]
        return fixed


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the call it serves."""

    session: str = ""
    turn_id: str = ""
    call_id: str = ""
    idempotency_key: str = ""
    unattended: bool = False
    confirmed: bool = False
    # an unattended run: which one (`job:NAME`, `watch:RULE`), and the vault folders it may
    # write in (None: anywhere; the user's own turns and confirmed actions)
    origin: str = ""
    write_scope: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ActionPreview:
    """What a dangerous call would change, shown to the user before they confirm (S2)."""

    summary: str
    diff: str | None = None


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            key: _strip_titles(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    func: Callable[..., Any]
    version: str = "1"
    read_only: bool = True
    dangerous: bool = False
    sequential: bool = False
    timeout_s: float | None = None
    cacheable: bool = False
    inline: bool = False
    takes_context: bool = False
    spread_args: bool = False
    preview: Callable[[BaseModel, ToolContext], ActionPreview] | None = None
    # Where the tool comes from ("built-in", "plugin NAME", "mcp SERVER"), for `assistant
    # tools` and status; and a group that overrides the name prefix (an MCP server's tools,
    # `mcp_git_git_log`, form the group `mcp_git`, not one `mcp` group for every server).
    origin: str = "built-in"
    group_name: str | None = None

    @property
    def group(self) -> str:
        """Tools are grouped by the prefix before the first underscore (`vault_read`)."""
        return self.group_name or self.name.split("_", 1)[0]

    @cached_property
    def parameters_schema(self) -> dict[str, Any]:
        """The argument model's schema in the portable subset grammar-based servers take
        (`tools.schema_subset`); pydantic still enforces every dropped limit."""
        schema = make_portable(_strip_titles(self.args_model.model_json_schema()))
        schema.setdefault("properties", {})
        return schema

    @cached_property
    def definition(self) -> dict[str, Any]:
        """The OpenAI `tools` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema,
            },
        }

    def describe(self, args: BaseModel, context: ToolContext) -> ActionPreview:
        """The preview of a dangerous call; without a preview function, the call itself."""
        if self.preview is not None:
            return self.preview(args, context)
        shown = args.model_dump_json(exclude_none=True)
        return ActionPreview(summary=f"run {self.name} with {shown}")

    def invoke(self, args: BaseModel, context: ToolContext) -> Any:
        if self.spread_args:
            kwargs = {name: getattr(args, name) for name in type(args).model_fields}
            if self.takes_context:
                kwargs["context"] = context
            return self.func(**kwargs)
        if self.takes_context:
            return self.func(args, context)
        return self.func(args)


def _args_model_from_signature(func: Callable[..., Any], name: str) -> type[BaseModel]:
    hints = get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.name == "context":
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    camel = "".join(part.title() for part in name.split("_"))
    return create_model(f"{camel}Args", __base__=ToolArgs, **fields)


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    version: str = "1",
    read_only: bool = True,
    dangerous: bool = False,
    sequential: bool = False,
    timeout_s: float | None = None,
    cacheable: bool | None = None,
    inline: bool = False,
    preview: Callable[[BaseModel, ToolContext], ActionPreview] | None = None,
) -> Any:
    """Turn a typed function into a `Tool`.

    Either the function takes one parameter annotated with a `ToolArgs` subclass (plus an
    optional `context: ToolContext`), or its parameters themselves become the argument
    model. Read-only tools are cacheable unless told otherwise. A `dangerous` tool runs
    only after the user confirms; `preview` says what it would change.

    `inline` is for pure computations whose own argument limits bound their cost (like
    `calc_evaluate`): they run in the loop's thread, skipping the hand-off to the worker
    pool, and so cannot be timed out. Only read-only, non-dangerous tools may be inline.
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        tool_name = name or fn.__name__
        if inline and (not read_only or dangerous or timeout_s is not None):
            raise ValueError(
                f"tool {tool_name!r}: only a read-only, non-dangerous tool without its own "
                "timeout can run inline (an inline call cannot be stopped)"
            )
        description = inspect.cleandoc(fn.__doc__ or "")
        if not description:
            raise ValueError(f"tool {tool_name!r} needs a docstring saying when to call it")
        hints = get_type_hints(fn)
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "context"]
        takes_context = "context" in inspect.signature(fn).parameters
        first = hints.get(params[0].name) if params else None
        if len(params) == 1 and isinstance(first, type) and issubclass(first, BaseModel):
            args_model, spread = first, False
        else:
            args_model, spread = _args_model_from_signature(fn, tool_name), True
        return Tool(
            name=tool_name,
            description=description,
            args_model=args_model,
            func=fn,
            version=version,
            read_only=read_only,
            dangerous=dangerous,
            sequential=sequential,
            timeout_s=timeout_s,
            cacheable=read_only if cacheable is None else cacheable,
            inline=inline,
            takes_context=takes_context,
            spread_args=spread,
            preview=preview,
        )

    return wrap(func) if func is not None else wrap
