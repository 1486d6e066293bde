"""The document store on SQLite (spec 18): kept across restarts, shared by processes, and
nothing lost when two processes write at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from robotlab.llm import LiteLLMEmbedder
from robotlab.memory import Memory
from robotlab.memory.documents import DocumentStore
from robotlab.testing.llm_server import serve_script

WRITER = textwrap.dedent("""
    import sys
    from robotlab.memory import Memory
    memory = Memory(document_path=sys.argv[1])
    name, count = sys.argv[2], int(sys.argv[3])
    for i in range(count):
        memory.store_document(f"{name}-{i}", f"{name} wrote note number {i} about the river")
        memory.store_document("both", f"the note both write, last by {name}")
    memory.delete_document(f"{name}-0")
""")


def test_two_processes_writing_one_store_lose_nothing(tmp_path: Path) -> None:
    # Given two real processes storing into one document path at the same time
    path, count = tmp_path / "docs", 120
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count)])
               for name in ("alpha", "beta")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    # Then a third process (this one) sees every document either stored, less the deleted ones
    keys = Memory(document_path=path).document_keys()
    expected = {f"{name}-{i}" for name in ("alpha", "beta") for i in range(1, count)} | {"both"}
    assert len(keys) == len(expected) and set(keys) == expected
    [hit] = Memory(document_path=path).search_documents("beta note number 7", limit=1)
    assert hit["key"] == "beta-7" and hit["text"] == "beta wrote note number 7 about the river"


def test_documents_outlive_the_store_and_keep_their_order(tmp_path: Path) -> None:
    first = DocumentStore(path=tmp_path)
    first.store("a", "apples and pears")
    first.store("b", "boats on the river")
    first.store("a", "apples, replaced")
    first.close()
    again = DocumentStore(path=tmp_path)
    assert again.keys() == ["b", "a"]
    assert again.search("apples", limit=1)[0]["text"] == "apples, replaced"
    assert again.delete("b") and not again.delete("b")
    assert DocumentStore(path=tmp_path).keys() == ["a"]
    assert (tmp_path / "documents.sqlite3").exists()


def test_dense_vectors_round_trip_and_each_embedder_searches_its_own(tmp_path: Path) -> None:
    with serve_script([]) as url:
        model = LiteLLMEmbedder("openai/letters", api_base=url, api_key="x")
        dense = Memory(embedder=model, document_path=tmp_path)
        dense.store_document("z", "zzzz")
        dense.store_document("a", "aaaa")
        local = Memory(document_path=tmp_path)
        local.store_document("words", "zzzz and aaaa as words")
        [best, other] = Memory(embedder=model, document_path=tmp_path).search_documents("zz")
    assert (best["key"], other["key"]) == ("z", "a")
    assert best["score"] == 1.0 and other["score"] == 0.0
    assert [hit["key"] for hit in local.search_documents("zzzz")] == ["words"]
    assert local.document_keys() == ["z", "a", "words"]
