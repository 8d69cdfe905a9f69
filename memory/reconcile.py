"""Reconciling a new conclusion with the active ones (issue 15): new, restatement,
update (supersede) or unrelated.

Updates are rarely phrased "my X is Y". People say what changed ("I now see Dr. Patel
instead of Dr. Rao", "we switched from A to B", "the standup moved to 10:30", "Ana now
reports to Li", "…改成了…", "…换人了，现在是…", "我现在改用…", "不再…") and name a
subject by its role ("the person who cuts my hair" is the hairdresser). The rules here
are general lexicons, not sentences: change cues (EN + ZH), the value a cue says was
replaced, a small curated lexicon of roles people have (hairdresser, doctor, manager, …),
subject shapes beyond "my X is Y", and subject normalisation (generic qualifiers such as
"daily" or 每周 do not make another subject). A cue never links two statements on its
own: it needs the same subject, or the replaced value named in exactly one fitting row.
A wrong merge loses a fact; a missed one leaves a stale row that recall still ranks
below the newer one (`memory.conclusions`), so every rule errs towards "new".

With a model configured, the decision is the model's (`judge_prompt`,
`parse_judgement`): the new text and the top few candidates with their ids; a reply
that does not validate, names an id not offered, or does not come in time leaves the
decision to these rules.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from memory.extraction import KIN_OF, slot_of
from memory.text import HAN, has_han, zh_words

Action = Literal["new", "restatement", "update", "unrelated"]
ACTIONS: tuple[str, ...] = ("new", "restatement", "update", "unrelated")

_P = r"，。,、；;：:！!？?"  # clause punctuation, both scripts

# in their order (`memory.bilingual` reads 周二 and 3月 by them)
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTH_NAMES = tuple(
    """january february march april may june july august september october november
    december""".split()  # noqa: SIM905
)
WEEKDAYS = frozenset(WEEKDAY_NAMES)
MONTHS = frozenset(MONTH_NAMES)
# what "old" or "former" says of a person or a time, not of an earlier one replaced: "old
# friends", "my old man", "old school" (the change cue here, `sameness.nearest_change`'s
# "the old bakery")
NOT_AN_EARLIER_ONE = r"(?:friends?|school|days|times|man|lady|folks|boys?|girls?|self|hands?|age)\b"

# -- change cues ---------------------------------------------------------------------------

_EN_CUE = re.compile(
    r"\b(?:instead|switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)|replac(?:ed|ing)"
    r"|swapp?(?:ed|ing)|a\s+swap|trad(?:ed|ing)|upgrad(?:ed|ing)|reschedul(?:ed|ing)"
    r"|postpon(?:ed|ing)"
    r"|push(?:ed)?\s+(?:back|out)|brought\s+forward|took\s+over|taken\s+over"
    # "asked us to bring Duoduo's bedtime forward to 8:45", "push the call back to 4"
    r"|(?:bring|brings|bringing|brought|push|pushes|pushing|pushed|move|moves|moving)\s+"
    r"(?:[\w'-]+\s+){1,4}?(?:forward|back|up|out)\s+to\b"
    # a verb, not the noun: "shifted to 10", not "another wild night shift with Priya"
    r"|shifted|shift(?=\s+(?:to|from|back|forward|it|the|my|our|over)\b)"
    r"|(?:re)?shuffled|ended\s+up\s+(?:on|in|with|at)"
    r"|tak(?:es|ing)\s+over|no\s+longer|any\s?more|now|these\s+days|from\s+now\s+on"
    r"|from\s+next|from\s+this\s+(?:week|month|term|year)|starting|as\s+of|became|become"
    r"|used\s+to|sold|ditched|dropped|gave\s+up|reshuffled|rearranged|redone|reorgani[sz]ed"
    r"|(?:gone|went|is|'s)\s+on\s+(?:\w+\s+)?leave|looking\s+after|until\s+next|stepped\s+down"
    r"|retired|left\s+the\s+(?:company|team|firm|practice|school|club)"
    r"|got\s+rid\s+of|stopped|quit|transferr?(?:ed|ing)|relocated|again|new"
    r"|pushed\s+to|signed\s+up|went\s+with|going\s+with|hand(?:ed|s|ing)|passe[sd]|took\s+on|back\s+to"
    r"|actually|correction|I\s+meant|mixed\s+(?:it|them)\s+up|got\s+(?:it|that)\s+wrong"
    r"|put\s+(?:me|us|him|her|them)\s+down\s+for"
    r"|reassigned|rotated|promoted|renamed|rebooked|cancell?ed|instead|migrat(?:ed|ing)"
    r"|stretch(?:ed)?|extended|renew(?:ed|ing)|shortened|reduced|increased|raised|lowered|bumped|cut\s+to"
    r"|went\s+(?:up|down)|these\s+days|nowadays|since\s+then|for\s+the\s+time\s+being"
    r"|for\s+a\s+while|temporarily|until\s+further\s+notice|covering|cover(?:s|ing)?\s+for"
    r"|fill(?:s|ing)?\s+in|stand(?:s|ing)?\s+in|hired\s+by|joined|lately|recently"
    r"|(?:this|next)\s+(?:term|semester|season)|(?:up|down)\s+to(?=\s+[\d$€£])"
    r"|(?<![-\w])(?:old|former|previous)(?=\s+(?!" + NOT_AN_EARLIER_ONE + r")[a-z])"
    # what came of something ("we're back with HireLoop", "ended up signing with …")
    r"|ended\s+up|settled\s+on|slid|slipped|moves?\s+to|from\s+here\s+on|gone\s+(?:up|down)"
    r"|back\s+with|bring\s+(?:\w+\s+){0,3}forward|scrap(?:ped)?|relocat\w*|pulled\s+out"
    r"|jumped\s+ship|took\s+a\s+job|picked\s+up|went\s+over\s+to|done\s+with"
    r"|from\s+the\s+next|since\s+next|(?:from|since)\s+(?:monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday|january|february|march|april|may|june|july|august|september"
    r"|october|november|december))\b",
    re.IGNORECASE,
)
_ZH_CUE = re.compile(
    r"改成|改为|改用|改到|改在|改看|改去|改坐|改喝|换成|换人|换了|换到|换用|变成|变为|调到|调整"
    r"|推迟|提前(?=[到了至一二两三半几\d个，。,!！]|$)|挪到|转学|转到|搬到|搬去|不再|不用了|不去了|现在|如今|目前|以后|从此|已经|新的"
    r"|接手|接替|取代|代替|重新|换回|改回|其实|说错|搞错|记错|纠正|更正"
    r"|顺延|延期|延到|延后|改期|提早|转到|转去|调去|调到|请回|回来|换了人|来管|负责了"
    r"|交给|转交|移交|往后推|推了|定在了|拍板|下学期|下个月起|下周起|往后|这阵子|转投|改订|退掉|不续|没续|(?<![继陆连手后断接存])续(?:签|约|租|到|了)"
    r"|之前那|原来那|以前那|原先那|原来的|归[^，。,]{1,4}管|排在|跑[^，。,]{1,4}去了"
    r"|从(?:这次|今天|今年|本周|这周|下次|下周|下个月|现在|今往后)(?:开始|起)"
    r"|(?:这个|下个|上个|这|下|上|本)(?:月|季度|学期|星期|礼拜|周)(?:开始|起)"
    r"|(?:\d{1,2}|[一二三四五六七八九十]{1,3})(?:月份?|号|日)(?:开始|起)"
    r"|[找试换请用]了?(?:另一家|另外一家|一家新的|新的一家|别家|别的)|又找了|后来又"
    # what came of something: "…，干脆每周星期二关门", "只好改装联通", "涨到1480", "又搬回306"
    r"|干脆|只好|那就|于是|涨到|涨了|降到|降了|加到|减到|升到|升职|升咗|调回|搬回|挪去|挪了"
    r"|推到|拖到|延到|延期到|顺延|被推|最后(?:还是|[定订选买换找去用租签改])|最终|定这儿|就定|跳槽|转头|不上了|不做了|不干了|被安排|被弄到|被排"
    r"|开始走|入手了|(?<!自己)顶上|换地方|改装|之後|而家|又[^，。,]{0,3}(?:回|涨|降|换|改|搬|买)"
    # back to an earlier one, enrolled in another, told to stop, this season's:
    # "还是回到礼拜四关门", "给孙子报了个轮滑", "主持那个课别上了", "这季的铁观音…"
    r"|还是回到(?!家)|报了个|改报|别上了|别学了|不学了|别去了|这一?季(?:的|都|是|改|换)"
    # a sum raised or lowered: "卫生管理费提到900块了" (not 提到 as "mentioned")
    r"|提到(?=[\d一二两三四五六七八九十几百千万.]+(?:块|元|镑|刀|万|千|百|%|个点|成|倍))|提高到|上调|下调|调高|调低|涨价|降价|加价|新标准"
)
# a statement that something still holds: "still", 还是, 一直 (a restatement, not a change);
# not a blocker or a complaint given as the reason for a change: "签证一直卡着，机票挪到三月了",
# "九点半还是偏早，就定十点了", "still waiting on the visa, so we moved it to March"
_STILL = re.compile(
    r"\b(?:still(?!\s+(?:waiting|stuck|no\b|not\b|too\b|hasn't|haven't|hadn't|isn't|wasn't"
    r"|aren't|can't|couldn't|won't|doesn't|don't|didn't|closed|broken|sick|ill|down\b))"
    r"|as\s+before|as\s+always|unchanged|same\s+as\s+(?:before|ever)"
    r"|stick(?:ing)?\s+with|stay(?:ing)?\s+with|keep(?:ing)?\s+it|remains?|remained)\b"
    # (还是回…吧 goes back to an earlier one: no "still")
    r"|还是(?!偏|太|有点|有些|不太|不够|嫌|不行|不方便|不合适|回[^来家])"
    # (一直没动过 / 一直没变 still say it holds)
    r"|一直(?!卡|拖|没(?!再?[动变换改])|不|等|在等|排不|约不|联系不|打不|坏|病|咳|疼|痛)"
    r"|仍然|依然|没再?变|照旧|照样|还在(?!等|排|卡|拖|修)",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)
def still_cue(text: str) -> bool:
    """Does the text say that something still holds as it was?"""
    return bool(_STILL.search(_mandarin(unicodedata.normalize("NFKC", text))))


_CORRECTION = re.compile(
    r"\b(?:got\s+(?:it|that|this)\s+wrong|I\s+meant|correction|mixed\s+(?:it|them|those)\s+up"
    r"|misspoke|my\s+mistake|my\s+bad|(?:scratch|scrap)\s+that|not\s+(?:the\s+\w+\s+)?(?:what\s+)?I\s+"
    r"(?:said|told\s+you)|I\s+was\s+wrong|(?:that|this)\s+(?:was|is)\s+wrong|I\s+misread"
    r"|misremembered|(?:I|I've|I'd)\s+(?:got\s+)?(?:confused|muddled)|typo|strike\s+that"
    r"|ignore\s+(?:that|what\s+I\s+(?:said|wrote))|wrong\s+(?:day|date|time|name|number|one))\b"
    # a sentence that opens by taking back what was said: "Actually, it's …", "Wait — …"
    r"|(?:^|[.!?]\s+)(?:(?:oh|oops|hmm|no|ah|uh|um|er)[,\s]+){0,2}(?:actually|wait|sorry|oops"
    r"|hold\s+on|hang\s+on)\b(?!\s+to\b)"
    r"|\bI(?:'m|\s+was|\s+am)\s+thinking\s+of\s+(?:last|the\s+old|my\s+old|another)\b"
    r"|\b(?:that's|that\s+is|that\s+was|it's)\s+(?:out\s+of\s+date|outdated|old\s+news)\b"
    r"|说错|记错|搞错|弄错|更正|纠正|口误|刚才说的不对|记岔|说岔|看错|看岔|写错|听错|记混"
    r"|打错|不对不对|[哦噢啊呃诶欸]?不对[，,]|[等稍]一?下[，,]|作废",
    re.IGNORECASE,
)


def correction_cue(text: str) -> bool:
    """Does the text say the speaker got something wrong ("sorry, I got that wrong", 我记错了)?"""
    return bool(_CORRECTION.search(_mandarin(unicodedata.normalize("NFKC", text))))


@lru_cache(maxsize=8192)
def change_cue(text: str) -> bool:
    """Does the text say that something changed (or holds from now on)?"""
    body = unicodedata.normalize("NFKC", text)
    return bool(_EN_CUE.search(body) or _ZH_CUE.search(_mandarin(body)))


# written Cantonese's aspect marks, negations and "now", as the cue patterns spell them
# in Mandarin: "转咗礼拜五" (转了), "场地冇再变" (没再变), "依家系十一月九号" (现在)
_YUE_TO_MANDARIN = str.maketrans({"咗": "了", "冇": "没", "唔": "不"})


def _mandarin(text: str) -> str:
    """`text` with written Cantonese's few cue-bearing words in their Mandarin form."""
    if not has_han(text):
        return text
    return text.translate(_YUE_TO_MANDARIN).replace("依家", "现在").replace("讲错", "说错")


