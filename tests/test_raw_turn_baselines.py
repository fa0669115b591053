"""Raw-turn baselines see and show the session date as QGMem does: "speaker: text (date)" is what BM25 and
the dense index read and what the answer model is shown, once per turn."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from qgmem.answer import memory_text
from qgmem.baselines.bm25_turns import BM25Turns
from qgmem.retrieve import qcache
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.types import Question


@pytest.fixture
def recorded(monkeypatch):
    """(lexical documents, embedded texts) as the baselines index them."""
    import qgmem.baselines.dense_turns
    from qgmem.retrieve import lexical

    docs: list[str] = []
    real_init = lexical.LexicalIndex.__init__

    def recording(self, texts, *a, **kw):
        docs.extend(texts)
        real_init(self, texts, *a, **kw)

    class Recording(HashEmbedder):
        def encode(self, texts, show_progress=False):
            docs_dense.extend(texts)
            return super().encode(texts, show_progress)

    docs_dense: list[str] = []
    monkeypatch.setattr(qcache, "_CACHE", OrderedDict())  # query vectors of other embedders stay apart
    monkeypatch.setattr(lexical.LexicalIndex, "__init__", recording)
    monkeypatch.setattr(qgmem.baselines.dense_turns, "get_embedder", lambda name="minilm", device=None: Recording(64))
    return docs, docs_dense


def _methods():
    from qgmem.baselines.dense_turns import DenseTurns

    return [BM25Turns(), DenseTurns("hash")]


def test_indexed_documents_carry_the_session_date(tiny_conversation, recorded):
    for m in _methods():
        m.build(tiny_conversation)
    lexical, dense = recorded
    for docs in (lexical, dense):
        assert len(docs) == 11
        assert docs[0] == ("Alice: Hi Bob! I started a new job at Acme Corp as a data analyst last week. "
                           "(1:56 pm on 8 May, 2023)")
        assert docs[4].endswith("[shares an image: a photo of a rainy street] (1:56 pm on 8 May, 2023)")
        assert all(d.endswith("(10:00 am on 20 August, 2023)") for d in docs[7:])


def test_a_question_about_a_date_finds_that_session(tiny_conversation):
    m = BM25Turns()
    m.build(tiny_conversation)
    q = Question("qd", "What happened in August?", [], "2", conversation_id="c1")
    wm = m.activate(q, k=10)
    assert wm.items and all(it.turn_ids[0].startswith("D2:") for it in wm.items)
    assert len(wm.items) == 4  # the date words match exactly the turns of the August session


def test_the_answer_model_sees_each_turn_once_with_its_date(tiny_conversation, recorded):
    q = tiny_conversation.questions[1]  # When did Alice visit Paris?
    for m in _methods():
        m.build(tiny_conversation)
        wm = m.activate(q, k=3)
        top = next(it for it in wm.items if it.turn_ids == ["D2:3"])
        assert top.text == "Alice: Last month I visited Paris with my mom. (10:00 am on 20 August, 2023)"
        text = memory_text(m, wm)
        assert text.count("I visited Paris") == 1 and text.count("20 August, 2023") >= 1
        assert [it.label for it in wm.items] == [f"M{i + 1}" for i in range(len(wm.items))]  # cited as [M1]..
