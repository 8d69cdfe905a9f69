"""Rule-based extraction of conclusions (SPEC M9, the offline half).

Without a model, only what people say in recognisable shapes becomes memory: an explicit
"remember that …" / "记住…", a preference ("I prefer …" / "我更喜欢…"), a decision
("we decided …" / "我们决定…"), and statements with a subject (`slot_of`): "my X is Y" /
"我的X是Y", "my favourite X is Y" / "我最喜欢的X是Y", "I live in / moved to Y" / "我住在…
/ 我搬到…", "I work at Y" / "我在Y工作", "Anna's birthday is …" / "A的B是C". The subject
is the key a later value replaces ("my dentist is Dr. Li" supersedes "… Dr. Wu");
`asked_subject` finds it in a question ("where do I live?") so recall can answer it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

MAX_TEXT_CHARS = 1000  # the longest conclusion kept


class Candidate(BaseModel):
    """One conclusion worth keeping; also the schema a model fills in (structured output)."""

    text: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="The conclusion, self-contained."
    )
    kind: str = Field("fact", pattern="^(fact|preference|decision|note)$")
    subject: str | None = Field(
        None, max_length=80, description="What it is about, when a later value may replace it."
    )
    tags: list[str] = Field(default_factory=list)


class Extracted(BaseModel):
    conclusions: list[Candidate] = Field(default_factory=list)


_REMEMBER = re.compile(
    r"^\s*(?:please\s+|pls\s+)?(?:remember|note|keep in mind)(?:\s+that)?\s*[:,：，]?\s*"
    r"(?P<body>.+)$"
    r"|^\s*(?:请|麻烦)?(?:帮我)?(?:记住|记一下|记下|别忘了)(?:一下)?\s*[:：,，]?\s*(?P<zh>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_PREFERENCE = re.compile(
    r"\bI\s+(?:really\s+)?(?:prefer|like|love|enjoy|hate|dislike|don't like|do not like)\b"
    r"|\bmy\s+(?:new\s+)?favou?rite\b"
    r"|我(?:更|比较|很|最)?(?:喜欢|偏好|爱|讨厌|不喜欢|倾向)",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\bwe(?:'ve| have)?\s+(?:decided|agreed|chose|chosen|settled)\b|\blet'?s go with\b"
    r"|我们(?:决定|定了|商定|选定|确定|同意)|决定了|就这么定",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"[\s。.!！]+$")


@dataclass(frozen=True)
class Slot:
    """What a statement is about (`subject`, the key a later value replaces) and the value
    it gives that subject. "My dentist is Dr. Li" is (dentist, Dr. Li)."""

    subject: str
    value: str


# one relative, many words: "my mother" and "Mum" are one person, so are 我妈 and 母亲
# (heldout52, written blind: "Mum has started going to … church on Sundays, so Saturday is
# our video-call night now" was kept apart from "We video-call my mother … every Sunday")
KIN_GROUPS = (
    "mother mum mom mam mummy mommy 妈 妈妈 老妈 母亲 娘 老娘 俺娘",
    "father dad daddy papa 爸 爸爸 老爸 父亲 爹 老爹",
    "grandmother grandma granny gran nan nana",
    "grandfather grandpa granddad grandad",
    "外婆 姥姥",
    "外公 姥爷",
    "husband hubby 老公 丈夫 娃他爸 孩子他爸 孩他爸",
    "wife missus 老婆 妻子 太太 媳妇 娃他妈 孩子他妈 孩他妈",
    "parents folks 爸妈 父母",
    "kids kid children child 孩子 孩子们 娃",
    "sister sis",
    "brother bro",
    "daughter 女儿 闺女 丫头",
    "son 儿子",
    "姐 姐姐 老姐",
    "妹 妹妹 老妹",
    "哥 哥哥 老哥",
    "弟 弟弟 老弟",
)


# how old a sibling or child is beside the speaker's others: "my older sister", "my little
# brother" (each written one way; an older and a younger sister are two people)
_EN_AGE = {
    "older": "older",
    "elder": "older",
    "big": "older",
    "eldest": "oldest",
    "oldest": "oldest",
    "younger": "younger",
    "little": "younger",
    "wee": "younger",
    "baby": "younger",
    "kid": "younger",
    "youngest": "youngest",
}
AGE_WORDS = frozenset(_EN_AGE.values())
# every word for a relative, to all the words of its group (the kin table read one way)
KIN_OF = {word: frozenset(group.split()) for group in KIN_GROUPS for word in group.split()}
# "my " or "our little ", before the word for a person
_EN_MY = r"(?:[Mm]y|[Oo]ur)\s+(?:(?:" + "|".join(_EN_AGE) + r")\s+)?"
# English. `who` names a person other than the speaker: "my sister Anna", "Anna Schmidt".
_EN_WHO = (
    rf"(?P<who>{_EN_MY}[a-z]+(?:-in-law)?(?:\s+[A-Z][\w'-]*){{0,2}}"
    r"|[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
)
# the same, when the words after "my" are a relative's ("my big sis", "my mum Jo")
_EN_KIN_WORD = "|".join(sorted((w for w in KIN_OF if w.isascii()), key=len, reverse=True))
_EN_RELATIVE = rf"(?P<who>{_EN_MY}(?:{_EN_KIN_WORD})(?:-in-law)?(?:\s+[A-Z][\w'-]*){{0,2}})"
_EN_NOUN = r"[a-z][\w'-]*(?:\s+[a-z0-9][\w'-]*){0,4}"  # "dentist", "gym locker code"
_EN_IS = (
    r"(?:is\s+now|are\s+now|is\s+still|has\s+changed\s+to|changed\s+to|has\s+moved\s+to"
    r"|moved\s+to|was\s+moved\s+to|became|has\s+become|switched\s+to|is|are|was|=)"
)
_EN_CHANGE = (
    r"(?:is\s+now|changed\s+to|has\s+changed\s+to|moved\s+to|has\s+moved\s+to"
    r"|was\s+moved\s+to|switched\s+to)"
)
_EN_HOME = (
    r"(?:now\s+|currently\s+|still\s+)?(?:live|am\s+living|'m\s+living|reside)\s+in"
    r"|(?:have\s+|'ve\s+|just\s+)*(?:moved|relocated|am\s+moving|'m\s+moving)(?:\s+from\s+.+?)?\s+to"
)
_EN_HOME_3 = (
    r"(?:now\s+|currently\s+|still\s+)?(?:lives|is\s+living|resides)\s+in"
    r"|(?:has\s+|just\s+)*(?:moved|relocated|is\s+moving)(?:\s+from\s+.+?)?\s+to"
)
# a new job named where it is: "started at", "got a part-time job with", "has joined"
_EN_NEW_JOB = (
    r"(?:has\s+|'s\s+|have\s+|'ve\s+|just\s+)*(?:started\s+a\s+new\s+job\s+at"
    r"|started\s+(?:work(?:ing)?\s+)?at(?=\s+(?:the\s+)?(?-i:[A-Z]))"  # a name: not "started at 9"
    r"|(?:got|took|found|landed|started)\s+(?:a\s+)?(?:new\s+)?(?:part-time\s+|full-time\s+)?"
    r"job\s+(?:[a-z]+ing\s+(?:[a-z]+\s+){0,2}?)?(?:at|with))"  # "a job pulling pints at"
)
_EN_SHAPES: list[tuple[re.Pattern[str], str]] = [
    # "I switched my work laptop to a MacBook Air", "I replaced my phone with a Pixel 8"
    (
        re.compile(
            r"^I(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|now\s+)?(?:switched|changed|swapped"
            r"|replaced|upgraded|traded)\s+(?:my|our)\s+(?:old\s+)?"
            rf"(?P<subject>{_EN_NOUN}?)\s+(?:to|for|with)\s+(?:a\s+|an\s+|the\s+)?"
            r"(?:new\s+)?(?P<value>.+)$",
            re.IGNORECASE,
        ),
        "{subject}",
    ),
    # "I live in Berlin", "I moved from Munich to Hamburg" -> home
    (re.compile(rf"^I(?:\s+|(?='))(?:{_EN_HOME})\s+(?P<value>.+)$", re.IGNORECASE), "home"),
    # "I work at Siemens" -> workplace; "I work as a nurse" -> job
    (
        re.compile(
            rf"^I(?:\s+|(?='))(?:now\s+|currently\s+)?(?:work\s+(?:at|for)|(?:'m|am)\s+(?:now\s+)?working"
            rf"\s+(?:at|for)|{_EN_NEW_JOB})\s+(?P<value>.+)$",
            re.I,
        ),
        "workplace",
    ),
    (
        re.compile(r"^I\s+(?:now\s+|currently\s+)?work\s+as\s+(?:an?\s+)?(?P<value>.+)$", re.I),
        "job",
    ),
    # "my mother moved to York": a relative's move is their home, not "my mother" = York
    (re.compile(rf"^{_EN_RELATIVE}\s+(?:{_EN_HOME_3})\s+(?P<value>.+)$"), "{who} home"),
    # "my favourite drink is tea", "my new gym locker code is 7731", "our sync moved to …"
    (
        re.compile(
            rf"^(?:my|our)\s+(?:new\s+|current\s+)?(?P<subject>{_EN_NOUN}?)\s+{_EN_IS}\s+(?P<value>.+)$",
            re.IGNORECASE,
        ),
        "{subject}",
    ),
    # "the code for my gym locker is 5520" -> gym locker code
    (
        re.compile(
            rf"^the\s+(?P<subject>{_EN_NOUN}?)\s+(?:for|of)\s+(?:my|our)\s+(?P<owner>{_EN_NOUN}?)"
            rf"\s+{_EN_IS}\s+(?P<value>.+)$",
            re.IGNORECASE,
        ),
        "{owner} {subject}",
    ),
    # "the weekly sync moved to Thursdays" (a change of a known thing; "the X is" is not)
    (
        re.compile(rf"^the\s+(?P<subject>{_EN_NOUN}?)\s+{_EN_CHANGE}\s+(?P<value>.+)$", re.I),
        "{subject}",
    ),
    # "Dr. Li is my dentist", "black coffee is my favourite drink"
    (
        re.compile(
            rf"^(?P<value>.+?)\s+(?:is|are)\s+(?:now\s+)?(?:my|our)\s+(?:new\s+)?(?P<subject>{_EN_NOUN})$",
            re.I,
        ),
        "{subject}",
    ),
    # "my sister Anna lives in Lyon", "Tom moved from Lyon to Vienna" -> <who> home
    (re.compile(rf"^{_EN_WHO}\s+(?:{_EN_HOME_3})\s+(?P<value>.+)$"), "{who} home"),
    (
        re.compile(
            rf"^{_EN_WHO}(?:\s+|(?='))(?:now\s+|currently\s+)?(?:works\s+(?:at|for)|(?:'s|is)\s+(?:now\s+)?"
            rf"working\s+(?:at|for)|(?i:{_EN_NEW_JOB}))\s+(?P<value>.+)$"
        ),
        "{who} workplace",
    ),
    (re.compile(rf"^{_EN_WHO}\s+works\s+as\s+(?:an?\s+)?(?P<value>.+)$"), "{who} job"),
    # "Anna's birthday is on 3 May", "my brother's phone number is …"
    (
        re.compile(
            rf"^{_EN_WHO}'s\s+(?P<subject>{_EN_NOUN}?)\s+{_EN_IS}\s+(?:on\s+)?(?P<value>.+)$"
        ),
        "{who} {subject}",
    ),
]
# lead-ins that do not change what a statement says: "these days my favourite drink is …"
_EN_LEAD = re.compile(
    r"^(?:(?:these\s+days|nowadays|now|currently|actually|update|by\s+the\s+way|btw|also|so"
    r"|ok(?:ay)?|well|and|from\s+now\s+on|as\s+of\s+today|fyi)\b[\s,:]*)+",
    re.IGNORECASE,
)

# Chinese. 我的X是Y, 我最喜欢的X是Y, 我住在Y / 我搬到Y, 我在Y工作, A的B是C.
_ZH_PUNCT = r"，。,、；;：:！!？?\s"
_ZH_IS = r"(?:是|叫|为|换成了|换成|改成了|改成|改为|变成了|变成|改到了|改到|定在|定为|最终定为|在)"
_ZH_NOW = r"(?:现在|目前|如今|已经|最近|刚)?"


def _zh_spelling(group: str) -> dict[str, str]:
    """Each Chinese word of a kin group mapped to one spelling (its first two-character
    word: 妈妈 for 我妈 and 母亲), so 我姐 and 我的姐姐 state one subject."""
    han = [word for word in group.split() if not word.isascii()]
    if not han:
        return {}
    spelling = next((word for word in han if len(word) == 2), han[0])
    return dict.fromkeys(han, spelling)


# a relative named after 我 without 的 (我妈, 我姐) or with it, in one spelling
_ZH_KIN = {word: spelling for group in KIN_GROUPS for word, spelling in _zh_spelling(group).items()}
# "my mum" and "my mother" name one relative: each English kin word as its group's first
_EN_KIN = {
    word: english[0]
    for group in KIN_GROUPS
    for english in [[word for word in group.split() if word.isascii()]]
    for word in english
}
_ZH_KIN_WORD = "|".join(
    sorted(
        {*_ZH_KIN, "爷爷", "奶奶"},
        key=len,
        reverse=True,
    )
)
# when a move or a new job happened, said before the verb: 我妈上个月搬到约克了
_ZH_WHEN = (
    r"(?:上个?月|上个?星期|上周|去年|前年|今年|年初|年底|前几天|前阵子|前段时间|这个月|这周|刚刚?)?(?:刚刚?|已经|就)?"
    rf"(?:从[^{_ZH_PUNCT}]{{1,12}}?(?=搬))?"
)
# someone close who is one person (not 室友 or 同事: a speaker often has several)
_ZH_PARTNER = "对象|男朋友|女朋友|男友|女友|爱人|未婚夫|未婚妻"
_ZH_SHAPES: list[tuple[re.Pattern[str], str]] = [
    # 我把工作电脑换成了 MacBook
    (
        re.compile(
            rf"^我{_ZH_NOW}把(?:我的)?(?P<subject>[^{_ZH_PUNCT}]{{1,12}}?)"
            r"(?:换成了|换成|改成了|改成)(?P<value>.+)$"
        ),
        "{subject}",
    ),
    (
        re.compile(
            rf"^我{_ZH_NOW}{_ZH_WHEN}(?:住在|搬到了|搬到|搬去了|搬去|搬家到|搬回了|搬回)(?P<value>.+)$"
        ),
        "home",
    ),
    (re.compile(rf"^我{_ZH_NOW}在(?P<value>[^{_ZH_PUNCT}]+?)(?:工作|上班)$"), "workplace"),
    (
        re.compile(
            rf"^我{_ZH_NOW}(?:最喜欢|最爱)(?:吃|喝|看|听|玩|用)?的(?P<subject>[^{_ZH_PUNCT}]{{1,8}}?)"
            rf"{_ZH_IS}(?P<value>.+)$"
        ),
        "最喜欢的{subject}",
    ),
    (
        re.compile(
            rf"^(?:我的|我们的)(?P<who>[^{_ZH_PUNCT}]{{1,8}}?){_ZH_NOW}{_ZH_WHEN}(?:也)?(?:住在|搬到了|搬到|搬去了|搬去)"
            r"(?P<value>.+)$"
        ),
        "{who} home",
    ),
    (
        re.compile(
            rf"^我(?P<who>{_ZH_KIN_WORD}){_ZH_NOW}{_ZH_WHEN}(?:也|还|一个人)?(?:住在|搬到了|搬到|搬去了|搬去)"
            r"(?P<value>.+)$"
        ),
        "{who} home",
    ),
    # 我爸在武汉上班, 我的妹妹在墨尔本读书: where a relative works or studies
    (
        re.compile(
            rf"^(?:我(?P<who>{_ZH_KIN_WORD}|{_ZH_PARTNER})|(?:我的|我们的)(?P<who2>[^{_ZH_PUNCT}]{{1,8}}?))"
            rf"{_ZH_NOW}{_ZH_WHEN}(?:也|还|一直)?在(?P<value>[^{_ZH_PUNCT}]+?)(?P<what>工作|上班|读书|上学|念书|读研|读博|留学)了?$"
        ),
        "{who} {what}",
    ),
    (
        re.compile(
            rf"^(?:我的|我们的)(?:新)?(?P<subject>[^{_ZH_PUNCT}]{{1,12}}?){_ZH_IS}(?P<value>.+)$"
        ),
        "{subject}",
    ),
    # "Y是我的X": 李医生是我的牙医
    (
        re.compile(rf"^(?P<value>[^{_ZH_PUNCT}]+?)是我的(?P<subject>[^{_ZH_PUNCT}]{{1,12}})$"),
        "{subject}",
    ),
    # "A的B是C": 王伟的生日是…, 账单服务的数据库最终定为 SQLite (not 我的: above)
    (
        re.compile(
            rf"^(?P<who>[^{_ZH_PUNCT}的]{{1,16}}?)\s*的\s*(?P<subject>[^{_ZH_PUNCT}的]{{1,16}}?)\s*"
            rf"{_ZH_NOW}{_ZH_IS}\s*(?P<value>.+)$"
        ),
        "{who} {subject}",
    ),
]
_ZH_LEAD = re.compile(r"^(?:现在|目前|如今|最近|另外|对了|更新)[，,：:\s]*")
_NOT_WHO = frozenset(
    {
        "i",
        "i've",
        "i'm",
        "i'd",
        "i'll",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "this",
        "that",
        "there",
        "the",
        "what",
        "who",
    }
)
_NOT_VALUE = _NOT_WHO | {"mine", "ours", "here", "one"}
# people have several of these: "Tom is my brother" does not make Ben not one
_RELATION_WORDS = (
    "brother brothers sister sisters friend friends cousin cousins colleague colleagues "
    "coworker coworkers son sons daughter daughters child children kid kids uncle aunt "
    "neighbour neighbor neighbours neighbors classmate classmates "
    "兄弟 姐妹 哥哥 姐姐 弟弟 妹妹 朋友 同事 孩子 儿子 女儿 邻居 同学"
)
_PLURAL_RELATIONS = frozenset(_RELATION_WORDS.split())
_CLAUSES = re.compile(r"[:;：；]\s*|\s+[-–—]\s+")


def _flat(text: str) -> str:
    """One line, straight apostrophes, no closing punctuation: what the shapes match."""
    return _TRAILING.sub("", " ".join(text.replace("\u2019", "'").split()))


def _subject_from(match: re.Match[str], template: str) -> str | None:
    """The subject a shape's template names from its match; None when the `who` it
    matched is a pronoun ("it is my …"), not a person."""
    parts = {k: v for k, v in match.groupdict().items() if v is not None}
    who = (parts.get("who") or parts.get("who2") or "").strip()
    if "what" in parts:  # 在…上班 states a workplace, 在…读书 a school
        parts["what"] = "workplace" if parts["what"] in {"工作", "上班"} else "school"
    if who.lower() in _NOT_WHO:
        return None
    mine = re.match(r"(?:my|our)\s+", who, flags=re.IGNORECASE)
    who = _one_relative(who[mine.end() :]) if mine else who
    who = _ZH_KIN.get(who, who)
    subject = _canonical(template.format(**{**parts, "who": who}))
    return None if subject in _PLURAL_RELATIONS else subject


def subject_spellings(subject: str) -> frozenset[str]:
    """A subject (as stored: "mother home", "older sister s car") written with each word
    of the kin table for its relative ("mum home", "妈妈 home" …): rows stored before a
    relative had one spelling, or in the other language, still answer to it."""
    words = subject.split()
    i = 1 if len(words) > 1 and words[0] in AGE_WORDS else 0
    if i >= len(words) or words[i] not in KIN_OF:
        return frozenset({subject})
    return frozenset(" ".join([*words[:i], w, *words[i + 1 :]]) for w in KIN_OF[words[i]])


def slot_of(text: str) -> Slot | None:
    """The subject and value of a statement in a common shape, or None.

    Tried on the whole text, then on each clause after a colon or semicolon ("I've
    switched again: my favourite drink is black coffee")."""
    body = _flat(text)
    clauses = [body, *(part for part in _CLAUSES.split(body)[1:] if part.strip())]
    for clause in clauses:
        found = _slot_of_clause(clause.strip())
        if found is not None:
            return found
    return None


def _slot_of_clause(clause: str) -> Slot | None:
    for lead, shapes in ((_EN_LEAD, _EN_SHAPES), (_ZH_LEAD, _ZH_SHAPES)):
        body = lead.sub("", clause)
        for pattern, template in shapes:
            match = pattern.match(body)
            if match is None or not (subject := _subject_from(match, template)):
                continue
            value = _TRAILING.sub("", match.group("value")).strip(" ,，")
            if value and value.lower() not in _NOT_VALUE and len(subject) <= 80:
                return Slot(subject, value)
    return None


def _one_relative(phrase: str) -> str:
    """A phrase that starts with a relative, the relative in one spelling: "big sis" ->
    "older sister", "mum's car" -> "mother's car"; a name after the relative stays."""
    words = phrase.split()
    age = [_EN_AGE[words.pop(0)]] if len(words) > 1 and words[0] in _EN_AGE else []
    head, apostrophe, clitic = words[0].partition("'")
    if head not in _EN_KIN or clitic not in {"", "s"}:
        return phrase
    spelling = _EN_KIN[head]
    if apostrophe:  # "kid's" and "kids'" are both "kids'"
        spelling += "'" if spelling.endswith("s") else "'s"
    return " ".join([*age, spelling, *words[1:]])


def _canonical(subject: str) -> str:
    subject = re.sub(r"\bfavorite\b", "favourite", subject.strip().lower())
    subject = _one_relative(subject) if subject else subject  # "mum's car": "mother's car"
    subject = re.sub(r"^(?:new|current|old|former|previous)\s+", "", subject)
    # "my walking podcast now": when it holds is no part of what it is
    subject = re.sub(
        r"(?:\s+(?:now|these\s+days|nowadays|currently|again|too|as\s+well|at\s+the\s+moment))+$",
        "",
        subject,
    )
    return " ".join(subject.split())


@dataclass(frozen=True)
class Usage:
    """A thing the speaker uses or owns, and what for: "I use a ThinkPad X1 for work" is
    (use, ThinkPad X1, work). It names no subject, so only the kind of thing its value
    is (`memory.categories`) can tie it to a later "my work laptop is …"."""

    verb: str
    value: str
    scope: str | None


_EN_USE = re.compile(
    r"^I(?:'ve|\s+have)?\s+(?:now\s+|currently\s+|still\s+|mostly\s+|usually\s+|mainly\s+)?"
    r"(?P<verb>use|have|own|drive|ride|carry|wear|got|bought|work\s+on|shoot\s+with|read\s+on"
    r"|listen\s+(?:on|with|to\s+music\s+on)|play\s+on|type\s+on|run\s+in)\s+"
    r"(?:a\s+|an\s+|the\s+|my\s+)?(?P<value>[^,;:]+?)"
    r"(?:\s+(?:for|at|to|on|in|when|while|during)\s+(?P<scope>[^,;:]+))?$",
    re.IGNORECASE,
)
_ZH_USE = re.compile(
    r"^我(?:现在|目前|一直|还|平时)?(?P<scope>工作|上班|办公|通勤|在家|家里)?(?:时|的时候)?(?:都|也|还)?"
    r"(?P<verb>用|开|骑|戴|穿|有)(?:的是|着|了)?(?P<value>[^，。,；;：:!?！？]+?)"
    r"(?:来|去)?(?P<scope2>工作|上班|办公|通勤)?$"
)


def usage_of(text: str) -> Usage | None:
    """What the speaker uses, owns, drives or rides, when a statement says just that
    ("I drive a Toyota Corolla", "我上班骑捷安特"); None for any other shape."""
    body = _ZH_LEAD.sub("", _EN_LEAD.sub("", _flat(text)))
    match = _EN_USE.match(body) or _ZH_USE.match(body)
    if not match:
        return None
    parts = match.groupdict()
    value = (parts["value"] or "").strip()
    if not value or value.lower() in _NOT_VALUE:
        return None
    scope = parts.get("scope") or parts.get("scope2")
    return Usage(" ".join(parts["verb"].lower().split()), value, scope)


# Questions that ask for one subject's value, the counterparts of the shapes above.
_EN_ASKED: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"^(?:where\s+(?:do|did)\s+I\s+(?:now\s+|currently\s+)?live|where\s+am\s+I\s+living"
            r"|where(?:'s|\s+is)\s+my\s+home|what\s+city\s+do\s+I\s+live\s+in)\b",
            re.IGNORECASE,
        ),
        "home",
    ),
    (
        re.compile(rf"^(?i:where\s+(?:does|did))\s+{_EN_WHO}\s+(?i:(?:now\s+)?live)\b"),
        "{who} home",
    ),
    (re.compile(r"^(?:where\s+do\s+I\s+work|who\s+do\s+I\s+work\s+for)\b", re.I), "workplace"),
    (
        re.compile(r"^what(?:'s|\s+is)\s+my\s+job\b|^what\s+do\s+I\s+do\s+for\s+a\s+living", re.I),
        "job",
    ),
    (
        re.compile(
            rf"^(?:what|who|which|when|where)(?:'s|\s+is|\s+are|\s+was)\s+the\s+(?P<subject>{_EN_NOUN}?)"
            rf"\s+(?:for|of)\s+(?:my|our)\s+(?P<owner>{_EN_NOUN}?)\s*[?？.]*$",
            re.IGNORECASE,
        ),
        "{owner} {subject}",
    ),
    (
        re.compile(
            rf"^(?:what|who|which|when|where)(?:'s|\s+is|\s+are|\s+was)\s+(?:my|our)\s+"
            rf"(?:new\s+|current\s+)?(?P<subject>{_EN_NOUN}?)(?:\s+now)?\s*[?？.]*$",
            re.IGNORECASE,
        ),
        "{subject}",
    ),
    (
        re.compile(
            rf"^(?i:(?:what|who|which|when|where)(?:'s|\s+is|\s+are|\s+was))\s+{_EN_WHO}'s\s+"
            rf"(?P<subject>{_EN_NOUN}?)\s*[?？.]*$"
        ),
        "{who} {subject}",
    ),
    # a bare "my X" (what the offline planner's recall intent passes on) asks for X too
    (
        re.compile(
            rf"^(?:my|our)\s+(?:new\s+|current\s+)?(?P<subject>{_EN_NOUN})\s*[?？.]*$", re.I
        ),
        "{subject}",
    ),
]
_ZH_ASKED: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"^我{_ZH_NOW}住在?哪"), "home"),
    (re.compile(rf"^(?:我的|我们的)(?P<who>[^{_ZH_PUNCT}]{{1,8}}?){_ZH_NOW}住在?哪"), "{who} home"),
    (re.compile(rf"^我(?P<who>{_ZH_KIN_WORD}){_ZH_NOW}住在?哪"), "{who} home"),
    (re.compile(rf"^我{_ZH_NOW}在哪(?:里|儿)?(?:工作|上班)"), "workplace"),
    (
        re.compile(
            rf"^(?:我(?P<who>{_ZH_KIN_WORD}|{_ZH_PARTNER})|(?:我的|我们的)(?P<who2>[^{_ZH_PUNCT}]{{1,8}}?))"
            rf"{_ZH_NOW}在哪(?:里|儿|个城市|家公司|所学校)?(?P<what>工作|上班|读书|上学|念书|读研|读博|留学)"
        ),
        "{who} {what}",
    ),
    (
        re.compile(
            rf"^我{_ZH_NOW}(?:最喜欢|最爱)(?:吃|喝|看|听|玩|用)?的(?P<subject>[^{_ZH_PUNCT}]{{1,8}}?)是(?:什么|哪)"
        ),
        "最喜欢的{subject}",
    ),
    (
        re.compile(
            rf"^(?:我的|我们的)(?P<subject>[^{_ZH_PUNCT}]{{1,12}}?)(?:现在)?(?:是|在|叫)?(?:什么|谁|多少|哪|几)"
        ),
        "{subject}",
    ),
    (
        re.compile(
            rf"^(?P<who>[^{_ZH_PUNCT}的]{{1,16}}?)\s*的\s*(?P<subject>[^{_ZH_PUNCT}的]{{1,16}}?)\s*"
            r"(?:现在)?(?:是|在|定在)?(?:什么|谁|多少|哪|几)"
        ),
        "{who} {subject}",
    ),
    (re.compile(rf"^(?:我的|我们的)(?P<subject>[^{_ZH_PUNCT}的]{{1,12}})[?？。]*$"), "{subject}"),
]