_CUE_WORDS = re.compile(
    r"\b(?:instead(?:\s+of\s+[^,.;]+)?|now|these\s+days|from\s+now\s+on|again|still"
    r"|currently|nowadays|as\s+of\s+(?:today|now))\b",
    re.IGNORECASE,
)
_ZH_CUE_WORDS = re.compile(r"现在|如今|目前|已经|改成了|改成|改为|换成了|换成|也|还是|还")


def without_cues(text: str) -> str:
    """The statement without the words that only say it changed: what its frame is."""
    body = _CUE_WORDS.sub(" ", unicodedata.normalize("NFKC", text))
    body = _ZH_CUE_WORDS.sub("", body)
    body = re.sub("改(?=[去在看坐用喝吃找住])", "", body)  # 改去人民医院 = 去人民医院
    body = re.sub(r"了(?=[。.!！]?$)", "", body.strip())
    return " ".join(body.split())


# the words for a relative or someone close: whose a fact is, and who a thing went to
_RELATIONS = (
    "wife husband partner spouse son daughter kid kids child children mother father mom mum "
    "sis bro dad parents sister brother niece nephew grandma grandpa grandmother grandfather aunt "
    "uncle cousin friend colleague coworker boss neighbour neighbor girlfriend boyfriend "
    "mentor mentee landlord landlady tutor roommate flatmate housemate classmate teammate "
    "cofounder co-founder mother-in-law father-in-law sister-in-law brother-in-law "
    "son-in-law daughter-in-law parents-in-law workmate "
    # written Cantonese: younger brother, elder sister, mum, dad, mother's brother …
    "细佬 家姐 细妹 阿妈 阿爸 老豆 老窦 舅父 阿嫲 阿爷 老婆仔 "
    "导师 室友 同学 妈 爸 哥 姐 弟 妹 爸妈 父母 "
    "太太 妻子 老婆 爱人 丈夫 老公 先生 儿子 女儿 孩子 妈妈 爸爸 母亲 父亲 姐姐 妹妹 哥哥 弟弟 "
    "侄女 侄子 外甥 外甥女 奶奶 爷爷 外婆 外公 同事 朋友 邻居 表妹 表哥 表姐 表弟 舅舅 姑姑 阿姨 "
    "大舅 小舅 大姨 小姨 大伯 大姑 小姑 姑父 姨父 舅妈 婶婶 嫂子 弟媳 "
    "姐夫 妹夫 小叔子 小姑子 大姑子 岳父 岳母 同桌 闺蜜 发小 "
    "老伴 媳妇 儿媳 儿媳妇 女婿 孙子 孙女 外孙 外孙女 丈母娘 老丈人 伯伯 叔叔 "
    "姥姥 姥爷 亲家 对象 男朋友 女朋友 男友 女友 继子 继女 "
    "娃他爸 孩子他爸 孩他爸 娃他妈 孩子他妈 孩他妈 "
    # an uncle or aunt by birth order (二叔, 三姨), father's side cousins, in-laws
    "二叔 三叔 四叔 小叔 二伯 三伯 二姨 三姨 二姑 三姑 二舅 三舅 大舅妈 伯父 伯母 姑妈 姨妈 "
    "婶子 堂哥 堂姐 堂弟 堂妹 表叔 表姑 表舅 大哥 二哥 三哥 大姐 二姐 三姐 大嫂 二嫂 "
    "公公 婆婆 家公 家婆 老爸 老妈"
)
_RELATION_WORDS = frozenset(_RELATIONS.split())
RELATION_WORDS = frozenset(w for w in _RELATION_WORDS if w.isascii())
ZH_RELATION_WORDS = frozenset(w for w in _RELATION_WORDS if not w.isascii())


# -- the value a change says was replaced --------------------------------------------------

