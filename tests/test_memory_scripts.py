"""A change said in the other language (memory.scripts, `ConclusionStore._across_scripts`).

The outside case is a blind-written scenario (heldout36, read): a nurse in Vancouver tells
the assistant about work, her son's club and her family, in English and in Chinese."""

from __future__ import annotations

import numpy as np
import pytest

from memory.conclusions import ConclusionStore
from memory.scripts import HAN_SCRIPT, LATIN_SCRIPT, centred, centres, script_of

# what a nurse in Vancouver had told the assistant before the change, in both languages
# (heldout36, steps 1-22: updates, corrections and look-alikes among them)
SAID = [
    "I'm on permanent nights now — 12-hour shifts on 7 East, the cardiac step-down unit at VGH.",
    "我们病房夜班的 charge nurse 是 Marisol，人还挺好说话的。",
    "哎呀我说错了，Marisol 是白班的，我们夜班的 charge 其实是 Bernadette。",
    "My friend Ling works days in the ICU, and her charge nurse over there is Tomasz.",
    "Ethan joined the robotics club at Kitsilano Makerspace — they build VEX robots there "
    "every Tuesday evening.",
    "His buddy Owen goes to a different robotics club, the one that meets at Hillcrest Centre.",
    "我表姐在成都的婚礼定在 10月3号，就是国庆那几天，一大家子都要回去。",
    "All my chequing and savings are at Vancity — been a member since I landed in 2016.",
    "我妹的钱都存在 Island Savings，她一天到晚喊我也去开个户。",
    "我在 Strathcona 社区菜园分到一块地，编号 C-14，今年准备种点二荆条和莴笋。",
    "隔壁老陈的地是 A-22，他种的豌豆尖长得比我的好多了。",
    "I listed the second-hand Yamaha upright on Craigslist, asking $2,400, which feels "
    "fair since it was tuned in March.",
    "我妈来加拿大探亲的签证，成都 VFS 录指纹约的是 5月20号。",
    "The BCNU steward for our unit is Darnell Okafor, so anything about the forced "
    "overtime goes through him.",
    "我妹在那边当老师，她们工会的代表叫 Jolene，听说很凶。",
    "我一般周一晚上备一周的饭，下了夜班先睡到下午，起来卤一锅牛肉分装好。",
    "When I go see Jing I usually catch the 9 a.m. sailing from Tsawwassen to Swartz Bay.",
    "周五晚上的麻将局一般在王姐家打，她屋头离得近。",
    "成都老乡那个微信群是小蒋在当群主，有啥子活动都是他发通知。",
    "Still doing the 9 a.m. boat to Swartz Bay most trips — it gets me to Jing's place by lunch.",
    "Big news at work: they closed half the beds on my old unit, so I've been permanently "
    "reassigned to 5 North, general medicine.",
    "菜园那块 C-14 还是我的，今天去浇了水，莴笋冒芽了。",
]
CHANGE = "小宇那个机器人社团换地方了，Makerspace 的租约到期，现在都去 Britannia 社区中心搞。"
# what she said next (steps 24-31), and then the club again, in English, by its new name
LATER = [
    "Nobody's even come to look at the piano in three weeks, so I knocked it down to $1,950.",
    "表姐的婚礼推了哈，男方屋头嫌国庆的酒席太贵，定到明年正月初六再办。",
    "这周五照旧在王姐那儿搓，三缺一的话喊我。",
    "Darnell moved over to the day side, and Harpreet Sandhu is the one we go to on nights now.",
    "After the fee changes I moved all my accounts over to Coast Capital; their branch is "
    "open Saturdays, which suits my sleep schedule way better.",
    "Good news — VFS had a cancellation, so Mom's biometrics got moved up to May 9.",
    "周一那天晚上实在遭不住，困得眼睛都睁不开，现在都是周三早上下班回来顺手就把饭备了。",
    "菜园要挖开修水管，我们几家被临时挪到 F-7 那块，在角角头，晒不到好多太阳。",
]
AGAIN = (
    "Dropped Ethan at Britannia for robotics again tonight; he's obsessed with the new drivetrain."
)
ROBOTICS = SAID[4]
OWENS = SAID[5]


def _active(store: ConclusionStore) -> set[str]:
    return {c.text for c in store.list(limit=100)}


def test_a_change_said_in_the_other_language_replaces_its_row(store: ConclusionStore) -> None:
    for text in SAID:
        store.remember(text)
    before = _active(store)
    done = store.remember(CHANGE)
    assert done.action == "superseded", done.decision
    assert done.previous is not None and done.previous.text == ROBOTICS
    assert done.decision is not None and "other language" in done.decision.reason
    # the friend's son's robotics club, the look-alike beside it, stays
    assert _active(store) == (before - {ROBOTICS}) | {CHANGE}
    assert OWENS in _active(store)
    assert [row.text for row in store.history(done.conclusion.id)] == [ROBOTICS]
    # said again in English with the value written alike ("Britannia"), at a nearness
    # below `ACROSS_CHANGE`: still one fact, stored as its newest wording
    for text in LATER:
        store.remember(text)
    again = store.remember(AGAIN)
    assert again.previous is not None and again.previous.text == CHANGE, again.decision
    assert [t for t in _active(store) if "Britannia" in t] == [AGAIN]


def test_a_change_nothing_in_the_other_language_is_about_stays_new(
    store: ConclusionStore,
) -> None:
    for text in SAID:
        store.remember(text)
    before = _active(store)
    # a new fact told as a change: its nearest row across the scripts is no fact of it
    news = "我们家的猫粮现在换成渴望了，之前那个牌子它不爱吃。"
    done = store.remember(news)
    assert done.action == "created", done.decision
    assert _active(store) == before | {news}


def test_one_language_has_nothing_to_centre_across(store: ConclusionStore) -> None:
    """Fewer than three rows in a script: no centre, no link across (two rows centred on
    their own mean would point in opposite directions)."""
    for text in (ROBOTICS, OWENS, SAID[0], SAID[1]):
        store.remember(text)
    done = store.remember(CHANGE)
    assert done.action == "created", done.decision
    assert ROBOTICS in _active(store)


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("Lab meeting is still 周四下午", LATIN_SCRIPT),
        ("短信那家换人了，以后找 Marcus", HAN_SCRIPT),
        ("My dentist is Dr. Rao.", LATIN_SCRIPT),
        ("我们的POS换成Square了，Tyro每个月的租机费太贵。", HAN_SCRIPT),
    ],
)
def test_the_script_a_text_is_written_in(text: str, script: str) -> None:
    assert script_of(text) == script


def test_centres_need_three_rows_of_each_script() -> None:
    one = np.array([1.0, 0.0], dtype=np.float32)
    two = np.array([0.0, 1.0], dtype=np.float32)
    english = [("a row", one)] * 3
    assert centres([*english, ("一行", two), ("两行", two)]) is None
    found = centres([*english, *[("一行", two)] * 3])
    assert found is not None
    assert np.allclose(found[LATIN_SCRIPT], one) and np.allclose(found[HAN_SCRIPT], two)
    # a vector at its script's centre has no direction left: it stays zero, not NaN
    assert np.allclose(centred(one, one), 0.0)
    moved = centred(np.array([1.0, 1.0], dtype=np.float32), one)
    assert np.isclose(np.linalg.norm(moved), 1.0)