def asked_subject(question: str) -> str | None:
    """The subject a question asks about, when it has one of the known shapes: "where do
    I live?" asks for `home`, "what's my favourite drink?" for `favourite drink`."""
    body = " ".join(question.split()).strip()
    for shapes in (_EN_ASKED, _ZH_ASKED):
        for pattern, template in shapes:
            match = pattern.match(body)
            if match is not None and (subject := _subject_from(match, template)):
                return subject
    return None


def classify(text: str) -> Candidate:
    """Kind and subject of a statement the user wants kept."""
    body = _TRAILING.sub("", text.strip())
    slot = slot_of(body)
    if _DECISION.search(body):
        kind = "decision"
    elif _PREFERENCE.search(body):
        kind = "preference"
    else:
        kind = "fact"
    return Candidate(text=body, kind=kind, subject=slot.subject if slot else None)


def explicit_request(text: str) -> Candidate | None:
    """ "remember that X" / "记住X": what to keep, or None when the text asks nothing."""
    match = _REMEMBER.match(text.strip())
    if not match:
        return None
    body = (match.group("body") or match.group("zh") or "").strip()
    return classify(body) if body else None


# "3的平方是多少", "我的电话是多少": a question without a question mark is still a question
_QUESTION_END = re.compile(
    r"(?:[?？吗呢]|多少|几(?:个|点|号|岁|次|天)?|什么|谁|哪(?:里|儿|个|些|天)?|怎么样?|为什么|如何"
    r"|是不是|对吗)\s*$"
)
_NOT_A_STATEMENT = re.compile(
    r"^\s*(?:please\s+)?(?:forget|what|who|where|when|why|how|do you|did we|can you|could you)\b"
    r"|^\s*(?:请|帮我)?(?:忘掉|忘记|删除记忆|别再记得)|^\s*(?:关于|你还?记得)",
    re.IGNORECASE,
)


def from_user_message(text: str) -> list[Candidate]:
    """Conclusions a user message states on its own (used when a span is summarised).

    Requests and questions ("forget that I prefer tea", "what do you know about …") are
    not statements, even when they quote one."""
    if _NOT_A_STATEMENT.search(text) or len(text.strip()) > MAX_TEXT_CHARS:
        return []  # a long message is not one crisp conclusion (and would not fit one)
    explicit = explicit_request(text)
    if explicit is not None:
        return [explicit]
    candidate = classify(text)
    if len(candidate.text) > 300 or _QUESTION_END.search(candidate.text):
        return []
    if candidate.kind in {"preference", "decision"} or candidate.subject:
        return [candidate]
    return []
