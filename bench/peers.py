"""Per-turn framework overhead of peer agent frameworks, driven by zero-latency test models.

``bench/loop_overhead.py`` compares our bounded tool loop against these peers. Each peer is
driven by its own framework's test double (so no network, no tokens), which leaves only the
framework's own bookkeeping in the measured time: message/state plumbing, tool-schema
validation, argument parsing, tool dispatch, and the sync-to-async bridge of its run entry point.

Scenarios (one user turn each, tool ``add(a: int, b: int) -> int``):

* ``"a"``: one tool call, then a final answer (2 model requests, 1 tool execution).
* ``"b"``: five parallel tool calls in one reply, then a final answer (2 requests, 5 executions).
* ``"c"``: eight sequential rounds of one tool call each, then a final answer (9 requests,
  8 executions).

Every factory runs one validation turn before returning and raises ``RuntimeError`` unless the
model was asked exactly the scripted number of times and the tool ran exactly the expected
number of times, so a timing never silently measures a short-circuited loop.

Framework imports happen inside the factories so that importing this module stays cheap.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from typing import Any

Turn = Callable[[], None]
PeerFactory = Callable[[str], Turn]

#: Scenario -> number of tool calls in each model reply before the final (text) reply.
SCENARIOS: dict[str, tuple[int, ...]] = {
    "a": (1,),
    "b": (5,),
    "c": (1,) * 8,
}

PROMPT = "Please add some numbers."
FINAL_TEXT = "Done."

#: Peer name -> the distribution whose version identifies it.
_DISTRIBUTIONS: dict[str, str] = {
    "openai-agents": "openai-agents",
    "pydantic-ai": "pydantic-ai-slim",
    "langgraph": "langgraph",
}


class _Script:
    """Shared scripted "model brain": which reply comes next, and how many tools ran.

    State is reset at the start of every turn, so the same agent/graph object can be reused
    across timed turns without rebuilding anything inside the timed region.
    """

    def __init__(self, scenario: str) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; expected one of {sorted(SCENARIOS)}")
        self.scenario = scenario
        self.steps: tuple[int, ...] = (*SCENARIOS[scenario], 0)
        self.index = 0
        self.tool_runs = 0

    def reset(self) -> None:
        """Start a new turn."""
        self.index = 0
        self.tool_runs = 0

    def next_reply(self) -> tuple[int, int]:
        """Return ``(step_index, n_tool_calls)`` for the next model request; 0 calls = final."""
        if self.index >= len(self.steps):
            raise RuntimeError(
                f"scenario {self.scenario!r}: model called more than {len(self.steps)} times"
            )
        step = self.index
        self.index += 1
        return step, self.steps[step]

    def add(self, a: int, b: int) -> int:
        """The benchmark tool; counts executions so the harness can verify the loop."""
        self.tool_runs += 1
        return a + b

    def check(self, peer: str) -> None:
        """Raise unless the last turn consumed the whole script and ran every tool call."""
        want_tools = sum(self.steps)
        if self.index != len(self.steps) or self.tool_runs != want_tools:
            raise RuntimeError(
                f"{peer} scenario {self.scenario!r}: expected {len(self.steps)} model requests "
                f"and {want_tools} tool runs, got {self.index} requests and "
                f"{self.tool_runs} tool runs"
            )


def _call_args(step: int, i: int) -> dict[str, int]:
    """Deterministic, distinct arguments for tool call ``i`` of reply ``step``."""
    return {"a": step, "b": i}


def _validated(
    script: _Script, peer: str, run_turn: Callable[[], Any], *, own_loop: bool = False
) -> Turn:
    """Run one checked turn, then hand back the cheap timed callable.

    With ``own_loop`` the turn installs a private event loop as the thread's current loop
    first. Both async frameworks' ``run_sync`` reuse the thread's default loop, and the Agents
    SDK calls ``shutdown_asyncgens()`` on it after every run; sharing one loop would make the
    peers' results depend on the order they were benchmarked in within one process.
    """
    import asyncio
    import weakref

    loop = asyncio.new_event_loop() if own_loop else None
    set_loop = asyncio.set_event_loop

    def turn() -> None:
        script.reset()
        if loop is not None:
            set_loop(loop)
        run_turn()

    if loop is not None:
        weakref.finalize(turn, loop.close)  # no ResourceWarning once the bench drops the turn
    turn()
    script.check(peer)
    return turn


def _missing(peer: str, exc: ImportError) -> ImportError:
    """A clear ImportError naming the distribution to install."""
    dist = _DISTRIBUTIONS[peer]
    return ImportError(
        f"peer {peer!r} needs the {dist!r} distribution installed "
        f"(pip install {dist!r}, or the project's 'bench' extra): {exc}"
    )


# --------------------------------------------------------------------------- OpenAI Agents SDK


def _openai_agents(scenario: str) -> Turn:
    """OpenAI Agents SDK: custom ``Model`` returning scripted ``ModelResponse`` objects."""
    try:
        import agents
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )
    except ImportError as exc:
        raise _missing("openai-agents", exc) from exc

    agents.set_tracing_disabled(True)
    script = _Script(scenario)

    class ScriptedModel(Model):
        """Minimal equivalent of the SDK tests' FakeModel: no I/O, fresh objects per call."""

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            step, n_calls = script.next_reply()
            output: list[Any]
            if n_calls:
                output = [
                    ResponseFunctionToolCall(
                        id=f"fc_{step}_{i}",
                        call_id=f"call_{step}_{i}",
                        type="function_call",
                        name="add",
                        arguments=json.dumps(_call_args(step, i)),
                    )
                    for i in range(n_calls)
                ]
            else:
                output = [
                    ResponseOutputMessage(
                        id=f"msg_{step}",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[
                            ResponseOutputText(text=FINAL_TEXT, type="output_text", annotations=[])
                        ],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark only uses non-streamed runs")

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return script.add(a, b)

    agent = agents.Agent(
        name="bench",
        instructions="You add numbers.",
        model=ScriptedModel(),
        tools=[agents.function_tool(add)],
    )

    def run_turn() -> None:
        result = agents.Runner.run_sync(agent, PROMPT)
        if result.final_output != FINAL_TEXT:
            raise RuntimeError(f"openai-agents: unexpected final output {result.final_output!r}")

    return _validated(script, "openai-agents", run_turn, own_loop=True)


# --------------------------------------------------------------------------------- PydanticAI


def _pydantic_ai(scenario: str) -> Turn:
    """PydanticAI: ``FunctionModel`` scripted per scenario."""
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import (
            ModelMessage,
            ModelResponse,
            TextPart,
            ToolCallPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError as exc:
        raise _missing("pydantic-ai", exc) from exc

    script = _Script(scenario)

    async def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # async on purpose: a sync FunctionModel function is pushed to a worker thread, a
        # cost no real (async HTTP) model adapter pays.
        step, n_calls = script.next_reply()
        if n_calls:
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        tool_name="add", args=_call_args(step, i), tool_call_id=f"call_{step}_{i}"
                    )
                    for i in range(n_calls)
                ]
            )
        return ModelResponse(parts=[TextPart(FINAL_TEXT)])

    agent = Agent(FunctionModel(model_fn), instructions="You add numbers.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return script.add(a, b)

    def run_turn() -> None:
        result = agent.run_sync(PROMPT)
        if result.output != FINAL_TEXT:
            raise RuntimeError(f"pydantic-ai: unexpected final output {result.output!r}")

    return _validated(script, "pydantic-ai", run_turn, own_loop=True)


# ---------------------------------------------------------------------------------- LangGraph


def _langgraph(scenario: str) -> Turn:
    """LangGraph: prebuilt ``create_react_agent`` with a scripted ``BaseChatModel``."""
    try:
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, BaseMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool
        from langgraph.prebuilt import create_react_agent
    except ImportError as exc:
        raise _missing("langgraph", exc) from exc

    script = _Script(scenario)

    class ScriptedChatModel(BaseChatModel):
        """Fake chat model: ``bind_tools`` is a no-op, replies come from the shared script.

        langchain_core's ``GenericFakeChatModel`` does not implement ``bind_tools``, which
        ``create_react_agent`` requires, hence this small subclass.
        """

        @property
        def _llm_type(self) -> str:
            return "scripted-bench"

        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
            return self

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            step, n_calls = script.next_reply()
            if n_calls:
                message = AIMessage(
                    content="",
                    tool_calls=[
                        {
                            "name": "add",
                            "args": _call_args(step, i),
                            "id": f"call_{step}_{i}",
                            "type": "tool_call",
                        }
                        for i in range(n_calls)
                    ],
                )
            else:
                message = AIMessage(content=FINAL_TEXT)
            return ChatResult(generations=[ChatGeneration(message=message)])

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return script.add(a, b)

    with warnings.catch_warnings():
        # create_react_agent is deprecated in favour of langchain.agents.create_agent (which
        # lives in the separate `langchain` package); the prebuilt graph is still shipped.
        warnings.simplefilter("ignore")
        graph = create_react_agent(ScriptedChatModel(), [add], prompt="You add numbers.")

    def run_turn() -> None:
        state = graph.invoke({"messages": [("user", PROMPT)]})
        final = state["messages"][-1].content
        if final != FINAL_TEXT:
            raise RuntimeError(f"langgraph: unexpected final output {final!r}")

    return _validated(script, "langgraph", run_turn)


PEERS: dict[str, PeerFactory] = {
    "openai-agents": _openai_agents,
    "pydantic-ai": _pydantic_ai,
    "langgraph": _langgraph,
}


def available_peers() -> dict[str, str]:
    """Peer name -> installed version, for the peers whose framework imports cleanly.

    Uses package metadata plus a real import so a half-installed framework is left out
    instead of failing in the middle of a benchmark run.
    """
    import importlib
    import importlib.metadata

    modules = {"openai-agents": "agents", "pydantic-ai": "pydantic_ai", "langgraph": "langgraph"}
    found: dict[str, str] = {}
    for peer, dist in _DISTRIBUTIONS.items():
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            if peer != "pydantic-ai":
                continue
            try:  # the full `pydantic-ai` distribution also provides the module
                version = importlib.metadata.version("pydantic-ai")
            except importlib.metadata.PackageNotFoundError:
                continue
        try:
            importlib.import_module(modules[peer])
        except ImportError:
            continue
        found[peer] = version
    return found


def _median_ms(turn: Turn, warmup: int = 20, runs: int = 200) -> float:
    """Median wall time of one turn in milliseconds, after ``warmup`` untimed turns."""
    import statistics

    for _ in range(warmup):
        turn()
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        turn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000.0


if __name__ == "__main__":
    for name, version in available_peers().items():
        for scenario in SCENARIOS:
            median = _median_ms(PEERS[name](scenario))
            print(f"{name:14} {version:10} scenario {scenario}: {median:8.3f} ms/turn")
