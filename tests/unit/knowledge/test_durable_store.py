"""Durable knowledge (spec 18): the SQLite store, Entry, Reflector, the two tools, and two real
processes recording into one domain at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import robotlab
from robotlab.knowledge import DurableStore, Entry, RecallKnowledge, RecordKnowledge, Reflector
from robotlab.knowledge.tools import NO_STORE
from robotlab.testing import ScriptedLLM


@pytest.fixture
def store(tmp_path: Path) -> DurableStore:
    return DurableStore(tmp_path / "durable")


def test_recording_the_same_content_twice_confirms_one_entry(store: DurableStore) -> None:
    store.record(Entry("Run the migrations first", "they fail otherwise", domain="Web Ops"))
    again = store.record(Entry("RUN THE MIGRATIONS FIRST", "said again", domain="web ops"))
    [entry] = store.entries("web-ops")
    assert (entry.confidence, entry.use_count) == (0.2, 1) == (again.confidence, again.use_count)
    assert entry.content == "Run the migrations first"
    assert store.domains() == ["web_ops"]


def test_confidence_is_capped_at_one(store: DurableStore) -> None:
    entry = store.record(Entry("cap me", confidence=0.95))
    assert store.confirm(entry).confidence == 1.0
    assert store.confirm(entry).use_count == 2


def test_recall_matches_words_as_substrings_best_first(store: DurableStore) -> None:
    store.record(Entry("Always migrate before deploying", domain="ops", confidence=0.3))
    store.record(Entry("Cache the templates", domain="perf", confidence=0.9))
    store.record(Entry("Deploy on Tuesdays", domain="ops", confidence=0.5))
    assert [e.content for e in store.recall("deploy TEMPLATE")] == [
        "Cache the templates", "Deploy on Tuesdays", "Always migrate before deploying"]
    assert [e.content for e in store.recall("deploy", domain="OPS")] == [
        "Deploy on Tuesdays", "Always migrate before deploying"]
    # the domain counts too
    assert [e.content for e in store.recall("perf")] == ["Cache the templates"]
    assert store.recall("deploy", min_confidence=0.4)[0].content == "Deploy on Tuesdays"
    assert store.recall("on to") == []  # words under three characters are ignored
    assert store.recall('"quoted" deploy')[0].content == "Deploy on Tuesdays"


def test_the_reflector_promotes_learnings_as_patterns(store: DurableStore) -> None:
    Reflector(store, "python").reflect(["Use pathlib", "  ", "use PATHLIB"])
    [entry] = store.entries("python")
    assert (entry.category, entry.confidence, entry.use_count) == ("pattern", 0.2, 1)


def test_the_tools_through_a_robot(store: DurableStore) -> None:
    llm = ScriptedLLM([
        {"tool_calls": [{"name": "record_knowledge", "arguments": {
            "content": "Pin the numpy version", "reasoning": "2.0 broke the build",
            "category": "pitfall", "domain": "builds"}}]},
        {"tool_calls": [{"name": "recall_knowledge", "arguments": {"query": "numpy"}}]},
        {"tool_calls": [{"name": "recall_knowledge", "arguments": {"query": "kubernetes"}}]},
        {"content": "done"},
    ])
    robot = robotlab.build(local_tools=[RecordKnowledge(store), RecallKnowledge(store)], llm=llm)
    robot.run("learn and recall", tools="inherit")
    assert llm.requests[1].tool_results()[-1:] == [
        "Recorded [pitfall/conf:0.1] Pin the numpy version in builds."]
    assert llm.requests[2].tool_results()[-1:] == [
        "Relevant past knowledge:\n[pitfall/conf:0.2] Pin the numpy version — 2.0 broke the build"]
    assert llm.requests[3].tool_results()[-1:] == [
        "No relevant past knowledge found for: kubernetes. When in doubt, skip."]
    assert robot.learnings == ["Pin the numpy version (builds)"]
    assert store.entries()[0].use_count == 1  # the recall confirmed it


def test_without_a_store_the_tools_say_so(store: DurableStore) -> None:
    assert RecallKnowledge().execute(query="x") == NO_STORE
    assert RecordKnowledge().execute(content="c", reasoning="r", category="c",
                                     domain="d") == NO_STORE
    tool = RecallKnowledge()
    tool.robot = robotlab.build(llm=ScriptedLLM([]))
    tool.robot.durable_store = store
    assert tool.execute(query="anything").startswith("No relevant past knowledge")


WRITER = textwrap.dedent("""
    import sys
    from robotlab.knowledge import DurableStore, Entry
    store = DurableStore(sys.argv[1])
    for i in range(int(sys.argv[3])):
        store.record(Entry(f"{sys.argv[2]} lesson {i}", domain="shared"))
        store.record(Entry("the lesson both learn", domain="shared"))
""")


def test_two_processes_recording_into_one_domain_lose_nothing(tmp_path: Path) -> None:
    path, count = tmp_path / "durable", 150
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count)])
               for name in ("alpha", "beta")]
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    entries = DurableStore(path).entries("shared")
    assert len(entries) == 2 * count + 1
    [both] = [e for e in entries if e.content == "the lesson both learn"]
    assert both.use_count == 2 * count - 1
    assert both.confidence == 1.0
