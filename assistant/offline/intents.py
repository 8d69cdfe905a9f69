"""The offline planner's core intents: arithmetic, greetings, and who it is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assistant.offline.planner import PlannerStep, PlannerView
from tools.calc import normalize_expression

_DATE_OR_PHONE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d+(?:-\d+){2,}")
_EXPRESSION_RUN = re.compile(r"[\d.()+\-*/%]+")
_OPERATOR = re.compile(r"\*\*|[+*/%]|(?<=[\d)])-")
_CALC_CUE = re.compile(
    r"算|计算|等于|多少|几|what|calculate|compute|how much|evaluate|=|\?|？", re.IGNORECASE
)
_FOLLOW_UP_CUE = re.compile(r"再|那|然后|接着|\band\b|\bthen\b|\bminus\b|减", re.IGNORECASE)


def _balanced(run: str) -> str:
    while run.endswith(")") and run.count(")") > run.count("("):
        run = run[:-1]
    while run.startswith("(") and run.count("(") > run.count(")"):
        run = run[1:]
    return run.strip(".")


def _format_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)


@dataclass
class ArithmeticIntent:
    """Arithmetic in English and Chinese, including follow-ups on the previous result."""

    name: str = "arithmetic"
    examples: tuple[str, ...] = ("what is (12*5)+3?", "15加27等于多少", "2的10次方", "再乘以2呢")

    def expression(self, view: PlannerView) -> str | None:
        text = _DATE_OR_PHONE.sub(" ", view.user_text)
        normalised = normalize_expression(text)
        runs = [_balanced(run) for run in _EXPRESSION_RUN.findall(normalised)]
        runs = [run for run in runs if re.search(r"\d", run)]
        if not runs:
            return None
        run = max(runs, key=len)
        starts_with_operator = re.match(r"\*\*|[+*/%]", run) or (
            run.startswith("-") and _FOLLOW_UP_CUE.search(view.user_text)
        )
        if starts_with_operator:
            previous = next((r["value"] for r in view.past_results() if "value" in r), None)
            return None if previous is None else f"{_format_number(previous)}{run}"
        if not _OPERATOR.search(run):
            return None
        if not re.search(r"\*\*|[+*/%]", run) and not _CALC_CUE.search(view.user_text):
            return None
        return run

    def respond(self, view: PlannerView) -> PlannerStep | None:
        expression = self.expression(view)
        if expression is None:
            return None
        done = [r for r in view.results if r.name == "calc_evaluate"]
        if not done:
            return PlannerStep(calls=[("calc_evaluate", {"expression": expression})])
        result = done[-1]
        if result.error == "DIVISION_BY_ZERO":
            return PlannerStep(
                answer=view.say(
                    f"{expression} has no result: division by zero is undefined.",
                    f"{expression} 没有结果：除数不能为零。",
                )
            )
        if result.error:
            detail = result.payload.get("detail", result.error)
            return PlannerStep(
                answer=view.say(
                    f"I could not calculate {expression}: {detail}.",
                    f"无法计算 {expression}：{detail}。",
                )
            )
        shown = result.payload.get("expression", expression)
        value = _format_number(result.payload.get("value"))
        return PlannerStep(answer=view.say(f"{shown} = {value}", f"{shown} = {value}。"))


_GREETING = re.compile(
    r"^(你好|您好|嗨|哈喽|早上好|晚上好|hello|hi|hey|good (morning|afternoon|evening))"
    r"[\s!！。.,，~]*(呀|啊)?[\s!！。.]*$",
    re.IGNORECASE,
)
_THANKS = re.compile(
    r"^(thanks|thank you|thx|ty|谢谢|多谢|感谢|谢啦)[\s!！。.,，~]*(a lot|so much|你)?[\s!！。.]*$",
    re.IGNORECASE,
)
_ARITHMETIC_INSIDE = re.compile(r"\d\s*(?:[+\-*/×÷^%]|加|减|乘|除|的\s*\d+\s*次方)\s*\(?\d")
_IDENTITY = re.compile(
    r"你是谁|你是什么|你叫什么|你能做什么|你会什么|who are you|what are you|"
    r"what can you do|your name",
    re.IGNORECASE,
)


@dataclass
class SmallTalkIntent:
    """Greetings and "who are you": answered directly, never with a tool call."""

    name: str = "small_talk"
    examples: tuple[str, ...] = ("你好 / hello", "你是谁 / who are you")

    def respond(self, view: PlannerView) -> PlannerStep | None:
        text = view.user_text
        if _GREETING.match(text):
            return PlannerStep(
                answer=view.say(
                    "Hello! I'm your local assistant. Ask me to calculate something, to "
                    "remember or recall something, or about your notes; ask who I am to hear "
                    "what I can do offline.",
                    "你好！我是你的本地助理。可以让我算点东西、记住或回忆事情、查找和整理笔记；"
                    "问我“你是谁”可以了解我离线能做什么。",
                )
            )
        if _THANKS.match(text):
            return PlannerStep(answer=view.say("You're welcome!", "不客气！"))
        if _IDENTITY.search(text) and not _ARITHMETIC_INSIDE.search(text):
            return PlannerStep(
                answer=view.say(
                    "I'm a local personal assistant. Right now no model endpoint is "
                    "configured, so I run on a built-in offline planner: arithmetic (English "
                    "or Chinese, with follow-ups on the last result), remembering, recalling "
                    "and forgetting facts, and your notes (search, read, the weekly report "
                    "from its template, today's daily note). Configure a model "
                    "(OPENAI_BASE_URL, ASSISTANT_MODEL) for open questions.",
                    "我是运行在你电脑上的个人助理。目前没有配置模型接口，所以由内置的离线规划器"
                    "回答：中英文算术（能接着上一个结果继续算）、记住/回忆/忘掉事情、笔记"
                    "（搜索、打开、用模板写周报、记今天的日记）。配置模型"
                    "（OPENAI_BASE_URL、ASSISTANT_MODEL）后可以回答开放式问题。",
                )
            )
        return None


def core_intents() -> list[Any]:
    return [SmallTalkIntent(), ArithmeticIntent()]
