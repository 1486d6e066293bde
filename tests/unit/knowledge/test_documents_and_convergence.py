"""The document store on a memory (spec 18), locally and through litellm's embedding API
against the script server, and convergence."""

from __future__ import annotations

import pytest

from robotlab.errors import InferenceError
from robotlab.knowledge import detected, similarity
from robotlab.llm import LiteLLMEmbedder
from robotlab.memory import Memory
from robotlab.testing.llm_server import requests_seen, serve_script

DOCS = {
    "deploy": "How to deploy the web service: build the image, push it, roll the pods.",
    "cake": "A chocolate cake recipe: flour, sugar, cocoa, eggs and butter, baked an hour.",
    "rollback": "Rolling back a deploy: pick the previous image and roll the pods again.",
}


def test_the_local_embedder_needs_nothing_and_ranks_by_words() -> None:
    memory = Memory()
    for key, text in DOCS.items():
        memory.store_document(key, text)
    hits = memory.search_documents("roll back the deploy", limit=2)
    assert [h["key"] for h in hits] == ["rollback", "deploy"]
    assert hits[0]["text"] == DOCS["rollback"]
    assert 0 < hits[1]["score"] < hits[0]["score"] <= 1
    assert memory.document_keys() == ["deploy", "cake", "rollback"]
    assert memory.delete_document("cake") is True
    assert memory.delete_document("cake") is False
    assert memory.document_keys() == ["deploy", "rollback"]
    assert memory.search_documents("cake", limit=0) == []


def test_a_configured_model_embeds_through_litellm() -> None:
    with serve_script([]) as url:
        embedder = LiteLLMEmbedder("openai/embedder", api_base=url, api_key="x",
                                   passage_prefix="passage: ", query_prefix="query: ")
        memory = Memory(embedder=embedder)
        memory.store_document("a", "aaaa")
        memory.store_document("z", "zzzz")
        [best, other] = memory.search_documents("zz")
        seen = requests_seen(url)
    assert best["key"] == "z"
    assert best["score"] > other["score"]
    assert [r["input"] for r in seen] == [["passage: aaaa"], ["passage: zzzz"], ["query: zz"]]
    assert {r["model"] for r in seen} == {"embedder"}


def test_an_unreachable_embedding_server_is_an_inference_error() -> None:
    with serve_script([]) as url:
        dead = url.replace("/v1", "/nothing-here")
    memory = Memory(embedder=LiteLLMEmbedder("openai/embedder", api_base=dead, api_key="x"))
    with pytest.raises(InferenceError, match="openai/embedder"):
        memory.store_document("a", "text")
    assert memory.document_keys() == []


LONG = "The quick brown fox jumps over the lazy dog near the river bank."


def test_similarity_is_zero_for_short_texts_and_one_for_identical_ones() -> None:
    assert similarity("short", "short") == 0.0
    assert similarity(LONG, "  too short   ") == 0.0
    assert similarity(LONG, LONG) == pytest.approx(1.0)
    assert 0 < similarity(LONG, "A quick brown fox jumped over a sleeping dog by the river.") < 1
    assert similarity(LONG, "Completely unrelated words about accounting spreadsheets.") == 0.0


def test_detected_checks_its_threshold() -> None:
    assert detected(LONG, LONG)
    assert not detected(LONG, "A quick brown fox jumped over a sleeping dog by the river.",
                        threshold=0.99)
    assert detected(LONG, "Totally other content, long enough to count here.", threshold=0.0)
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="threshold must be between 0 and 1"):
            detected(LONG, LONG, threshold=bad)