_CHANGE_VERB = re.compile(
    r"\b(?:switch|chang|mov|went|go|migrat|upgrad|reschedul|shift|transfer|relocat|turn|swap"
    r"|postpon|push|pass|hand|rotat|reassign)\w*",
    re.IGNORECASE,
)
# capitalised words that start a clause, not a name: "Instead of Dr. Rao I see …"
_NOT_LEAD = (
    r"(?:I|I'm|I've|We|We're|We've|She|He|They|It|It's|You|My|Our|The|Now|This|That|So|But"
    r"|And|Then|Since|Because|Her|His|Their)"
)
# a value named on its own, whatever follows it: a day (Tuesdays too), a month, a clock
# time, a day of the month or a name ("Dr. Rao", "Marks & Spencer")
_NAMED_VALUE = (
    r"(?P<old>(?:" + "|".join(sorted(day.capitalize() for day in WEEKDAYS)) + r")s?(?![\w'])"
    r"|(?:" + "|".join(sorted(month.capitalize() for month in MONTHS)) + r")(?![\w'])"
    r"|\d{1,2}[:.]\d{2}(?:\s*[ap]\.?m\b\.?)?(?![\w:])|\d{1,2}\s*[ap]\.?m\b\.?"
    r"|\d{1,2}(?:st|nd|rd|th)\b"
    r"|(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?(?!" + _NOT_LEAD + r"\b)[A-Z][\w&-]*(?<!'s)"
    r"(?:\s+(?:&\s+)?(?!" + _NOT_LEAD + r"\b)[A-Z][\w&-]*){0,3})"
)
_EN_OLD: tuple[re.Pattern[str], ...] = (
    re.compile(
        r"\binstead\s+of\s+(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:!?]+?)(?:\s+(?:now|these\s+days))?\s*(?:[,.;:!?]|$)",
        re.I,
    ),
    re.compile(
        r"\breplac(?:e|es|ed|ing)\s+(?:my\s+|our\s+|the\s+)?(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:]+?)\s+(?:with|by)\s+",
        re.I,
    ),
    re.compile(
        r"\bswapp?(?:ed|ing)\s+(?:my\s+|our\s+|the\s+)?(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:]+?)\s+for\s+",
        re.I,
    ),
    re.compile(
        r"\btrad(?:ed|ing)\s+(?:in\s+)?(?:my\s+|our\s+|the\s+)?(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:]+?)\s+for\s+",
        re.I,
    ),
    re.compile(
        r"\b(?:took|taken|takes|taking)\s+over\s+(?:(?:the|my|our)\s+[\w\s-]{1,40}?\s+)?from\s+(?:my\s+|our\s+|the\s+)?(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:]+?)(?:\s+as\b|\s*(?:[,.;:]|$))",
        re.I,
    ),
    re.compile(r"\b(?:has\s+been\s+|was\s+)replaced\s+by\b(?P<old>)", re.I),
    re.compile(
        r"\bno\s+longer\s+(?:(?:use|see|go\s+to|train\s+at|work\s+(?:at|for|with)|drive|ride"
        r"|visit|is|are|am|at|with|in|on|uses|sees|goes\s+to|drives|rides|have|has|take|takes"
        r"|get|gets|shop\s+at|bank\s+with|pay\s+for|live\s+in|[a-z]+(?:\s+(?:at|with|for|to|in|on))?)\s+)?"
        r"(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:!?\u2014\u2013]+?)\s*(?:[,.;:!?\u2014\u2013]|\s-\s|$)",
        re.I,
    ),
    re.compile(
        # "gave up on Duolingo", "given up on the Headspace app": what was given up on
        r"\b(?:sold|ditched|dropped|gave\s+up(?!\s+the\s+ghost)(?:\s+on)?|given\s+up(?:\s+on)?"
        r"|got\s+rid\s+of|quit|cancell?ed"
        r"|stopped\s+(?:using|seeing|going\s+to|buying\s+from|shopping\s+at|ordering\s+from)"
        r"|ended(?!\s+up)|terminated|unsubscribed\s+from|left|moved\s+away\s+from|trad(?:ed|ing)\s+in)\s+"
        # not a particle nor a pronoun: "someone dropped out, so I've got my slot back",
        # "…at my old studio and I left them behind"
        r"(?!(?:out|off|in|by|back|away|over|behind|them|it|him|her|us|me|you)\b)"
        r"(?:my\s+|our\s+|the\s+)?(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:!?()\u2014\u2013]+?)"
        r"(?:\s+(?:and|for|in\s+favou?r\s+of)\b|\s*(?:[,.;:!?()\u2014\u2013]|\s-\s|$))",
        re.I,
    ),
    re.compile(
        r"\b(?:not|isn't|aren't)\s+(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:!?]+?)\s+any\s?more\b",
        re.I,
    ),
    # "… is now Joris, not Sanne", "Allianz rather than Aviva", "Tuesday, not Monday":
    # a name after the contrast, ending its clause
    re.compile(
        r"(?:,\s*(?:and\s+|but\s+)?not|\brather\s+than|\bin\s+place\s+of)\s+(?:the\s+|my\s+|our\s+)?"
        # "rather than another round of Apiguard"
        r"(?:(?:another|more)\s+(?:(?:round|course|batch|dose|pack)s?\s+of\s+)?)?"
        r"(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?(?:[A-Z0-9][\w'.:-]*|[a-z][\w-]*\d[\w-]*)"
        r"(?:\s+[A-Z0-9][\w'.:-]*){0,3})\s*(?:any\s?more\s*)?(?:[,.;:!?)]|$)"
    ),
    # "Instead of Tuesdays we now meet…", "Rather than Aviva, we went with…", "…rather
    # than Mondays now", "instead of 9:30 the call starts…": a day, month, clock time,
    # ordinal or name right after the contrast is the value replaced, whatever follows it
    re.compile(
        r"\b(?:[Ii]nstead\s+of|[Rr]ather\s+than|[Ii]n\s+place\s+of)\s+(?:the\s+|my\s+|our\s+)?"
        + _NAMED_VALUE
    ),
    # "It used to be Dr. Rao, but now…", "The sync was on Mondays; now it's…"
    re.compile(
        r"\b(?:used\s+to\s+be|was|were)\s+(?:on\s+|at\s+|in\s+|with\s+)?(?:the\s+|my\s+|our\s+)?"
        + _NAMED_VALUE
        + r"(?:\s+(?:before|earlier|at\s+first))?\s*(?:[,;]|\s-|\s\u2014)?\s*(?:but\s+)?"
        r"(?:now|these\s+days|nowadays)\b"
    ),
    # "Tomas has replaced Ines as team lead", "Out with Slack, in with Teams", "Bye bye
    # Vodafone, hello O2": the name that went
    re.compile(
        r"\breplaced\s+(?:the\s+|my\s+|our\s+)?"
        + _NAMED_VALUE
        + r"(?=\s+(?:as|at|on|in|for)\b|\s*[,.;:!?]|$)"
    ),
    re.compile(r"\b[Oo]ut\s+with\s+(?:the\s+|my\s+|our\s+)?" + _NAMED_VALUE + r",?\s+in\s+with\b"),
    re.compile(
        r"(?:^|(?<=[\s,;.(]))(?:[Bb]ye(?:[\s-]bye)?|[Gg]ood-?bye|[Ff]arewell|[Ss]o\s+long)"
        r",?\s+(?:to\s+)?" + _NAMED_VALUE + r"[,;.!]*\s+(?:[Hh]ello|[Hh]i|[Ww]elcome)\b"
    ),
    # "…paying my bills, rather than the folk label, which has gone quiet": plain words
    re.compile(
        r"\brather\s+than\s+(?:the\s+|my\s+|our\s+)?"
        r"(?P<old>[a-z][\w-]{2,}(?:\s+[a-z][\w-]{2,}){0,2})\s*(?:[,.;:!?)]|$)"
    ),
    # "it's aspirin I'm allergic to, not ibuprofen": a plain word after the contrast,
    # ending the sentence (the store checks that a stored row names it)
    re.compile(
        r",\s*(?:and\s+|but\s+)?not\s+(?:the\s+|my\s+|our\s+)?"
        r"(?P<old>(?!(?:really|sure|bad|yet|now|that|much|quite|always|just|so|too|even|exactly"
        r"|only|at\s+all|anymore|any\s+more|any\s+longer)\b)[a-z][\w-]{2,}(?:\s+[a-z][\w-]{2,})?)"
        r"\s*(?:[.!?)]|$)"
    ),
)
# a Latin name, or a Chinese one in an English sentence ("鑫达 shut its doors last month")
_GONE_NAME = (
    r"(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*){0,3}"
    rf"|[{HAN}]{{2,10}})"
)
_GONE = (
    r"(?:has\s+|had\s+|have\s+|just\s+|finally\s+)?"
    r"(?:met\s+its\s+end|broke(?:\s+down)?|died|stopped\s+working|gave\s+up\s+the\s+ghost"
    r"|(?:been|was|got|is)\s+(?:replaced|stolen|written\s+off|retired|discontinued)"
    r"|retired|left|quit|closed(?:\s+down)?|shut\s+down|moved\s+away|went\s+bust|stepped\s+down"
    r"|lost\s+(?:its|their)\s+lease"
    # "Derek's had to step down", "Kestrel pulled out", "鑫达 shut its doors"
    r"|(?:has\s+|'s\s+)?had\s+to\s+(?:step\s+(?:down|back)|stop|quit|retire|pull\s+out|drop\s+out)"
    r"|stepped\s+back|pulled\s+out|dropped\s+out|(?:shut|closed)\s+(?:its|their|the)\s+doors"
    # hired away: "Dave got picked up by Ornge for the flight medic program"
    r"|got\s+(?:picked\s+up|poached|snapped\s+up|headhunted|hired\s+away)\s+by"
    r"|passed\s+away|is\s+gone|is\s+no\s+more|went\s+on\s+leave|is\s+on\s+leave"
    r"|(?:has\s+)?(?:gone|went)\s+(?:back\s+home\b|home\b|back\s+to\s+(?=[A-Z]))"
    r"|went\s+downhill|got\s+worse|botched|moved\s+back\s+to|is\s+fully\s+booked"
    # "Lorraine has moved to a different team", "Dr. Ames was transferred to another site"
    r"|(?:has\s+|have\s+|was\s+|been\s+|got\s+)*(?:moved|transferred|reassigned)\s+(?:over\s+)?to\s+"
    r"(?:a|another)\s+(?:different\s+|new\s+|other\s+)?(?:team|job|role|department|post|unit"
    r"|ward|branch|office|school|practice|clinic|hospital|company|site|patch|area)"
    # given away or laid up: "the Dreame went to my cousin", "The Sentinel has gone into dry dock"
    r"|went\s+to\s+(?:my|our|a|his|her|their)\s+(?:\w+\s+){0,2}?(?:"
    + "|".join(sorted(RELATION_WORDS, key=len, reverse=True))
    + r")\b"
    r"|(?:has\s+)?(?:gone|went)\s+(?:into|in\s+for)\s+(?:dry\s*dock|repairs?|refit|the\s+shop)"
    r"|(?:handed|passed)\s+(?:\w+\s+){0,3}(?:over|on)\s+to"
    # away or unable: "Mrs. Chan hurt her knee", "Joy's gone on maternity leave", "Jonah's
    # booked solid", "B10 got double-booked", "Ms. Ode is off sick"
    r"|hurt\s+(?:her|his|their)\s+\w+|broke\s+(?:her|his|their)\s+\w+"
    r"|(?:is\s+|has\s+|was\s+)?(?:gone|going|went|off)\s+on\s+(?:maternity|paternity|parental"
    r"|sick|medical|long)\s+leave|(?:is\s+|was\s+)?off\s+sick|fell\s+ill|got\s+sick"
    # "Priya's just started maternity leave"
    r"|(?:started|starts|began|begun)\s+(?:(?:her|his|their)\s+)?(?:maternity|paternity"
    r"|parental|sick|medical|long|study)\s+leave"
    r"|(?:is\s+|was\s+|got\s+)?(?:booked\s+(?:solid|up)|double[\s-]booked|fully\s+booked)"
    r"|can(?:no|')t\s+make\s+it)\b"
)
_EN_GONE = re.compile(r"(?:^|(?<=[\s,;.(]))(?:(?:the|my|our)\s+)?" + _GONE_NAME + r"\s+" + _GONE)
# a place named by its kind that closed: "The bookstore lost its lease in March, so …"
_EN_PLACE_GONE = re.compile(
    r"(?:^|(?<=[\s,;.(]))(?:[Tt]he|[Oo]ur|[Mm]y)\s+(?:old\s+)?(?P<old>[a-z]{4,})\s+"
    r"(?:has\s+|had\s+|just\s+|finally\s+)*(?:closed(?:\s+down)?|shut\s+down|went\s+bust"
    r"|(?:lost|losing)\s+(?:its|their)\s+lease|(?:shut|closed)\s+(?:its|their)\s+doors)\b"
)
# the value named between commas: "The woman who used to run Mum's building, Sandra,
# retired last month"
_EN_GONE_NAMED = re.compile(r"(?<=,\s)" + _GONE_NAME + r",\s+" + _GONE)
_EN_FROM_TO = re.compile(
    r"\bfrom\s+(?:the\s+)?(?P<old>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?[^,.;:]+?)\s+(?:to|into|for)\s+(?P<new>[^,.;:]+)",
    re.I,
)
_ZH_OLD: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"不再(?:去|用|看|找|骑|坐|喝|吃|是|在|跟|让)?(?P<old>[^{_P}]+?)(?:那里|那儿|这里|这儿)?"
        rf"(?:看牙|看病|理发|上班|上学)?了?(?:[{_P}]|$)"
    ),
    re.compile(
        rf"从(?P<old>[^{_P}]+?)(?:改为|改成|换成|变成|变为|换到|改到|调到|搬到|转到|调整为|推迟到|提前到"
        r"|挪到|移到|调整到|延到|顺延到|改在)"
    ),
    # 那个驿站关了, 王师傅调去别的小区了, 林医生退休了: the value that went away
    re.compile(
        rf"(?:^|[{_P}])(?P<old>[^{_P}]{{2,20}}?)"
        # when it happened, or of what: 周叔前两天把腰闪了, The Brogues 那天已经被人订走了
        r"\s*(?:那天|那边|前两天|前几天|前些天|上周|上礼拜|上个月|最近|年初|年底|刚刚?|今年|去年|前阵子|这个月|昨天)?"
        r"(?:已经)?(?:关了|关门了|倒闭了|停业了|搬走了|不干了"
        r"|退休了|离职了|辞职了|调走了|调去|去外地|回老家|休产假|休假了|请长假|退下来了?|退居二线"
        # 沈老师回福建老家了, 王婶跟她儿子去西安住了, 芳姐去滨江帮女儿带小孩了, 把腰闪了
        rf"|回[^{_P}]{{1,4}}?老家|跟[^{_P}]{{1,6}}?(?:去|搬去|搬到)[^{_P}]{{1,6}}?住"
        rf"|去[^{_P}]{{1,6}}?帮[^{_P}]{{0,4}}?带(?:孩子|小孩|娃|孙子|孙女|外孙女?)"
        r"|把(?:腰|腿|脚|手|胳膊|膝盖)[^，,。；;！!？?]{0,2}?(?:闪|扭|摔|伤|崴)了|骨折了|摔伤了"
        r"|(?:腰|腿|脚|脚踝|手|胳膊|膝盖)(?:闪|扭|摔|伤|崴)(?:到)?了"  # Macca腰闪了
        r"|被(?:人|别人)?(?:订|抢|挖|截胡)走了|被(?:人|别人)?截胡了"
        # 王姐回国耍去了, 小橘灯开不下去了, 老陈住院了, 她来不了了
        r"|回国|出国了|开不下去|不开了|不做了|住院了|生病了|来不了"
        # 缬沙坦停了: a medicine or service stopped
        r"|停了|停掉了|停药了"
        # booked up, as "booked solid" in English: 王老师这学期排不开, 老周档期满了, 林医生约不上了
        r"|排不开|排不上|档期满了|约满了|约不上|排满了|没档期"
        # 3号那天的号被人抢光了: the slot taken by others
        r"|(?:那天)?的号被人?抢光了|被抢光了|被人订了|被别人订了)"
    ),
    # 老胡那儿后来不找他了: the one the speaker stopped going to, named before
    re.compile(
        rf"(?:^|[{_P}])(?P<old>[^{_P}]{{2,10}}?)(?:那儿|那里|那边)?(?:后来|现在)?不(?:找|去|用)(?:他|她|它|他们|她们)了"
    ),
    # Vogel 博士的排期排到明年了: whose schedule is full
    re.compile(rf"(?:^|[{_P}])(?P<old>[^{_P}]{{2,10}}?)的?(?:排期|档期|号)(?:排到|约到|挂到)"),
    re.compile(
        # 盒马的菜不订了, 喜马拉雅的会员不续了, 那家健身房不办卡了: ordered, renewed, joined no more
        rf"(?:^|[{_P}])(?P<old>[^{_P}]{{2,12}}?)(?:我们|我|咱们|他们|她们)?"
        r"不(?:用|去|看|坐|骑|喝|吃|订|续|办卡|办|买|学|报|租)了"
    ),
    # 我不挤地铁了, 不开车了: the thing no longer done
    re.compile(rf"不再?(?:挤|开|坐|乘|搭|骑|用|去|找|喝|吃)(?P<old>[^{_P}了]{{2,8}}?)了"),
    # 是宋医生，不是黄医生 / 而不是… / 而非… / 取代了… / 接替了…
    re.compile(
        rf"(?:而|，|,)?(?:不是|而非|取代了?|接替了?|代替了?)(?P<old>[^{_P}]{{2,10}}?)(?:了|的)?(?:[{_P}]|$)"
    ),
)


