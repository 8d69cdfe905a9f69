"""Reasoning kept out of answers, and the wire form of our messages (issue 12, items 1, 8)."""

from __future__ import annotations

import random

import pytest

from assistant.reasoning import ThinkFilter, split_reasoning
from assistant.wire import CONTEXT_HEADER, clean_arguments, wire_messages

REPLY = "<think>\nThe user asks 40+49. That is 89.\n</think>\n\nIt is 89."


@pytest.mark.parametrize("seed", range(25))
def test_any_split_of_a_streamed_think_block_gives_the_same_answer(seed):
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(REPLY)), rng.randint(1, 12)))
    pieces = [REPLY[a:b] for a, b in zip([0, *cuts], [*cuts, len(REPLY)], strict=True)]
    think = ThinkFilter()
    shown = "".join(think.feed(piece) for piece in pieces) + think.flush()
    assert shown.strip() == "It is 89."
    assert "89" in "".join(think.reasoning) and "think" not in shown


def test_an_unopened_think_close_drops_what_came_before_it():
    assert split_reasoning("the model mused here</think>Answer.") == (
        "Answer.",
        "the model mused here",
    )


def test_text_that_only_looks_like_a_tag_is_kept():
    think = ThinkFilter()
    shown = think.feed("a < b and <thin") + think.feed("g> stays") + think.flush()
    assert shown == "a < b and <thing> stays"


def test_null_content_never_goes_on_the_wire_and_row_ids_and_reasoning_stay_home():
    stored = [
        {"role": "user", "content": "add", "id": 7},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "hmm",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "calc_evaluate", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "89"},
        {"role": "assistant", "content": "<think>x</think>It is 89."},
    ]
    sent = wire_messages(stored)
    assert sent[1]["content"] == ""
    assert sent[1]["reasoning_content"] == "hmm"  # DeepSeek: a tool call's reasoning goes back
    assert "id" not in sent[0]
    assert sent[3]["content"] == "It is 89."
    assert "reasoning_content" not in wire_messages(stored, tool_reasoning=False)[1]


def test_system_role_user_moves_every_system_message_into_the_first_user_message():
    sent = wire_messages(
        [
            {"role": "system", "content": "rules"},
            {"role": "system", "content": "summary"},
            {"role": "user", "content": "hi"},
        ],
        "user",
    )
    assert sent == [{"role": "user", "content": f"{CONTEXT_HEADER}\nrules\n\nsummary\n\n---\n\nhi"}]


def test_flattened_history_keeps_the_facts_and_alternates():
    sent = wire_messages(
        [
            {"role": "user", "content": "add"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "function": {"name": "calc_evaluate", "arguments": '{"e": "40+49"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"value": 89}'},
            {"role": "user", "content": "thanks"},
        ],
        flatten=True,
    )
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "calc_evaluate" in sent[1]["content"] and "89" in sent[2]["content"]


def test_html_escaped_arguments_are_unescaped_only_when_that_makes_json():
    assert clean_arguments("{&quot;a&quot;: 1}") == '{"a": 1}'
    assert clean_arguments('{"a": "&amp;"}') == '{"a": "&amp;"}'
    assert clean_arguments("not json &quot;") == "not json &quot;"
