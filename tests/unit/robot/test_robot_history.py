"""History compression, search and auto-compaction (spec 11), with term-frequency cosine."""

from __future__ import annotations

import pytest

import robotlab
from robotlab import ConfigError, Hook
from robotlab.history.compaction import compress_history, search_history
from robotlab.testing import ScriptedLLM
from robotlab.text.similarity import cosine, term_vector

REVENUE = [
    ("How did quarterly revenue grow this year?",
     "Quarterly revenue grew eight percent, revenue from services led."),
    ("Break the revenue down by region please.",
     "Revenue by region: Europe revenue up, Asia revenue flat."),
    ("Which revenue line was weakest this quarter?",
     "Hardware revenue was the weakest revenue line this quarter."),
]
UNRELATED = [(f"Tell me a story about dragon number {i} and castles.",
              f"Dragon {i} flew over castles and mountains at night.") for i in range(6)]


def conversation() -> list[dict[str, str]]:
    pairs = [("What was quarterly revenue last quarter overall?",
              "Quarterly revenue was twelve million, revenue up.")]
    pairs += UNRELATED + REVENUE
    messages = [{"role": "system", "content": "You are an analyst."}]
    for question, answer in pairs:
        messages += [{"role": "user", "content": question},
                     {"role": "assistant", "content": answer}]
    return messages


def test_thresholds_must_be_ordered() -> None:
    with pytest.raises(ConfigError):
        compress_history(conversation(), keep_threshold=0.2, drop_threshold=0.6)


def test_relevant_old_turns_are_kept_and_unrelated_ones_dropped() -> None:
    messages = conversation()
    messages.insert(3, {"role": "assistant", "content": None, "tool_calls": []})
    messages.insert(4, {"role": "tool", "tool_call_id": "c",
                        "content": "tool output about dragons and castles"})
    compressed = compress_history(messages, keep_threshold=0.3, drop_threshold=0.1)
    texts = [m["content"] for m in compressed]
    assert "What was quarterly revenue last quarter overall?" in texts
    assert not any("Dragon" in (t or "") for t in texts)
    assert compressed[0]["role"] == "system"
    assert any(m["role"] == "tool" for m in compressed)
    assert texts[-6:] == [t for pair in REVENUE for t in pair]


def test_middle_scores_are_summarised_when_a_summarizer_is_given() -> None:
    compressed = compress_history(conversation(), keep_threshold=0.99, drop_threshold=0.01,
                                  summarizer=lambda text: "summary: " + text[:10])
    assert any(m["content"].startswith("summary: ") for m in compressed if m["role"] == "user")


def test_nothing_to_compress_returns_the_input() -> None:
    short = conversation()[:3]
    assert compress_history(short) == short


def test_search_history_ranks_by_similarity() -> None:
    hits = search_history(conversation(), "dragon castles", limit=3)
    assert len(hits) == 3
    assert all("ragon" in hit.text for hit in hits)
    assert hits[0].score >= hits[-1].score > 0


def test_cosine_of_identical_texts_is_one_and_of_disjoint_texts_zero() -> None:
    a = term_vector("revenue grew in the quarter")
    assert cosine(a, a) == pytest.approx(1.0)
    assert cosine(a, term_vector("dragons fly")) == 0.0


def test_robot_compresses_and_searches_its_own_history() -> None:
    robot = robotlab.build(system_prompt="S").replace_messages(conversation()[1:])
    robot.compress_history(keep_threshold=0.3, drop_threshold=0.1)
    assert not any("Dragon" in m["content"] for m in robot.messages)
    assert robot.search_history("quarterly revenue", limit=1)[0].role in ("user", "assistant")


def counting_hook(fired: list[str]) -> type[Hook]:
    class Count(Hook):
        def before_compaction(self, ctx) -> None:  # type: ignore[no-untyped-def]
            fired.append(ctx.strategy)

        def on_compaction(self, ctx) -> None:  # type: ignore[no-untyped-def]
            ctx.compacted_messages = list(ctx.messages_before[-2:])

    return Count


def test_context_window_compaction_fires_once_per_run_only_above_the_threshold() -> None:
    fired: list[str] = []
    llm = ScriptedLLM([{"content": "ok"}] * 3)
    robot = robotlab.build(config={"auto_compact": "context_window"},
                           llm=llm).on(counting_hook(fired))
    robot.run("small")
    robot.run("still small")
    assert fired == []
    robot.replace_messages([{"role": "user", "content": "x" * 700_000},
                            {"role": "assistant", "content": "y"}] * 2)
    robot.run("big now")
    assert fired == ["context_window"]
    assert len(llm.requests[2].messages) == 3


def test_callable_strategy_decides_on_every_run() -> None:
    calls: list[int] = []

    def keep_last_two(robot: robotlab.Robot) -> list[dict]:
        calls.append(len(robot.messages))
        return robot.messages[-2:]

    llm = ScriptedLLM([{"content": "1"}, {"content": "2"}, {"content": "3"}])
    robot = robotlab.build(config={"auto_compact": keep_last_two}, llm=llm)
    for message in ("a", "b", "c"):
        robot.run(message)
    assert calls == [2, 4]
    assert [m["role"] for m in llm.requests[2].messages] == ["user", "assistant", "user"]
