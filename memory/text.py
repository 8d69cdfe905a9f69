"""Search terms for the SQLite full-text index, in English and Chinese (SPEC M6).

SQLite's default tokenizer keeps a run of Chinese characters as one token, so "牙医"
never matches "我的牙医是李医生". Chinese runs are indexed as overlapping character
bigrams plus single characters; a query uses bigrams (single characters only for a
one-character query). Latin words are lower-cased and stemmed; stop words are kept in
the index (a query may need them) but dropped from queries.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import lru_cache

import snowballstemmer

# Han character ranges, for regular-expression classes
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# a Latin run stops at a Chinese character: "18315号发票" is "18315" and then 号发票
_LATIN = rf"[^\W_{HAN}]+"
_RUNS = re.compile(rf"[{HAN}]+|{_LATIN}(?:['\u2019]{_LATIN})*", re.UNICODE)
# English clitics dropped from a word: "Melanie's" is "melanie", "don't" is "don"
_CLITICS = frozenset({"s", "t", "re", "ve", "ll", "d", "m"})
_CJK = re.compile(f"[{HAN}]")


def has_han(text: str) -> bool:
    """Does the text hold a Chinese character? (Which rules, tokens and tags apply.)"""
    return _CJK.search(text) is not None


STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    did does said say says tell told know
    aren couldn didn doesn don hadn hasn haven isn shouldn wasn weren wouldn
    的 了 是 在 我 你 他 她 它 们 吗 呢 吧 啊 和 与 也 就
    都 还 又 这 那 什么 怎么 哪 个 一个 有 没有 关于
    """.split()  # noqa: SIM905 - a word list reads better as text
)
# Chinese function words: a query bigram that contains one ("的数", "是哪") spans a word
# boundary and matches thousands of unrelated rows in a large store (bench/memory_scale.py)
FUNCTION_CHARACTERS = frozenset("的了是在和与也就都还又吗呢吧啊个把被给")


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English stem the index stores for a word (cached: words repeat a lot)."""
    return _stemmer().stemWord(word)


# British spellings the English stemmer keeps apart from the American ones: practise /
# practice, licence / license, centre / center, colour / color, organise / organize
_BRITISH = (
    (re.compile(r"^practis"), "practic"),
    (re.compile(r"^licenc"), "licens"),
    (re.compile(r"(?<=[a-z]{3})is(?=(?:e[sd]?|ing|ation)$)"), "iz"),
    (re.compile(r"(?<=[a-z]{3})tre(?=s?$)"), "ter"),
    (
        re.compile(
            r"^(col|fav|neighb|behavi|harb|lab|flav|hum|hon|rum)our(?=s?$|ed$|ing$|ite|able)"
        ),
        r"\1or",
    ),
)


@lru_cache(maxsize=65536)
def us_stem(word: str) -> str:
    """`stem` of the word as American English spells it, so that a statement's "practise"
    and another's "practice" are one word: memory.sameness reads every English word
    through it, topic words and the heads and values compared with them alike (the search
    index keeps `stem`, so its stored terms are unchanged)."""
    for pattern, spelled in _BRITISH:
        word = pattern.sub(spelled, word)
    return stem(word)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _words(run: str) -> list[str]:
    """A Latin run split at apostrophes, without a trailing clitic ("'s", "n't" as "'t")."""
    parts = run.replace("\u2019", "'").split("'")
    if len(parts) > 1 and parts[-1] in _CLITICS:
        parts.pop()
    return parts


def index_terms(text: str) -> list[str]:
    """Terms stored for a document."""
    terms: list[str] = []
    for run in _RUNS.findall(_normalise(text)):
        if _CJK.match(run):
            terms.extend(run)
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            terms.extend(stem(word) for word in _words(run))
    return terms


def _query_bigrams(run: str) -> list[str]:
    """A Chinese run's bigrams, without those that span a function word (unless none is
    left): in "项目的数据库" the bigram "的数" is noise, "数据" and "据库" carry the query."""
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    content = [pair for pair in bigrams if not FUNCTION_CHARACTERS.intersection(pair)]
    return content or bigrams


# a hyphenated Latin compound: "co-working", "eu-west-1", "in-law"
_COMPOUND = re.compile(rf"{_LATIN}(?:-{_LATIN})+(?:['\u2019]{_LATIN})?", re.UNICODE)
# a piece of a compound this short is no query term of its own: the "co" of "co-working"
# matched "Bramwell & Co." (a rare token, so BM25 put that row first)
_SHORT_PIECE = 2


def _compound_terms(compound: str) -> list[str]:
    """A compound's pieces as terms; with a short piece, that piece only inside one FTS5
    phrase of all the pieces (the index holds them side by side: "co work")."""
    pieces = "-".join(_words(compound)).split("-")  # "mother-in-law's": its clitic dropped
    terms = [stem(p) for p in pieces if len(p) > _SHORT_PIECE and p not in STOP_WORDS]
    if all(len(p) > _SHORT_PIECE for p in pieces):
        return terms  # "self-portrait": self, portrait, as any two words
    return [" ".join(stem(p) for p in pieces), *terms]


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, stop words dropped (unless nothing else is left)."""
    terms: list[str] = []
    normal = _normalise(text)
    compounds = [t for c in _COMPOUND.findall(normal) for t in _compound_terms(c)]
    for run in _RUNS.findall(_COMPOUND.sub(" ", normal)):
        if _CJK.match(run):
            terms.extend([run] if len(run) == 1 else _query_bigrams(run))
        else:
            terms.extend(_words(run))
    kept = [term for term in terms if term not in STOP_WORDS] or ([] if compounds else terms)
    stemmed = [term if _CJK.match(term) else stem(term) for term in kept]
    return list(dict.fromkeys(stemmed + compounds))


def fts_document(text: str) -> str:
    return " ".join(index_terms(text))


@lru_cache(maxsize=1)
def _segmenter():  # type: ignore[no-untyped-def]
    """jieba's part-of-speech segmenter, its dictionary loaded once (about 0.5 s)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)  # it reports its load time on stderr otherwise
    return jieba.posseg.POSTokenizer(jieba.Tokenizer())


def zh_frequency(word: str) -> int:
    """How often jieba's dictionary saw `word` (0: never; a word the segmenter made up,
    such as most people's names: 程雪, 宋军)."""
    return int(_segmenter().tokenizer.FREQ.get(word) or 0)


@lru_cache(maxsize=8192)
def zh_words(text: str) -> tuple[tuple[str, str], ...]:
    """The Chinese words of a text with their part-of-speech tags; () without Chinese."""
    body = unicodedata.normalize("NFKC", text)
    if not _CJK.search(body):
        return ()
    return tuple((pair.word, pair.flag) for pair in _segmenter().cut(body) if pair.word.strip())