_ZH_NO_MORE = re.compile(r"(?:不再|不)(?:去|用|找|买|喝|坐|看)了$")
# what a Chinese place's name ends in: 拾光咖啡, 益丰大药房, 松鹤养老院 (jieba knows few of them)
ZH_PLACE_SUFFIXES = (
    "咖啡|宠物医院|医院|诊所|大药房|药房|药店|超市|银行|公司|健身房|幼儿园|小学|中学|大学|学校|酒店"
    "|餐厅|饭店|书店|花店|菜鸟驿站|驿站|中心|广场|大厦|养老院|护理院|敬老院|疗养院|培训班|俱乐部"
    "|包装|印务|印刷厂|彩印|茶行|茶庄|茶厂|门诊|车行|物流|商行|酒吧|面馆|餐馆"
)
_ZH_NAMED_PLACE = re.compile(rf"[{HAN}]{{2,4}}?(?:{ZH_PLACE_SUFFIXES})")


def _zh_left_behind(body: str) -> list[str]:
    """The thing a clause says one no longer goes to or uses, named before it:
    "拾光咖啡涨价以后我就不再去了" -> 拾光咖啡."""
    found = []
    for clause in re.split(f"[{_P}]", body):
        clause = clause.strip()
        if not _ZH_NO_MORE.search(clause):
            continue
        place = _ZH_NAMED_PLACE.search(clause)
        if place is not None:
            found.append(place.group())
            continue
        names = [w for w, flag in zh_words(clause) if flag in ("nr", "ns", "nt", "nz")]
        if names:
            found.append(names[0])
    return found


_WHEN_TAIL = re.compile(
    r"\s+(?:on\s+(?:the\s+)?\w+|last\s+\w+|this\s+\w+|next\s+\w+|yesterday|today|tonight"
    r"|in\s+[A-Z]\w+|in\s+\d{4}|after\s+.+|when\s+.+|because\s+.+|since\s+.+|as\s+of\s+.+"
    r"|at\s+the\s+(?:start|end)\s+of\s+.+|for\s+the\s+rest\s+of\s+.+|in\s+the\s+end|after\s+all)$",
)


def _zh_head(value: str) -> str:
    """A Chinese replaced value up to its first verb: 接替了老李负责周报 -> 老李. Three
    characters or fewer, past 那儿 / 那家 …, are a name as they are (鑫达, which jieba
    cuts 鑫 / 达)."""
    value = re.sub("(?:那儿|那里|这儿|这里|那边|这边)$", "", value) or value
    value = (
        re.sub("^.*?(?:那个|这个|那家|这家|原来的|原来那家|以前的|之前的|那位|这位)", "", value)
        or value
    )
    if len(value) <= 3:
        return value
    words = zh_words(value)
    if len(words) < 2 or not has_han(value):
        return value
    for i, (_, flag) in enumerate(words[1:], start=1):
        if flag.startswith("v"):  # 小橘灯那边开不下去: 小橘灯
            head = "".join(word for word, _ in words[:i])
            return re.sub("(?:那儿|那里|这儿|这里|那边|这边)$", "", head) or head
    return value


_OLD_LEAD = re.compile(
    r"^(?:(?:the|my|our|a|an|his|her|their)\s+)?(?:(?:old|former|previous)\s+)?", re.IGNORECASE
)


# a clause giving the stored thing to someone else: "土豆那个是她同学的", "the potato one is
# her classmate's"
_ZH_GIVEN_AWAY = re.compile(rf"是(?:她|他|我|我们|你)?[^{_P}是]{{1,10}}的$")
_EN_GIVEN_AWAY = re.compile(
    r"\b(?:is|was|are|were|'s)\s+(?:actually\s+)?(?:my|his|her|their|our)\s+[\w -]{1,30}'s?$",
    re.IGNORECASE,
)


def without_given_away(text: str, stored: str) -> str:
    """A correction without its clause that gives the stored thing to someone else
    ("哦不对，土豆那个是她同学的，米娅自己定的是枫糖浆"): that one's owner is not whose
    fact the correction states."""
    shared = topic_words(stored)
    kept = []
    for clause in re.split(f"(?<=[{_P}])", unicodedata.normalize("NFKC", text)):
        bare = clause.strip().rstrip(_P + ".")
        given = _ZH_GIVEN_AWAY.search(bare) or _EN_GIVEN_AWAY.search(bare)
        if given and topic_words(bare[: given.start()]) & shared:
            continue
        kept.append(clause)
    return "".join(kept)


# what a correction says was an earlier value: "sage green was last year's", 绿色是去年的
_WAS_BEFORE = re.compile(
    r"(?:^|(?<=[-\u2013\u2014:;,.!]\s))(?P<old>[A-Za-z][\w'&-]*(?:\s+[\w'&-]+){0,3}?)\s+(?:was|were)\s+"
    r"(?:last\s+(?:year|season|term|time|month)(?:'s)?|(?:the|my|our)\s+old\s+one|from\s+before)\b"
    rf"|(?:^|(?<=[{_P}]))(?P<zh>[^{_P}]{{2,10}}?)是(?:去年|上次|之前|以前|原来|上一批)的",
    re.IGNORECASE,
)


# "that was last year's schedule": what was wrong, not a value
_NOT_BEFORE = frozenset("that it this those these mine ours which 那个 这个 那 这".split())  # noqa: SIM905


@lru_cache(maxsize=8192)
def old_values(text: str) -> tuple[str, ...]:
    """The values a change names as replaced: "instead of Dr. Rao" -> Dr. Rao, "from
    Tuesday to Thursday" -> Tuesday, "不再去何医生那里" -> 何医生."""
    body = unicodedata.normalize("NFKC", text)
    found = [m.group("old") for pattern in _EN_OLD for m in pattern.finditer(body)]
    found += [
        m.group("old")
        for pattern in (_EN_GONE, _EN_GONE_NAMED, _EN_PLACE_GONE)
        for m in pattern.finditer(body)
    ]
    if _CHANGE_VERB.search(body) or _ZH_CUE.search(body):
        found += [m.group("old") for m in _EN_FROM_TO.finditer(body)]
    found += [m.group("old") for pattern in _ZH_OLD for m in pattern.finditer(body)]
    found += _zh_left_behind(body)
    if correction_cue(body):  # "sorry, I mixed that up - sage green was last year's"
        found += [
            v
            for m in _WAS_BEFORE.finditer(body)
            if (v := m.group("old") or m.group("zh")).lower() not in _NOT_BEFORE
        ]
    cleaned = []
    for value in found:
        value = _OLD_LEAD.sub("", value.strip(" '\"")).strip()
        value = re.sub("['\u2019]s$", "", value)  # "Joy's gone on leave": Joy
        if not _TITLE_END.search(value):  # a full stop ends the sentence, not "Dr."
            value = value.rstrip(".:")
        value = _WHEN_TAIL.sub("", value)  # "Tomasz on Monday", "Marcus last week": Tomasz
        value = _zh_head(value)
        if re.match("^(?:我|他|她|你|咱)", value) and f"不是{value}的" in body:
            continue  # "这是他的，不是我爸的": whose it is, no value it replaced
        if re.match(r"(?:on|at|in|by|from|with|to|for|of)\s", value, re.IGNORECASE):
            continue  # "kept getting cancelled on their side": where, no value replaced
        # "Vogel 博士": a Latin name with a Chinese title is the name ("Dr. Vogel" stored)
        value = re.sub(
            r"^([A-Za-z][\w.'-]*(?:\s+[A-Za-z][\w.'-]*)*)\s*(?:博士|医生|律师|老师|先生|女士|教授|经理)$",
            r"\1",
            value,
        )
        if re.fullmatch("(?:我|他|她|你|咱)们?的?", value):
            continue  # "我的号排到下周了": whose, no value
        if re.fullmatch("(?:我|他|她|你|咱)们?(?:说|讲|觉得|想)", value):
            continue  # "他说不学了": who said so, no value
        value = re.sub(
            "(?:这|本|下|上)(?:学期|阵子|个月|礼拜|星期|周)$|(?:最近|今年|明年)$", "", value
        )
        if re.fullmatch("[一两这那同][个家位只种样回事]", value):
            continue  # "跟我们不是一个": not the same one, no value it replaced
        if value and len(value) <= 60 and value.lower() not in _STAND_INS:
            cleaned.append(value)  # "taken over from her": who she was, another row says
            # 热干面铺子开不下去: the stored row may say only 卖热干面的
            if (bare := _ZH_SHOP_TAIL.sub("", value)) != value and len(bare) >= 2:
                cleaned.append(bare)
    return tuple(dict.fromkeys(cleaned))


# what a Chinese name of a place of business may end in, said or not: 热干面铺子, 煎饼摊
_ZH_SHOP_TAIL = re.compile("(?:铺子|摊子|小店|小摊|铺|摊|馆子)$")


# he, she, they and their forms: another sentence says who
THIRD_PERSON = frozenset(
    "he she him her his hers they them their 他 她 他们 她们".split()  # noqa: SIM905
)
# words that stand in for a value another sentence named: no value themselves
_STAND_INS = THIRD_PERSON | {"it", "它", "i", "we"}


_EN_BACK = re.compile(
    r"\b(?:(?:went|gone|go(?:ing)?|switched|moved|changed|came|got|are|am|is|'m|'re|we're)\s+back"
    r"|\breturned|\breverted|\bis\s+back|\bare\s+back|'s\s+back|'re\s+back)\s+(?:to|in|at|on|with)\s+"
    r"(?:the\s+|my\s+|our\s+|using\s+)?"
    r"(?P<new>(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s*)?(?:[A-Z0-9][\w'.+-]*|[a-z][\w-]*\d[\w-]*)"
    r"(?:\s+[A-Z0-9][\w'.+-]*){0,3})",
)
_ZH_BACK_AGAIN = re.compile(rf"又把?(?P<new>[^{_P}把]{{2,6}}?)(?:请|叫|找|换|调|接)了?回来")
_ZH_BACK = re.compile(
    rf"(?:换回|改回|又回到|回到了?|又用回|用回|重新用)(?:了|到)?(?P<new>[^{_P}]{{2,10}}?)(?:了|[{_P}]|$)"
)


# a person who is back: "Priya's back from leave", "Declan came back last week"
_EN_PERSON_BACK = re.compile(
    r"(?:^|[.;,:!?]\s+|\bso\s+)(?P<new>[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?:\s+[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+)?)(?:'s|\s+is|\s+has\s+come"
    r"|\s+came|\s+got)\s+back\b(?!\s+(?:to|in|at|on|with|into)\b)"
)


