"""A question's names the memory already holds take the vectors stored at index time: only the question
(and names new to the memory) are encoded at question time, and the answer is the same in every process."""

from __future__ import annotations

import numpy as np
import pytest

from qgmem.retrieve.config import RetrievalConfig
from qgmem.retrieve.method import QGMemRetriever
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from qgmem.types import Question


class Recording(HashEmbedder):
    """Records every text it is asked to encode."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.seen: list[str] = []

    def encode(self, texts, show_progress=False):
        self.seen.extend(texts)
        return super().encode(texts, show_progress)


@pytest.fixture
def built(monkeypatch, tmp_path, tiny_conversation):
    emb = patch_embedder(monkeypatch, Recording())
    r = QGMemRetriever(MemoryStore(tmp_path / "store"), RetrievalConfig(embedder="hash"))
    r.build(tiny_conversation)
    emb.seen.clear()
    return r, emb


def test_a_known_name_is_not_encoded_again(built):
    r, emb = built
    q = Question("n1", "Where did Alice go with her mom?", [], "4", conversation_id="c1")
    wm = r.activate(q, 5)
    assert "Alice" in wm.meta["constraints"]["entities"]
    assert emb.seen == ["Where did Alice go with her mom?"]  # the question only: "Alice" is in the memory
    stored = r._index["c1"].attributes.name_vector("Alice")
    assert stored is not None and np.array_equal(stored, r._index["c1"].attributes.name_vector(" alice "))
    assert wm.items  # the attribute channel still matches her units through the stored vector
    assert wm.meta["channel_sizes"].get("attribute", 0) > 0


def test_a_name_new_to_the_memory_is_encoded(built):
    r, emb = built
    r._index["c1"].names["zanzibar"] = "Zanzibar"  # a name the parser knows but no unit holds
    assert r._index["c1"].attributes.name_vector("Zanzibar") is None
    r.activate(Question("n2", "Did Bob ever mention Zanzibar?", [], "4", conversation_id="c1"), 5)
    assert emb.seen[0] == "Did Bob ever mention Zanzibar?" and "Zanzibar" in emb.seen


def test_stored_name_vectors_give_the_same_answer_after_a_restart(monkeypatch, tmp_path, tiny_conversation):
    patch_embedder(monkeypatch, Recording())
    store = tmp_path / "store"
    first = QGMemRetriever(MemoryStore(store), RetrievalConfig(embedder="hash"))
    first.build(tiny_conversation)
    again = QGMemRetriever(MemoryStore(store), RetrievalConfig(embedder="hash"))
    again.build(tiny_conversation)  # a new retriever over the stored memory: vectors read, not recomputed
    for q in tiny_conversation.questions:
        a, b = first.activate(q, 5), again.activate(q, 5)
        assert [it.turn_ids for it in a.items] == [it.turn_ids for it in b.items]
