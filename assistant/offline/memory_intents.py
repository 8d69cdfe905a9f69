"""Offline intents for long-term memory: remember, recall, forget (English and Chinese)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from assistant.offline.planner import PlannerStep, PlannerView
from memory.extraction import MAX_TEXT_CHARS, explicit_request, from_user_message

_RECALL = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^what do you (?:know|remember) about\s+(?P<q>.+?)\s*[?？]?$",
        r"^what did (?:we|i) (?:decide|say|conclude|agree)(?: (?:about|on|for))?"
        r"\s+(?P<q>.+?)\s*[?？]?$",
        r"^do you remember\s+(?P<q>.+?)\s*[?？]?$",
        r"^(?:search (?:your )?memory for|recall)\s+(?P<q>.+?)\s*[?？]?$",
        r"^(?:what|who|where|when)(?:'s| is| are| was)\s+(?P<q>my\s+.+?)\s*[?？]?$",
        r"^关于(?P<q>.+?)[，,]?\s*你(?:还)?(?:记得|知道)(?:些)?什么\s*[?？]?$",
        r"^(?:我们)?(?:关于|对于|对)(?P<q>.+?)(?:是)?(?:怎么)?(?:决定|定)(?:了|的)?(?:什么)?\s*[?？]?$",
        r"^你还?记得(?P<q>.+?)吗\s*[?？]?$",
        r"^(?P<q>我的.+?)是(?:谁|什么|哪)",
    )
]
# questions the store answers by the subject they ask about (home, workplace): sent whole
_RECALL_WHOLE = re.compile(
    r"^(?:where|in which city|which city) (?:do|does|did) (?:i|we|\w+) "
    r"(?:live|work|stay)(?: now| these days)?\s*[?？]?$"
    r"|^(?:我|我们|\w{1,4})(?:现在)?(?:住在?|在)(?:哪|哪里|哪儿|什么地方)(?:工作|上班)?(?:呢)?\s*[?？]?$",
    re.IGNORECASE,
)
_FORGET = re.compile(
    r"^(?:please\s+)?forget(?:\s+that|\s+about)?\s+(?P<q>.+?)\s*[.!。]?$"
    r"|^(?:请|帮我)?(?:忘掉|忘记|删除记忆|别再记得)[：:，,]?\s*(?P<zh>.+?)\s*[。!！]?$",
    re.IGNORECASE,
)


def _result(view: PlannerView, tool: str) -> Any:
    done = [r for r in view.results if r.name == tool]
    return done[-1] if done else None


@dataclass
class RememberIntent:
    name: str = "remember"
    examples: tuple[str, ...] = ("remember that my dentist is Dr. Li", "记住我们决定下周三发布")

    def respond(self, view: PlannerView) -> PlannerStep | None:
        try:
            candidate = explicit_request(view.user_text) or self.stated(view.user_text)
        except ValidationError:  # longer than a conclusion may be
            return PlannerStep(
                answer=view.say(
                    f"I could not store that: a memory holds at most {MAX_TEXT_CHARS} characters.",
                    f"没能记下来：一条记忆最多 {MAX_TEXT_CHARS} 个字符。",
                )
            )
        if candidate is None:
            return None
        result = _result(view, "memory_remember")
        if result is None:
            arguments = {"text": candidate.text, "kind": candidate.kind}
            if candidate.subject:
                arguments["subject"] = candidate.subject
            return PlannerStep(calls=[("memory_remember", arguments)])
        if result.error:
            detail = result.payload.get("detail", result.error)
            return PlannerStep(
                answer=view.say(f"I could not store that: {detail}.", f"没能记下来：{detail}。")
            )
        text = result.payload.get("text", candidate.text)
        replaced = (result.payload.get("replaced") or {}).get("text")
        if result.payload.get("action") == "restated":
            return PlannerStep(
                answer=view.say(
                    f"I already had that; updated it: {text}", f"这条我已经记着了，已更新：{text}"
                )
            )
        answer = view.say(f"Noted: {text}", f"好的，记住了：{text}")
        if replaced:
            answer += view.say(f" (this replaces: {replaced})", f"（替换了之前的：{replaced}）")
        return PlannerStep(answer=answer)

    @staticmethod
    def stated(text: str) -> Any:
        """ "my dentist is Dr. Li", "I prefer tea", "我们决定…": worth keeping unasked."""
        found = from_user_message(text)
        return found[0] if found else None


@dataclass
class RecallIntent:
    name: str = "recall"
    examples: tuple[str, ...] = ("what do you know about my dentist?", "关于发布你记得什么")

    def query(self, text: str) -> str | None:
        if _RECALL_WHOLE.match(text.strip()):
            return text.strip()
        for pattern in _RECALL:
            match = pattern.match(text.strip())
            if match:
                return match.group("q").strip(" ？?。.")
        return None

    def respond(self, view: PlannerView) -> PlannerStep | None:
        query = self.query(view.user_text)
        if not query:
            return None
        result = _result(view, "memory_recall")
        if result is None:
            return PlannerStep(calls=[("memory_recall", {"query": query})])
        if result.error:
            detail = result.payload.get("detail", result.error)
            return PlannerStep(
                answer=view.say(
                    f"I could not search my memory: {detail}.", f"没能查询记忆：{detail}。"
                )
            )
        found = result.payload.get("conclusions") or []
        whole = query == view.user_text.strip()  # a question, not a topic
        if not found:
            return PlannerStep(
                answer=view.say("I have nothing stored about that.", "这个我没有记下任何内容。")
                if whole
                else view.say(
                    f"I have nothing stored about {query}.", f"关于{query}，我没有记下任何内容。"
                )
            )
        lines = [f"- {row['text']} ({row['kind']}, {row['since']})" for row in found]
        head = (
            view.say("Here is what I have:", "我记得：")
            if whole
            else view.say(f"What I have about {query}:", f"关于{query}，我记得：")
        )
        return PlannerStep(answer="\n".join([head, *lines]))


@dataclass
class ForgetIntent:
    name: str = "forget"
    examples: tuple[str, ...] = ("forget my dentist", "忘掉我的牙医")

    def respond(self, view: PlannerView) -> PlannerStep | None:
        match = _FORGET.match(view.user_text.strip())
        if not match:
            return None
        query = (match.group("q") or match.group("zh") or "").strip()
        result = _result(view, "memory_forget")
        if result is None:
            return PlannerStep(calls=[("memory_forget", {"query": query})])
        if result.error == "NOT_FOUND":
            return PlannerStep(
                answer=view.say(
                    f"I had nothing stored about {query}.", f"关于{query}，我本来就没有记录。"
                )
            )
        if result.error:
            detail = result.payload.get("detail", result.error)
            return PlannerStep(
                answer=view.say(f"I could not forget that: {detail}.", f"没能删除：{detail}。")
            )
        if result.payload.get("status") == "pending_confirmation":
            would, action = result.payload.get("would", query), result.payload.get("action_id")
            return PlannerStep(
                answer=view.say(
                    f"Waiting for your yes: {would}. Nothing is forgotten until you confirm "
                    f"(assistant confirm {action}).",
                    f"等待确认：{would}。确认后才会忘掉（assistant confirm {action}）。",
                )
            )
        text = result.payload.get("text", query)
        return PlannerStep(answer=view.say(f"Forgotten: {text}", f"已忘掉：{text}"))


def memory_intents() -> list[Any]:
    return [RememberIntent(), ForgetIntent(), RecallIntent()]