@lru_cache(maxsize=8192)
def reverted_to(text: str) -> tuple[str, ...]:
    """The earlier value a change goes back to: "I went back to Neovim" -> Neovim,
    "Priya's back from leave" -> Priya, "又换回了王老师" -> 王老师."""
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    found = [m.group("new").rstrip(".:") for m in _EN_BACK.finditer(body)]
    found += [
        m.group("new")
        for m in _EN_PERSON_BACK.finditer(body)
        if m.group("new").lower() not in _NOT_NAMES
    ]
    found += [_zh_head(m.group("new")) for m in _ZH_BACK.finditer(body)]
    found += [m.group("new") for m in _ZH_BACK_AGAIN.finditer(body)]
    return tuple(dict.fromkeys(v.strip() for v in found if v.strip()))


# -- identifying tokens ----------------------------------------------------------------------

# a word, name or number; "1,020" is one number (a comma before three digits joins it)
_LATIN = re.compile(rf"[^\W_{HAN}]+(?:(?:[-'.:]|,(?=\d{{3}}\b))[^\W_{HAN}]+)*")
_NOT_NAMES = frozenset(
    """i we you he she they it my our the a an this that these those from for to in on at
    and but or so now then also still again instead dr mr mrs ms sorry actually well oh
    yes ok okay hey btw heads just update note fyi since because when after before if as
    while though although once until unless""".split()  # noqa: SIM905 - a word list reads better as text
)


@lru_cache(maxsize=8192)
def identifiers(text: str, *, loose: bool = False) -> frozenset[str]:
    """Words that pick one thing out, lower-cased: numbers and times, mixed tokens like
    "S24", and capitalised words (names). A capitalised word at a sentence start may be
    an ordinary word ("Deploys happen …"), so it counts only when a capitalised word
    follows ("Li Wei is …"), unless `loose`."""
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    found: set[str] = set()
    matches = list(_LATIN.finditer(body))
    for i, match in enumerate(matches):
        word = match.group().rstrip(".:").split("'")[0]
        if not word or re.fullmatch(rf"[{HAN}]+", word) or word.lower() in _NOT_NAMES:
            continue
        if any(ch.isdigit() for ch in word):
            found.add(_weekday(word.lower()))
            continue
        if not word[0].isupper():
            continue
        before = body[: match.start()].rstrip()
        # after a comma or a semicolon a capital is a name ("…; Dave never rang back")
        at_start = (not before or before[-1] in ".!?:。！？：") and not _TITLE_END.search(before)
        following = matches[i + 1].group() if i + 1 < len(matches) else ""
        if loose or not at_start or following[:1].isupper():
            found.add(_weekday(word.lower()))
    return frozenset(found)


_TITLE_END = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof|St)\.$")


def _weekday(word: str) -> str:
    return word[:-1] if word.endswith("s") and word[:-1] in WEEKDAYS else word


@lru_cache(maxsize=8192)
def mentions(text: str, value: str) -> bool:
    """Does `text` state `value`? Latin: every identifying (else every) word of the value
    is a word of the text; Chinese: the value's characters appear as written."""
    norm = unicodedata.normalize("NFKC", text).lower()
    written = unicodedata.normalize("NFKC", value).strip()  # names are told by their case
    value = written.lower()
    if not value:
        return False
    if has_han(value):
        core = re.sub(rf"[^{HAN}\w]", "", value)
        core = re.sub("^(?:每周|每天|每月|每)", "", core) if len(core) > 3 else core
        # 十五号 and 15号 are one day; 5号 is not in 15号
        said = zh_digits(re.sub(rf"[^{HAN}\w]", "", norm))
        return len(core) >= 2 and bool(re.search(rf"(?<!\d){re.escape(zh_digits(core))}", said))
    words = identifiers(written, loose=True) or {
        w.rstrip(".:") for w in _LATIN.findall(value) if w.rstrip(".:") not in _NOT_NAMES
    }
    text_words = {w.rstrip(".:") for w in _LATIN.findall(norm)}
    text_words |= {w[:-1] for w in text_words if w.endswith("s")}  # Tuesdays -> tuesday
    text_words |= {w.split("'")[0] for w in text_words}  # Luigi's -> luigi
    words = {w.split("'")[0] for w in words}
    # "not the 21st" names "October 21": a day told as an ordinal is its number
    text_words |= {_ORDINAL_DAY.sub(r"\1", w) for w in text_words}
    words = {_ORDINAL_DAY.sub(r"\1", w) for w in words}
    return bool(words) and words <= text_words


_ORDINAL_DAY = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)$")


def zh_digits(text: str) -> str:
    """`text` with each Chinese number below a hundred before a unit of days, months or
    hours in digits (十五号 -> 15号, 二十三日 -> 23日), so two ways of writing it compare."""
    return _ZH_COUNT.sub(lambda m: str(_zh_number(m.group("n"))) + m.group("unit"), text)


_ZH_DIGIT = {d: i for i, d in enumerate("零一二三四五六七八九")} | {"两": 2}
_ZH_COUNT = re.compile(
    r"(?<![零一二三四五六七八九十两])(?P<n>[零一二三四五六七八九十两]{1,3})(?P<unit>[号日月点])"
)


def _zh_number(word: str) -> int:
    """一 -> 1, 十五 -> 15, 二十三 -> 23, 三十 -> 30 (no hundreds)."""
    if "十" not in word:
        return int("".join(str(_ZH_DIGIT[c]) for c in word))
    tens, _, ones = word.partition("十")
    return (_ZH_DIGIT[tens] if tens else 1) * 10 + (_ZH_DIGIT[ones] if ones else 0)


# -- who a statement is about ------------------------------------------------------------------


def kin_forms(word: str) -> frozenset[str]:
    """Every word for the relative `word` names ("mum": mother, mom, 妈妈 …), itself
    included; any other word is only itself."""
    return KIN_OF.get(word.lower(), frozenset({word.lower()}))


def one_person(words: frozenset[str] | set[str]) -> frozenset[str]:
    """`words` with each word for a relative written as the first of its forms, so two
    statements' people compare as people, not as words."""
    return frozenset(min(kin_forms(w)) if w.lower() in KIN_OF else w for w in words)


_PARENTS = min(kin_forms("parents"))
_A_PARENT = frozenset({min(kin_forms("mother")), min(kin_forms("father"))})


def as_household(these: frozenset[str], other: frozenset[str]) -> frozenset[str]:
    """`these` (as `one_person` writes them) with a parent written as "parents" when
    `other` names the parents and not that parent: "video-call my dad" and "video-call
    my parents" are one call (heldout62, written blind: 我爸… / 跟爸妈视频)."""
    if _PARENTS not in other or other & _A_PARENT:
        return these
    return frozenset(_PARENTS if w in _A_PARENT else w for w in these)


# what precedes a relation word that says whose it is (or a sentence start)
_WHOSE = re.compile(
    r"(?:\b(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir|[Yy]our|[A-Z][\w-]*'s)\s+(?:[a-z]+\s+)?"
    r"|^\s*|[.!?;:]\s*)$"
)
_ONE_OF_MY = re.compile(r"\b[Oo]ne\s+of\s+(?:my|our)\s+(?:[a-z]+\s+)?([a-z]+?)s\b")
# what follows "X's" when it is "X is" / "X has": a participle, an adverb, a preposition
_CONTRACTED = re.compile(
    r"\s+(?:\w+ed|\w+ing|been|got|gone|not|off|away|back|out|in|on|at|into|a|an|the|very|still"
    r"|now|just|always|never|also|here|there|done|over|up|down)\b",
    re.IGNORECASE,
)
_NOUN_POSSESSIVE = re.compile(
    r"\b(?:the|our|their|that|this)\s+(?P<who>[a-z]+\s+(?:team|group|department|squad|company|school|club))'s\s+(?P<next>\w+)"
)
_POSSESSIVE = re.compile(r"\b([A-Z][\w-]+)'s\b")
_ZH_RELATION = re.compile("|".join(sorted(ZH_RELATION_WORDS, key=len, reverse=True)))
_ZH_NAME_OWNER = re.compile(rf"([{HAN}]{{2,4}}?)的")
# whom one who left went with or to help: 王婶跟她儿子去西安住了, 芳姐去滨江帮女儿带小孩了
_ZH_COMPANION = re.compile(
    rf"(?:跟|陪|帮|和)着?(?:她|他|人家|自己)?(?:家)?的?(?:{_ZH_RELATION.pattern})"
)


def without_companions(clause: str) -> str:
    """A Chinese clause without whom its subject went with or went to help: they are the
    departed person's people, not whose fact the clause changes."""
    return _ZH_COMPANION.sub("", clause)


@lru_cache(maxsize=8192)
def owners(text: str) -> frozenset[str]:
    """The people other than the speaker a statement is about: relation words ("my
    wife", 我女儿) and possessive names ("Priya's"). Empty: about the speaker or a thing."""
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    # a relation word counts when it says whose: "my sister", "our kids", "Tom's wife", or
    # when it starts the sentence ("Sister Anna …"); "the kids only watch Bluey" is a detail
    found = {
        m.group().lower()
        for m in re.finditer(r"[A-Za-z]+(?:-in-law)?", body)  # a mother-in-law is no mother
        if m.group().lower() in _RELATION_WORDS
        and (_WHOSE.search(body[: m.start()]) or re.match(r"'\s", body[m.end() :]))
    }  # "the kids' dentist appointment": theirs too
    # "Hannah, one of my flatmates, works …": one of them, a flatmate
    found |= {
        m.group(1).lower()
        for m in _ONE_OF_MY.finditer(body)
        if m.group(1).lower() in _RELATION_WORDS
    }
    found |= (
        {
            m.group(1).lower()
            for m in _POSSESSIVE.finditer(body)
            if not re.search(r"\b(?:St|Saint)\.?\s*$", body[: m.start()])  # St Mark's hall
            and not _CONTRACTED.match(body[m.end() :])  # "Priya's off to Chile" is "Priya is"
            and not re.match(r"\s+[A-Z]", body[m.end() :])  # "the Bishop's Arms" is a name
        }
        - _PRONOUNS
    )
    # "the design team's retro": a group's thing (not "the car's insured", a contraction)
    found |= {
        m.group("who").lower()
        for m in _NOUN_POSSESSIVE.finditer(body)
        if not re.match(
            r"(?:\w+ed|\w+ing|in|on|at|been|got|not|a|an|the|very|still|now)\b", m.group("next")
        )
    }
    for match in _ZH_RELATION.finditer(body):
        word = match.group()
        if word == "先生":
            continue
        # 阿姨 is a relative only as 我(的)阿姨; 刘阿姨, 家政阿姨 are how one addresses a woman
        if word in _ZH_ADDRESS and not re.search(r"我(?:的|家的?)?$", body[: match.start()]):
            continue
        before = body[: match.start()]
        if word == "太太" and before.endswith("老"):
            continue  # 老太太: the old lady (often the speaker's mother), no one's wife
        if re.search("(?:接|送|带|陪|哄|照顾|看望|探望)$", before):
            continue  # 王姐要接孙子: whom someone looks after, not whose the fact is
        if re.search("我(?:们)?(?:跟|和|与|同)$", before):
            continue  # 我跟老伴报名了…: the speaker's own, done together
        if (
            body[match.end() : match.end() + 1] == "家"
            and re.search(f"[{HAN}]{{2}}(?:搬|住)[去到在进回]?$", before)
            and not re.search("我(?:们)?(?:搬|住)[去到在进回]?$", before)
        ):
            continue  # 刘姐搬去女儿家住了: a place of 刘姐's, not whose the fact is
        found.add(word)
    return frozenset(found)


