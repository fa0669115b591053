"""The correct-answer filter of `qgmem prepare` (paper: keep the train cases the frozen model answers
correctly): a scripted answer model, train cases dropped and counted, val/test never touched."""

from __future__ import annotations

import pytest

from qgmem.config import load_config
from qgmem.llm.scripted import ScriptedBackend
from qgmem.training.answer_filter import is_correct
from qgmem.training.prepare import PrepareConfig, load_prepared, prepare_dataset

from test_prepare import _fixture_set

pytestmark = pytest.mark.usefixtures("one_thread")


def _cfg(*extra: str) -> PrepareConfig:
    return load_config(PrepareConfig, None, ["dataset=fixture", "retrieval.rerank.kind=none", "retrieval.k=4",
                                             "graph.max_edges=4", *extra])


def test_is_correct():
    assert is_correct("She works at Globex now", ["Globex"], 0.5)
    assert is_correct("July 2023", ["July, 2023"], 0.5)
    assert not is_correct("I do not know", ["Globex"], 0.5)
    assert not is_correct("", ["Globex"], 0.5)


def test_filter_drops_wrong_train_cases_only(tiny_conversation, tmp_path):
    convs = _fixture_set(tiny_conversation)
    plain = prepare_dataset(_cfg(), tmp_path / "plain", conversations=convs, progress=False)

    def reply(req) -> str:  # the frozen model knows where Alice works and nothing else
        user = req.messages[-1]["content"]
        assert "Memory:" in user  # answered with the text method's prompt over the working memory
        return "Answer: Globex" if "Where does Alice work" in user else "Answer: I do not know"

    backend = ScriptedBackend(reply)
    cfg = _cfg("answer_filter.enabled=true", "answer_filter.llm.backend=scripted")
    meta = prepare_dataset(cfg, tmp_path / "filtered", conversations=convs, progress=False, answer_backend=backend)
    train_q = plain["counts"]["train"]
    assert train_q > 0 and len(backend.requests) == train_q  # only train cases were asked
    assert meta["counts"]["val"] == plain["counts"]["val"] and meta["counts"]["test"] == plain["counts"]["test"]
    kept = train_q // 3  # one of the three questions per conversation is answered right
    assert meta["counts"]["train"] == kept
    assert meta["answer_filter"] == {"checked": train_q, "kept": kept, "dropped": train_q - kept,
                                     "split": "train", "model": "smollm2"}
    _, splits = load_prepared(tmp_path / "filtered")
    assert set(splits["train"]["question"]) == {"Where does Alice work now?"}
    assert len(set(splits["val"]["question"]) | set(splits["test"]["question"])) == 3
    assert "answer_filter" not in plain
