"""Offline intents for the note vault (SPEC V2, V7), in English and Chinese: search notes,
read a note, create this week's report from the template, append to today's daily note.

Each intent asks for tool calls through the loop and answers from their results, so the
offline flow exercises the same tools, jail, journal and index as a model would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assistant.offline.planner import PlannerStep, PlannerView, ToolResult

_END = r"\s*[?？.。!！]?\s*$"
_SEARCH = [
    re.compile(p + _END, re.IGNORECASE)
    for p in (
        r"^(?:please\s+)?(?:search|look|grep)\s+(?:through\s+|in\s+)?(?:my\s+|the\s+)?"
        r"(?:notes|vault)\s+(?:for|about)\s+(?P<q>.+?)",
        r"^(?:please\s+)?find\s+(?:my\s+|the\s+)?notes?\s+(?:about|on|mentioning|with)\s+(?P<q>.+?)",
        r"^what do my notes say about\s+(?P<q>.+?)",
        r"^(?:请|帮我)?(?:搜索|搜一下|搜|查找|查一下|找一下)(?:一下)?(?:我的)?(?:笔记|知识库)"
        r"(?:里|中)?(?:关于)?[：:，,\s]*(?P<q>.+?)(?:的(?:内容|笔记))?",
        r"^(?:请|帮我)?在(?:我的)?(?:笔记|知识库)(?:里|中)(?:搜索|搜一下|搜|查找|查一下|找一下|找)"
        r"(?:一下)?[：:，,\s]*(?P<q>.+?)",
    )
]
_READ = [
    re.compile(p + _END, re.IGNORECASE)
    for p in (
        r"^(?:please\s+)?(?:read|open|show(?:\s+me)?)\s+(?:the\s+|my\s+)?note\s+(?P<q>.+?)",
        r"^(?:please\s+)?(?:read|open|show(?:\s+me)?)\s+(?:the\s+|my\s+)?(?P<q>.+?)\s+note",
        r"^(?:请|帮我)?(?:打开|读一下|读|查看|看一下|看看|显示)(?:一下)?笔记[：:，,\s]*(?P<q>.+?)",
        r"^(?:请|帮我)?(?:打开|读一下|查看|看一下|看看)(?:一下)?(?P<q>.+?)(?:这篇|这个)?笔记",
    )
]
_TEMPLATE_EN = re.compile(
    r"\b(?:create|make|start|generate|write|turn|draft)\b.*\btemplates?\b|"
    r"\btemplates?\b.*\b(?:into|to create|to make)\b",
    re.IGNORECASE,
)
_TEMPLATE_ZH = re.compile(
    r"(?:用|根据|按照?|从|使用|套用|把)(?P<tpl>.*?)模板.*?(?:创建|生成|新建|写|建|变成|转成|做)"
)
_WEEKLY = re.compile(r"周报|week", re.IGNORECASE)
_MEETING = re.compile(r"会议|meeting", re.IGNORECASE)
_DAILY = [
    re.compile(p + _END, re.IGNORECASE)
    for p in (
        r"^(?:please\s+)?(?:append|add|log|write|put|jot(?:\s+down)?|note)\s+(?P<t>.+?)\s+"
        r"(?:to|in|into|on)\s+(?:my\s+|today'?s\s+|the\s+)*(?:daily\s+note|daily|journal|diary)"
        r"(?:\s+for\s+today)?",
        r"^(?:请|帮我)?在(?:今天的|今日的?|我的)?(?:日记|每日笔记|日志)(?:里|中|上)?"
        r"(?:加上|添加|加|记下|记录|写上|写|记)(?:一下|一条)?[：:，,\s]*(?P<t>.+?)",
        r"^(?:请|帮我)?把(?P<t>.+?)(?:加到|添加到|记到|写到|记在|写进|加进)(?:今天的|今日的?)?"
        r"(?:日记|每日笔记|日志)(?:里|中|上)?",
    )
]
_QUOTES = "\"'“”‘’《》「」`"


def _clean(text: str) -> str:
    text = text.strip().strip(_QUOTES).strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|", 1)[0]
    return text.strip()


def _last(view: PlannerView, tool: str) -> ToolResult | None:
    done = [r for r in view.results if r.name == tool]
    return done[-1] if done else None


def _items(value: Any) -> list[Any]:
    """A list from a tool result, also when the runner shortened it to fit the budget."""
    if isinstance(value, dict):
        value = value.get("first", [])
    return value if isinstance(value, list) else []


def _failed(view: PlannerView, result: ToolResult, what_en: str, what_zh: str) -> PlannerStep:
    detail = result.payload.get("detail", result.error)
    return PlannerStep(answer=view.say(f"{what_en}: {detail}", f"{what_zh}：{detail}"))


@dataclass
class VaultSearchIntent:
    name: str = "vault_search"
    examples: tuple[str, ...] = ("search my notes for the release date", "搜索笔记 数据库选型")

    @staticmethod
    def query(text: str) -> str | None:
        for pattern in _SEARCH:
            match = pattern.match(text.strip())
            if match:
                return _clean(match.group("q")) or None
        return None

    def respond(self, view: PlannerView) -> PlannerStep | None:
        query = self.query(view.user_text)
        if query is None:
            return None
        result = _last(view, "vault_search")
        if result is None:
            return PlannerStep(calls=[("vault_search", {"query": query})])
        if result.error:
            return _failed(view, result, "I could not search your notes", "没能搜索笔记")
        hits = _items(result.payload.get("results"))
        if not hits:
            return PlannerStep(
                answer=view.say(
                    f"Nothing in your notes matches {query}.",
                    f"笔记里没有找到和“{query}”相关的内容。",
                )
            )
        lines = []
        for hit in hits[:5]:
            where = hit.get("path", "?") + (f" › {hit['heading']}" if hit.get("heading") else "")
            lines.append(f"- {where}: {hit.get('snippet', '')}")
        head = view.say(f"Notes about {query}:", f"关于“{query}”的笔记：")
        return PlannerStep(answer="\n".join([head, *lines]))


@dataclass
class VaultReadIntent:
    name: str = "vault_read"
    examples: tuple[str, ...] = ("read note Project Phoenix", "打开笔记 知识库迁移")

    @staticmethod
    def target(text: str) -> str | None:
        for pattern in _READ:
            match = pattern.match(text.strip())
            if match:
                return _clean(match.group("q")) or None
        return None

    def respond(self, view: PlannerView) -> PlannerStep | None:
        target = self.target(view.user_text)
        if target is None:
            return None
        result = _last(view, "vault_read")
        if result is None:
            return PlannerStep(calls=[("vault_read", {"path": target})])
        if result.error == "AMBIGUOUS_NOTE":
            options = ", ".join(_items(result.payload.get("candidates")))
            return PlannerStep(
                answer=view.say(
                    f"Several notes are called {target}: {options}. Which one?",
                    f"有多篇笔记叫“{target}”：{options}。要打开哪一篇？",
                )
            )
        if result.error:
            detail = result.payload.get("detail", result.error)
            hints = _items(result.payload.get("did_you_mean"))
            if hints:
                detail += view.say(
                    f" (did you mean: {', '.join(hints)}?)", f"（是不是：{'、'.join(hints)}？）"
                )
            return PlannerStep(
                answer=view.say(f"I could not open it: {detail}", f"没能打开：{detail}")
            )
        path = result.payload.get("path", target)
        content = str(result.payload.get("content", "")).strip()
        head = view.say(f"{path}:", f"{path}：")
        return PlannerStep(answer=f"{head}\n\n{content}" if content else head)


@dataclass
class TemplateNoteIntent:
    """V7: "create this week's report from the template" -> find the template, read it,
    create the note from it, answer with the new path."""

    name: str = "vault_template"
    examples: tuple[str, ...] = (
        "create this week's weekly report from the template",
        "用周报模板创建本周周报",
    )
    templates_folder: str = "Templates"
    weekly_path: str = "Weekly/{{date:GGGG-[W]WW}} 周报"
    meeting_path: str = "Meetings/{{date}} Meeting"

    def hint(self, text: str) -> str | None:
        """What the user asked for, as a word to find the template by; None if no match."""
        zh = _TEMPLATE_ZH.search(text)
        if zh:
            return _clean(zh.group("tpl")) or text
        return text if _TEMPLATE_EN.search(text) else None

    @staticmethod
    def _pick(templates: list[str], hint: str, text: str) -> str | None:
        def title(path: str) -> str:
            return path.rsplit("/", 1)[-1].removesuffix(".md")

        exact = [p for p in templates if hint and hint.casefold() in title(p).casefold()]
        if len(exact) == 1:
            return exact[0]
        for cue in (_WEEKLY, _MEETING):
            if cue.search(text):
                found = [p for p in templates if cue.search(title(p))]
                if found:
                    return found[0]
        return templates[0] if len(templates) == 1 else None

    def target(self, template: str, text: str) -> str:
        if _WEEKLY.search(text) or _WEEKLY.search(template):
            return self.weekly_path
        if _MEETING.search(text) or _MEETING.search(template):
            return self.meeting_path
        name = template.rsplit("/", 1)[-1].removesuffix(".md")
        return f"{{{{date}}}} {name}"

    def respond(self, view: PlannerView) -> PlannerStep | None:
        hint = self.hint(view.user_text)
        if hint is None:
            return None
        listed = _last(view, "vault_list")
        if listed is None:
            return PlannerStep(calls=[("vault_list", {"folder": self.templates_folder})])
        if listed.error:
            return _failed(view, listed, "I could not find your templates", "没能找到模板")
        templates = [
            row.get("path") for row in _items(listed.payload.get("notes")) if row.get("path")
        ]
        template = self._pick(templates, hint, view.user_text)
        if template is None:
            options = ", ".join(templates) or view.say("none", "无")
            return PlannerStep(
                answer=view.say(
                    f"I could not tell which template you mean. Templates: {options}",
                    f"不确定要用哪个模板。现有模板：{options}",
                )
            )
        read = _last(view, "vault_read")
        if read is None:
            return PlannerStep(calls=[("vault_read", {"path": template})])
        if read.error:
            return _failed(view, read, f"I could not read {template}", f"没能读取 {template}")
        created = _last(view, "vault_create_from_template")
        if created is None:
            arguments = {"template": template, "path": self.target(template, view.user_text)}
            return PlannerStep(calls=[("vault_create_from_template", arguments)])
        if created.error == "NOTE_EXISTS":
            path = created.payload.get("path", "")
            return PlannerStep(
                answer=view.say(
                    f"That note already exists: {path}. I left it unchanged.",
                    f"这篇笔记已经存在：{path}，没有改动它。",
                )
            )
        if created.error:
            return _failed(view, created, "I could not create the note", "没能创建笔记")
        path = created.payload.get("path", "")
        sections = [h for h in _items(read.payload.get("headings"))[1:] if h]
        listed_sections = "、".join(sections) if view.chinese else ", ".join(sections)
        extra_en = f" Sections: {listed_sections}." if sections else ""
        extra_zh = f"包含：{listed_sections}。" if sections else ""
        return PlannerStep(
            answer=view.say(
                f"Created {path} from {template}.{extra_en}",
                f"已用 {template} 创建 {path}。{extra_zh}",
            )
        )


@dataclass
class DailyAppendIntent:
    name: str = "vault_daily"
    examples: tuple[str, ...] = (
        "append 'call the bank' to today's daily note",
        "在今天的日记里加上 给妈妈打电话",
    )

    @staticmethod
    def text(text: str) -> str | None:
        for pattern in _DAILY:
            match = pattern.match(text.strip())
            if match:
                return _clean(match.group("t")) or None
        return None

    def respond(self, view: PlannerView) -> PlannerStep | None:
        entry = self.text(view.user_text)
        if entry is None:
            return None
        result = _last(view, "vault_daily_note")
        if result is None:
            line = entry if entry.startswith(("- ", "* ")) else f"- {entry}"
            return PlannerStep(calls=[("vault_daily_note", {"text": line})])
        if result.error:
            return _failed(view, result, "I could not update the daily note", "没能更新日记")
        path = result.payload.get("path", "")
        return PlannerStep(
            answer=view.say(f"Added to {path}: {entry}", f"已添加到 {path}：{entry}")
        )


def vault_intents() -> list[Any]:
    """Order matters: the template and daily intents are more specific than read/search."""
    return [TemplateNoteIntent(), DailyAppendIntent(), VaultSearchIntent(), VaultReadIntent()]