_ZH_ADDRESS = frozenset(
    ["阿姨", "妈", "爸", "哥", "姐", "弟", "妹", "叔叔", "伯伯", "大哥", "大姐", "婆婆", "公公"]
)
# "It's", "That's": no one's
_PRONOUNS = frozenset("it that there here he she what who where let everyone nobody".split())  # noqa: SIM905


_FIRST = re.compile(
    r"^(?:(?:so|and|also|now|update|btw)[\s,]+)?(?:I|I'm|I've|we|we're|we've|my|our)\b|^我"
    # a short place or time phrase before the speaker: "On the unit I'm the link nurse …",
    # "These days we …" (not "my" after it: "On Fridays my sister …" is the sister's)
    + r"|^(?:(?:on|at|in|since|from|after|for|over|these|nowadays|lately|recently|today"
    r"|this)\b[\w' -]{0,24}?,?\s+)(?:I|I'm|I've|we|we're|we've)\b"
    # after an interjection's short clause: "Well that didn't last, I got bumped over to …"
    r"|^(?:well|ok|okay|right|oh|ugh|yeah|anyway|honestly|sadly|luckily|annoyingly)\b"
    r"[^,;:.!?]{0,30},\s+(?:I|I'm|I've|we|we're|we've)\b",
    re.I,
)
_NAMED = re.compile(
    r"^(?P<name>[A-Z][a-z][\w-]*(?:\s+[A-Z][a-z][\w-]*)?)(?:'s\b|\s+(?:now\s+|still\s+|just\s+)?"
    # an adverb or a short phrase of where they work between name and verb: "Callum somehow
    # got himself elected …", "Kev on C platoon got paired up with …"
    r"(?:(?:somehow|finally|also|already|actually|apparently|recently|\w+ly)\s+"
    r"|(?:on|from|in|at)\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+)?\s+)?"
    r"(?:is|was|has|had|does|did|switched|moved|changed|started|stopped|quit|sold|bought|lives|works"
    r"|drives|uses|prefers|sees|goes|takes|reports|leads|runs|drinks|eats|likes|loves|cuts|teaches"
    r"|no\s+longer|replaced|swapped|took|got|became|left|joined)\b)"
)


@lru_cache(maxsize=8192)
def speaker(text: str) -> str | None:
    """Whom a statement is about as its grammatical subject: "me" for the speaker ("I
    switched …", "our vet …", 我…), a lower-cased name for a person ("Anna switched …",
    "Lucas is the lead …"), None when it does not say (a thing, a title)."""
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'").strip()
    if _FIRST.match(body):
        return "me"
    match = _NAMED.match(body)
    if match and match.group("name").split()[0].lower() not in _NOT_NAMES | _THINGS:
        return match.group("name").lower()
    return None


# capitalised sentence starts that are no person
_THINGS = frozenset(["the", "this", "that", "rent", "deploys", "home", "for", "from"])


# -- roles a person has -------------------------------------------------------------------------

# (role, English names, Chinese role, Chinese names): a role named any of these ways is one
# subject. Curated, small and general: the people one has one of at a time. A language
# keeps its own key (牙医 and dentist stay two subjects, as the stored rows always were).
_ROLE_TABLE: tuple[tuple[str, str, str, str], ...] = (
    (
        "hairdresser",
        r"hairdresser|hair\s*stylist|stylist|barber|hair\s+salon"
        r"|(?:person|guy|woman|man|lady|one)\s+who\s+(?:cuts|does)\s+my\s+hair"
        r"|(?:cuts|does)\s+my\s+hair|(?:get|have|got)\s+my\s+hair\s+(?:cut|done)",
        "理发师",
        r"理发师|发型师|理发|剪头发|剪发|做头发",
    ),
    ("dentist", r"dentist|dental\s+surgeon", "牙医", r"牙医|牙科医生|看牙"),
    (
        "doctor",
        r"family\s+doctor|family\s+physician|general\s+practitioner|\bGP\b|primary\s+care"
        r"|physician|doctor|\bsee\s+Dr\b",
        "医生",
        r"家庭医生|全科医生|主治医生|医生",
    ),
    (
        "manager",
        r"line\s+manager|manager|boss|supervisor|reports?\s+to|reporting\s+to",
        "领导",
        r"领导|上司|老板|经理|主管|汇报",
    ),
    ("landlord", r"landlord|landlady|rent\s+from", "房东", r"房东"),
    ("mechanic", r"mechanic|(?:fixes|services|repairs)\s+my\s+car", "修车师傅", r"修车师傅|修车"),
    ("accountant", r"accountant|tax\s+advis[eo]r|does\s+my\s+taxes", "会计", r"会计|报税"),
    ("therapist", r"\b(?:therapist|counsell?or|psychologist)", "心理医生", r"心理医生|咨询师"),
    ("trainer", r"personal\s+trainer|fitness\s+coach", "健身教练", r"私教|健身教练"),
    ("vet", r"\bvet\b|veterinarian", "兽医", r"兽医"),
    ("lawyer", r"lawyer|attorney|solicitor", "律师", r"律师"),
    ("babysitter", r"babysitter|nanny", "保姆", r"保姆"),
    (
        "project lead",
        r"project\s+lead|project\s+manager|tech\s+lead|team\s+lead",
        "负责人",
        r"负责人",
    ),
)
_ROLES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    pair
    for en, en_names, zh, zh_names in _ROLE_TABLE
    for pair in ((en, re.compile(en_names, re.IGNORECASE)), (zh, re.compile(zh_names)))
)


@lru_cache(maxsize=8192)
def role_of(phrase: str) -> str | None:
    """The role a phrase names ("the person who cuts my hair" -> hairdresser, 看牙 ->
    牙医), or None. Earlier roles win (a dentist is no general doctor)."""
    body = unicodedata.normalize("NFKC", phrase)
    for role, pattern in _ROLES:
        if pattern.search(body):
            return role
    return None


# -- subjects beyond "my X is Y" ----------------------------------------------------------------

_NAME = r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}"
_NOUNS = r"[a-z][\w'-]*(?:\s+[a-z0-9][\w'-]*){0,4}"
_EN_MOVE = (
    r"(?:has\s+been\s+|was\s+|is\s+|got\s+)?(?:moved|rescheduled|postponed|pushed\s+(?:back|out)"
    r"|brought\s+forward|shifted|changed|switched)\s+(?:again\s+)?(?:to|from|until)"
)
_EN_SUBJECT_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # "Ana (now) reports to Li Wei" -> ana manager; "I report to Li" -> manager
    (re.compile(rf"^(?P<who>{_NAME})\s+(?:now\s+|still\s+)?reports\s+to\b"), "{who} manager"),
    (re.compile(r"^I\s+(?:now\s+|still\s+)?report\s+to\b", re.I), "manager"),
    # "Sofia leads the Orion project", "Sofia took over from Lucas as project lead for Orion"
    (
        re.compile(
            rf"^{_NAME}\s+(?:now\s+|still\s+)?(?:leads|runs|heads)\s+(?:the\s+)?(?P<thing>{_NAME})"
            r"(?:\s+(?:project|team))?\b"
        ),
        "{thing} project lead",
    ),
    (
        re.compile(
            rf"^{_NAME}\s+(?:is|was|will\s+be|took\s+over|takes\s+over|has\s+taken\s+over)\b.*?"
            rf"\b(?:the\s+)?(?P<role>[a-z]+\s+lead|lead|[a-z]+\s+manager)\s+(?:for|of|on)\s+"
            rf"(?:the\s+)?(?P<thing>{_NAME})"
        ),
        "{thing} {role}",
    ),
    (
        re.compile(
            rf"^(?i:the\s+)?(?P<role>[a-z]+\s+lead|lead|[a-z]+\s+manager)\s+(?:for|of|on)\s+"
            rf"(?:the\s+)?(?P<thing>{_NAME})\s+(?:is|was)\b"
        ),
        "{thing} {role}",
    ),
    # "Li Wei is Ana's manager"
    (
        re.compile(rf"^{_NAME}\s+(?:is|was)\s+(?:now\s+)?(?P<who>{_NAME})'s\s+(?P<what>{_NOUNS})$"),
        "{who} {what}",
    ),
    # "Ms. Hall teaches my daughter piano" -> daughter piano teacher
    (
        re.compile(
            rf"^{_NAME}\.?(?:\s+{_NAME})?\s+(?:now\s+|still\s+)?teaches\s+(?:my|our)\s+"
            r"(?P<who>[a-z]+)\s+(?P<what>[a-z]+)\b"
        ),
        "{who} {what} teacher",
    ),
    # "from next week the standup is at 9:45"
    (
        re.compile(
            rf"^(?:from|starting|as\s+of)\s+[\w\s]+?\s+the\s+(?P<subject>{_NOUNS}?)\s+(?:is|are|will\s+be)\b",
            re.I,
        ),
        "{subject}",
    ),
    # "the standup moved to 10:30", "the offsite was rescheduled to 19 March"
    (re.compile(rf"^(?:the|our|my)\s+(?P<subject>{_NOUNS}?)\s+{_EN_MOVE}\b", re.I), "{subject}"),
    # "rent is now due on the 5th", "deploys happen on Thursdays": a lower-case noun
    # phrase at the start, then a verb
    (
        re.compile(
            rf"^(?:the\s+|our\s+|my\s+)?(?P<subject>{_NOUNS}?)\s+(?:is|are)\s+(?:now\s+|still\s+)?"
            r"(?:due|held|scheduled|set|planned|on|at|every)\b",
            re.I,
        ),
        "{subject}",
    ),
)
# What a tool or choice is for: "I use Obsidian for notes", "for dashboards we are moving
# from Grafana to Kibana", "Kibana is what we use for dashboards", "我写代码用 Neovim". The
# purpose is the subject ("tool for notes"; with "as the cache", "cache for …"): a new
# value for the same purpose replaces the old one, as any subject's does.
_USE_VERBS = (
    r"(?:(?:decided|agreed|chose|want|plan)\s+to\s+use|use|uses|am\s+using|are\s+using"
    r"|'m\s+using|'re\s+using|picked|chose|selected"
    r"|went\s+with|settled\s+on|switched\s+to|moved\s+to|rely\s+on|now\s+use)"
)
_PURPOSE = r"(?P<purpose>[A-Za-z][\w-]*(?:\s+[A-Za-z0-9][\w-]*){0,5}?)"
_ROLE_AS = (
    r"(?:\s+as\s+(?:the\s+|a\s+|an\s+|our\s+|my\s+)?(?P<role>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}))?"
)
_FOR = r"\s+for\s+(?:the\s+|our\s+|my\s+|all\s+)?"
_PURPOSE_SHAPES: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"^(?:I|we)\s+(?:now\s+|currently\s+|still\s+|mostly\s+|mainly\s+|have\s+|'ve\s+)*"
        rf"{_USE_VERBS}\s+(?P<value>.+?){_ROLE_AS}{_FOR}{_PURPOSE}(?:\s+now)?$",
        re.I,
    ),
    re.compile(
        rf"^for\s+(?:the\s+|our\s+|my\s+)?{_PURPOSE},?\s+(?:I|we)(?:'re|'ve|\s+are|\s+have|\s+am)?"
        r"\s+(?:now\s+)?(?:use|using|picked|chose|settled\s+on|went\s+with|switched\s+to"
        r"|(?:moving|moved|switching|switched)\s+from\s+.+?\s+to|moved\s+to|going\s+with)"
        r"\s+(?P<value>.+)$",
        re.I,
    ),
    re.compile(rf"^(?P<value>.+?)\s+is\s+what\s+(?:I|we)\s+(?:now\s+)?use{_FOR}{_PURPOSE}$", re.I),
    re.compile(rf"^(?:I|we)\s+no\s+longer\s+use\s+(?P<value>.+?){_FOR}{_PURPOSE}$", re.I),
)
_LATIN_VALUE = r"(?P<value>[A-Za-z][A-Za-z0-9.+#-]*(?:\s+[A-Za-z0-9][A-Za-z0-9.+#-]*){0,3})"
_ZH_PURPOSE_SHAPES: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"^我们?(?:现在|平时|一般|目前|已经|都)*(?:改用|换用|用|使用)\s*{_LATIN_VALUE}\s*(?:来)?"
        rf"(?P<purpose>[{HAN}]{{2,6}})$"
    ),
    re.compile(
        rf"^我们?(?:现在|平时|一般|目前|都)*(?P<purpose>[{HAN}]{{2,6}}?)(?:都|也|现在)*"
        rf"(?:改用|用的是|用|使用)\s*{_LATIN_VALUE}$"
    ),
)


def purpose_of(clause: str) -> str | None:
    """The purpose subject of a use/choice statement ("tool for notes", 用于写代码)."""
    for pattern in _PURPOSE_SHAPES:
        match = pattern.match(clause)
        if match is not None:
            purpose = match.group("purpose").lower()
            role = (match.groupdict().get("role") or "tool").lower()
            if purpose.split()[0] not in _NOT_PURPOSES and purpose not in _BROAD_PURPOSES:
                return f"{role} for {purpose}"
    for pattern in _ZH_PURPOSE_SHAPES:
        match = pattern.match(clause)
        if match is not None and match.group("purpose") not in _BROAD_PURPOSES:
            return f"用于{match.group('purpose')}"
    return None


# "for now", "for a while": not what something is for
_NOT_PURPOSES = frozenset(["now", "a", "the", "years", "months", "weeks", "ages", "a while", "me"])
# purposes too broad to hold one tool: one uses a laptop and a chat app "for work"
_BROAD_PURPOSES = frozenset(
    """work home school fun travel travelling commuting everything business personal
    private leisure study studying 工作 上班 办公 家里 在家 学习 平时 生活 娱乐""".split()  # noqa: SIM905
)


_ZH_SUBJECT_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # 我的理发师换人了，现在是小杨
    (re.compile(rf"^(?:我的|我们的)?(?P<subject>[^{_P}]{{1,12}}?)换人了"), "{subject}"),
    # 周会改成了每周二, 发布日从周三改为周五, 女儿的数学老师换成了孙老师
    (
        re.compile(
            rf"^(?:我的|我们的)?(?P<subject>[^{_P}从]{{1,12}}?)(?:现在|已经|又|以后|今后|从此|也|都)*(?:从[^{_P}]+?)?"
            r"(?:改成了|改成|改为|改到了|改到|换成了|换成|调整为|调整到|推迟到|提前到|挪到|变成了|变成)"
        ),
        "{subject}",
    ),
    # 周会现在是…, 周会定在…
    (
        re.compile(
            rf"^(?:我的|我们的)?(?P<subject>[^{_P}]{{1,8}}?)(?:现在|目前|如今)?(?:是|定在|定为|在)(?=[^{_P}]*\d|[^{_P}]*[周星礼上下中晚早])"
        ),
        "{subject}",
    ),
)


@lru_cache(maxsize=8192)
def subject_of(text: str) -> str | None:
    """A subject for statements `memory.extraction.slot_of` has no shape for: who one
    reports to, who leads what, what moved where ("the standup moved to 10:30"), 换人了,
    改成了, and a role of the speaker's named anywhere ("Lea does my hair now")."""
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'").strip()
    body = re.sub(r"[\s。.!！]+$", "", body)
    body = re.sub(r"^(?:so|and|also|update|btw|ok(?:ay)?)[\s,:]+", "", body, flags=re.I)
    for clause in [body, *re.split(r"[;；:：]\s*", body)]:
        clause = clause.strip()
        purpose = purpose_of(clause)
        if purpose is not None:
            return purpose
        for pattern, template in (*_EN_SUBJECT_SHAPES, *_ZH_SUBJECT_SHAPES):
            match = pattern.match(clause)
            if match is None:
                continue
            parts = {k: (v or "").strip() for k, v in match.groupdict().items()}
            subject = template.format(**parts).strip().lower()
            subject = _ZH_SUBJECT_LEAD.sub("", subject)
            if (
                len(subject) >= 2
                and len(subject) <= 60
                and subject not in _NOT_SUBJECTS
                and not _ZH_NOT_SUBJECT.fullmatch(subject)
            ):
                return subject
    return _speaker_role(body)


_ZH_SUBJECT_LEAD = re.compile(r"^(?:我们的|我的|我们|我)?(?:现在|目前|如今|最近|已经|又)*")
# what is left when a shape took a time word or a verb for a subject
_ZH_NOT_SUBJECT = re.compile(r"[现在目前如今已经又都也就还再刚每天周月年]+|.*[在去用坐骑]")
_NOT_SUBJECTS = frozenset(
    {"it", "this", "that", "there", "he", "she", "they", "we", "i", "我", "我们"}
)
_SPEAKER_ROLE = re.compile(
    r"\bmy\s+(?:new\s+|current\s+|regular\s+|usual\s+)?(?:family\s+)?(?P<en>[a-z]+(?:\s+[a-z]+)?)\b"
    r"|(?:cuts|does)\s+my\s+hair|(?:get|have|got)\s+my\s+hair\s+(?:cut|done)|\bI\s+(?:now\s+)?see\s+Dr\b"
    r"|给我(?:理发|剪头发|剪发|看牙|看病)|我(?:现在)?(?:去|找)(?:[^{P}]{1,6})(?:理发|剪头发|看牙)".replace(
        "{P}", _P
    ),
    re.IGNORECASE,
)


def _speaker_role(body: str) -> str | None:
    """The speaker's own role-holder a statement names (not someone else's: "Priya's
    hairdresser" is hers). None when the statement is about another person."""
    if owners(body):
        return None
    for match in _SPEAKER_ROLE.finditer(body):
        role = role_of(match.group())
        if role is not None:
            # "my second supervisor" is another person than "my main supervisor"
            rank = _RANKED.match(match.group("en") or "")
            return f"{rank.group(1).lower()} {role}" if rank else role
    return None


# a qualifier that makes one more holder of a role, not the role itself
_RANKED = re.compile(
    r"(second|secondary|co|assistant|deputy|vice|associate|backup|junior|senior|interim|acting)"
    r"[\s-]",
    re.IGNORECASE,
)


# generic qualifiers that do not make another subject: "daily standup" is the standup
_GENERIC = frozenset(
    """daily weekly monthly yearly regular usual normal main current team our my the new next
    upcoming
    morning family primary whole 每天 每日 每周 每月 日常 例行 团队 我们 公司 现在 平时
    的""".split()  # noqa: SIM905
)


@lru_cache(maxsize=8192)
def canonical_subject(subject: str | None) -> str | None:
    """One spelling per subject: a role phrase becomes its role ("person who cuts my
    hair" -> hairdresser; "ana manager" keeps its owner), generic qualifiers go
    ("daily standup" -> standup, 每周的周会 -> 周会)."""
    if not subject:
        return None
    body = unicodedata.normalize("NFKC", subject).lower().replace("'s ", " ").replace("-", "")
    words = [w for w in body.split() if w != "s"]  # "daughter s piano teacher" (normalised)
    body = " ".join(words)
    if not words:
        return None
    role = role_of(body)
    if role is not None:
        owner = [w for w in words if not _role_part(w) and w not in _PREPOSITIONS]
        if has_han(body):  # 我太太 医生: the owner is what is left of the words
            owner = [re.sub("^我的?", "", w) for w in owner]
        return " ".join([*(w for w in owner if w), role])
    kept = [w for w in words if w not in _GENERIC] or words
    if len(kept) >= 3 and kept[-2] in _QUALIFYING and kept[-1].isascii():
        kept = [kept[-1], *kept[:-2]]  # "internet provider at home" = "home internet provider"
    joined = " ".join(kept)
    if has_han(joined):  # 我女儿 数学老师 = 女儿的数学老师
        joined = re.sub(r"^我们?", "", re.sub(r"[\s的]", "", joined)) or joined
        for generic in _ZH_GENERIC:
            if joined.startswith(generic) and len(joined) > len(generic) + 1:
                joined = joined[len(generic) :]
                break
    return joined or None


_PREPOSITIONS = frozenset(["for", "of", "on", "at", "with", "in", "to"])
_QUALIFYING = frozenset(["for", "of", "at", "in"])


_ZH_GENERIC = ("每天", "每日", "每周", "每月", "日常", "例行", "团队", "公司")
_ROLE_NOISE = frozenset(
    """person guy woman man lady one who cuts does my hair get have got cut done see dr project
    lead line family reports report to""".split()  # noqa: SIM905
)


def _role_part(word: str) -> bool:
    return word in _ROLE_NOISE or word in _GENERIC or role_of(word) is not None


# -- what a model is asked, and what its answer must be ----------------------------------------


@dataclass(frozen=True)
class Known:
    """An active conclusion offered to the judge."""

    id: str
    text: str
    kind: str
    since: str


class Judgement(BaseModel):
    """The model's decision about a new conclusion (structured output)."""

    decision: Literal["new", "restatement", "update", "unrelated"] = Field(
        description="new: nothing stored is about it; restatement: the same as one stored; "
        "update: a new value that replaces one stored; unrelated: stored ones are about "
        "other things."
    )
    id: str | None = Field(
        None, description="The id of the stored conclusion restated or replaced."
    )
    reason: str = Field("", max_length=400)

    @field_validator("id", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value in ("", "null", "none") else value


# the response_format a server is asked for: plain types only (grammar-based servers)
JUDGE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": list(ACTIONS)},
        "id": {"type": "string", "description": "the id restated or replaced, or empty"},
        "reason": {"type": "string"},
    },
    "required": ["decision", "id", "reason"],
}


JUDGE_PROMPT = """\
You keep a user's long-term memory consistent. A new conclusion arrives; below are the
stored conclusions most likely about the same thing, each with its id. Decide:
- "update": the new one gives a new value for the same thing as one stored (it replaces it),
- "restatement": it says the same as one stored, in other words,
- "unrelated": the stored ones are about other things or other people,
- "new": nothing is stored about it.
A wrong merge loses a fact: if unsure, say "unrelated". Reply with JSON only:
{"decision": "new|restatement|update|unrelated", "id": "the id, or null",
 "reason": "one short sentence"}"""


def judge_request(text: str, candidates: Sequence[Known]) -> str:
    lines = [f"New conclusion: {text}", "", "Stored conclusions:"]
    lines += [f"- id {c.id} ({c.kind}, since {c.since}): {c.text}" for c in candidates]
    return "\n".join(lines)


def parse_judgement(reply: str, candidates: Sequence[Known]) -> Judgement:
    """The model's reply as a validated decision; ValueError when it is no JSON object,
    does not validate, or names an id that was not offered (or none for a merge)."""
    body = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the decision is not JSON: {exc}") from exc
    try:
        judgement = Judgement.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"the decision did not validate: {exc.errors()[0]['msg']}") from exc
    offered = {c.id for c in candidates}
    if judgement.decision in ("update", "restatement"):
        if judgement.id not in offered:
            raise ValueError(f"the decision names {judgement.id!r}, not one of the candidates")
    elif judgement.id is not None and judgement.id not in offered:
        raise ValueError(f"the decision names {judgement.id!r}, not one of the candidates")
    return judgement


# -- comparing a new statement with one stored ---------------------------------------------------

_ZH_TAIL = re.compile(
    rf"(?:是|为|成了|成|到|用|在|找|看)(?P<value>[^{_P}是为成到用在]{{2,12}}?)(?:了|上学|上班|写代码|看牙)?[{_P}]*$"
)


def same_value(old: str, new: str, subject: str | None) -> bool | None:
    """For two statements about one subject: does the new one restate the old (True) or
    give another value (False)? None: no evidence either way here (the caller's word
    comparison decides). A value the new text says was replaced is a change; otherwise
    the new text's identifying words (names, numbers) must all be in the old one."""
    replaced = old_values(new)
    if any(mentions(old, value) for value in replaced):
        return False
    named = set().union(*(identifiers(v, loose=True) for v in replaced)) if replaced else set()
    about = set(unicodedata.normalize("NFKC", subject or "").lower().split())
    fresh = {w for w in identifiers(new) - named - about if role_of(w) is None}
    if fresh:
        if fresh <= identifiers(old, loose=True):
            return True
        if _TAKES_OVER.search(new):
            return False  # "Dr. Vos took a job in Ghent, and Dr. Peeters has taken over …"
        stated = {w for w in identifiers(old) if role_of(w) is None} - about
        # the new text keeps every name and number of the old one and adds detail
        return bool(stated) and not replaced and stated <= identifiers(new, loose=True)
    # "Kofi cuts my hair": a capitalised first word may be a name (or an ordinary word:
    # then it says nothing either way)
    first = {
        w
        for w in identifiers(new, loose=True) - named - about
        if role_of(w) is None and not _EN_CUE.fullmatch(w)
    }
    if first and first <= identifiers(old, loose=True):
        return True
    slot = slot_of(new)
    tail = _ZH_TAIL.search(unicodedata.normalize("NFKC", new))
    value = slot.value if slot is not None else (tail.group("value") if tail else "")
    if value and has_han(value):
        if any(mentions(value, v) for v in old_values(old)):
            return False
        return mentions(old, value)
    return None


# someone new holds what the stored one held: a new name beside it is its new value
_TAKES_OVER = re.compile(
    r"\b(?:took|taken|takes|taking)\s+over\b|\bstepped\s+in\s+for\b|接手|接替|顶替", re.I
)


_NOT_CONTENT = frozenset(
    """the and for with from that this have has had are was were been being will would now
    still again instead these days new our your their his her its who what when where which
    moved switched changed replaced swapped rescheduled longer any more anymore use used using
    got get gets getting gotten is it's isn't too but not so just
    现在 如今 目前 已经 改成 换成 改为 不再""".split()  # noqa: SIM905
)


@lru_cache(maxsize=8192)
def topic_words(text: str) -> frozenset[str]:
    """Content words (and Chinese bigrams) that say what a statement is about."""
    body = unicodedata.normalize("NFKC", text).lower()
    words = set(re.findall(r"[a-z][a-z0-9'-]+", body))
    for run in re.findall(rf"[{HAN}]+", body):
        words.update(
            pair
            for i in range(len(run) - 1)
            if not _YUE_PARTICLES.intersection(pair := run[i : i + 2])
        )
    return frozenset(
        {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words} - _NOT_CONTENT
    )


# Cantonese particles and pronouns (the, -ed, at, that, some, they, not…): a pair of
# characters holding one names no topic ("嗰度啲瓷砖" / "话嗰度啲英国阿伯" share 度啲)
_YUE_PARTICLES = frozenset("嘅咗喺嗰啲哋冇唔咁嘢噉喇嘞佢嚟")


_ASKED_TEACHER = re.compile(
    r"^who\s+(?:teaches|is\s+teaching|tutors)\s+(?:my|our)\s+(?P<who>[a-z]+)\s+(?P<what>[a-z]+)\b",
    re.I,
)
_ASKED_MANAGER = re.compile(rf"^who\s+does\s+(?P<who>{_NAME})\s+report\s+to\b")
_ASKED_LEAD = re.compile(
    rf"^who\s+(?:leads|runs|heads|is\s+leading)\s+(?:the\s+)?(?P<thing>{_NAME})", re.I
)


def asked_role(question: str) -> str | None:
    """The subject a question names by a role or relation, for the questions
    `memory.extraction.asked_subject` has no shape for: "who cuts my hair?"
    (hairdresser), "谁给我理发？", "who does Ben report to?", "who teaches my son piano?"."""
    body = unicodedata.normalize("NFKC", question).strip()
    for pattern, template in (
        (_ASKED_TEACHER, "{who} {what} teacher"),
        (_ASKED_MANAGER, "{who} manager"),
        (_ASKED_LEAD, "{thing} project lead"),
    ):
        match = pattern.match(body)
        if match is not None:
            parts = {k: v.lower() for k, v in match.groupdict().items()}
            return canonical_subject(template.format(**parts))
    return _speaker_role(body)


# -- restating the new value of a change ---------------------------------------------------------

_STOP_ZH = re.compile(r"[了的呢吧啊也都还就]")


def restates_change(old: str, new: str) -> bool:
    """Does `new` (no subject of its own) repeat the value a stored change set ("We
    switched deploys from Tuesday to Thursday" / "Deploys happen on Thursdays";
    "I replaced my Pixel 7 with an iPhone 15" / "I have an iPhone 15 now")? Every name
    and number of the new text is a word of the old one, and what the old text has
    beyond the new is only the value it says was replaced (so "Ben reports to Mark" does
    not restate "Ana reports to Mark")."""
    replaced = old_values(old)
    if not replaced:
        return False
    gone = set().union(*(identifiers(v, loose=True) for v in replaced))
    old_words = _words(old)
    fresh = identifiers(new)
    if fresh:
        new_words = _words(new)
        extra = identifiers(old, loose=True) - new_words - gone
        return fresh <= old_words and not extra and not fresh & gone
    # Chinese: the new text's bigrams all in the old text, none from the replaced value
    a, b = _bigrams(without_cues(old)), _bigrams(without_cues(new))
    replaced_bigrams = set().union(*(_bigrams(v) for v in replaced))
    return len(b) >= 2 and b <= a and not b & replaced_bigrams


def _words(text: str) -> set[str]:
    words = {w.rstrip(".:").lower() for w in _LATIN.findall(unicodedata.normalize("NFKC", text))}
    return words | {_weekday(w) for w in words} | {w[:-1] for w in words if w.endswith("s")}


def _bigrams(text: str) -> set[str]:
    found: set[str] = set()
    for run in re.findall(rf"[{HAN}]+", _STOP_ZH.sub(" ", unicodedata.normalize("NFKC", text))):
        found.update(run[i : i + 2] for i in range(len(run) - 1))
    return found


_ZH_CHANGED = re.compile(
    r"(?:转学|搬家|换工作|跳槽|换人|换了[^\s，,]{0,4}|改了[^\s，,]{0,4}|变了|调岗|转岗|转行)了?$"
)


def two_clause_change(text: str) -> str | None:
    """A change told in two clauses, who changed and then the new value ("我侄女转学了，
    现在在第二中学上学"), as one statement of the new value ("我侄女在第二中学上学"), so
    it can be compared with the stored statement frame by frame; None otherwise."""
    body = unicodedata.normalize("NFKC", text).strip().rstrip("。.!！")
    clauses = [c for c in re.split(r"[，,；;]", body) if c.strip()]
    if len(clauses) < 2 or not has_han(body):
        return None
    who = _ZH_CHANGED.sub("", clauses[0].strip())
    if who == clauses[0].strip() or not who:
        return None
    return who + without_cues(clauses[-1].strip()).replace(" ", "")


_NAME_RUN = re.compile(
    r"(?:[A-Z][\w+&-]*)(?:\s+(?:(?:&|and|of|de|van|von|der|la|le|du)\s+)?[A-Z0-9][\w+&-]*)*"
)


def _name_runs(text: str) -> list[frozenset[str]]:
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    runs = []
    for match in _NAME_RUN.finditer(body):
        before = body[: match.start()].rstrip()
        if " " not in match.group() and (not before or before[-1] in ".!?;:\u2014\u2013-"):
            continue  # one capitalised word opening a sentence: "Pull requests …", "Sorry, …"
        words = frozenset(_plain(w) for w in match.group().split() if w.lower() not in _NOT_NAMES)
        if words:
            runs.append(words)
    return runs


_DATE_WORDS = MONTHS | WEEKDAYS


def clause_of(text: str, value: str) -> str:
    """The clause of `text` that names `value` (the people in "I've dropped Priya for
    Tom — he also does my brother's books" are in the first clause), or the whole text."""
    parts = re.split(
        r"\s[\u2014\u2013-]\s|[;；。!?！？，]|,\s*(?:because|since|as|and|but|so)\b", text
    )
    for clause in parts:
        if value.lower() in clause.lower():
            return clause
    return text


def _plain(word: str) -> str:
    """A name word compared loosely: lower case, no clitic, no plural ("Thursdays")."""
    word = word.lower().split("'")[0]
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def other_context(old: str, new: str, replaced: str) -> bool:
    """Do the two statements name different contexts besides the value that changed?
    "Kafka is our message queue for Orion" and "For Vega we switched from Kafka to NATS"
    are about two projects: the old row keeps a name (Orion) the new one lacks while the
    new one names a context of its own (Vega) beside its value. Extra detail on one side
    only ("Dr. Lindqvist at the Harbour Clinic" / "… Dr. Moreau instead of Dr.
    Lindqvist") is no other context."""
    gone = {_plain(w) for w in identifiers(replaced, loose=True)}
    new_words = {w for run in _name_runs(new) for w in run}
    old_left = [run for run in _name_runs(old) if not run & gone and not run <= _DATE_WORDS]
    # the names beside the change in its own clause ("I've dropped Priya for Tom — he
    # also does the books for a bakery in Harrogate": Harrogate is no context)
    clause = clause_of(new, replaced) if replaced else new
    new_left = [run for run in _name_runs(clause) if not run & gone and not run <= _DATE_WORDS]
    missing = [run for run in old_left if not run & new_words]
    return bool(missing) and len(new_left) >= 2
