"""LongMemEval session ids never reach a method: gold sessions are named "answer_<hex>" by the benchmark, a
name that could leak into rankings (ties broken by id, ids hashed or indexed as text). The loader gives
opaque ids; every retrieval method ranks the same whatever the ids are called, and no "answer" reaches
anything a method indexes."""

from __future__ import annotations


import json
from pathlib import Path

import pytest

from qgmem.data import load_longmemeval
from qgmem.methods import MethodContext, make_methods
from qgmem.retrieve.config import RetrievalConfig
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder, patch_embedder
from qgmem.types import Conversation, Question, Session, Turn

# (benchmark id, date, turns); the gold sessions carry the benchmark's "answer_" prefix
SESSIONS = [
    ("sharegpt_Qx1_0", "2023/03/02 (Thu) 09:10", ["How do I descale a kettle?", "Boil vinegar and water, then rinse."]),
    ("answer_5c0ffee1", "2023/03/09 (Thu) 18:40", ["I moved to Tampere last week for my new lab job.",
                                                     "Congratulations on the move to Tampere!"]),
    ("0b1d2e3f_2", "2023/03/09 (Thu) 18:40", ["Can you suggest a board game for four people?",
                                              "Try a cooperative game about building railways."]),
    ("answer_7e57ab1e", "2023/04/15 (Sat) 11:00", ["My lab in Tampere studies lichen growth on old roofs.",
                                                     "Lichen on roofs is a lovely research topic."]),
    ("sharegpt_Zz9_3", "2023/04/20 (Thu) 08:05", ["What is a good stretch for a stiff neck?",
                                                  "Slow chin tucks, ten at a time, help many people."]),
    ("ultrachat_4411", "2023/05/02 (Tue) 21:30", ["I bought a green bicycle to ride to the lab.",
                                                  "A bicycle is a fine way to commute in spring."]),
]
QUESTIONS = [("q_city", "Which city did I move to for my job?", "Tampere", "single-session-user",
              ["answer_5c0ffee1"], {("answer_5c0ffee1", 0)}),
             ("q_lab", "What does my lab study, and where do I ride to it?", "lichen growth", "multi-session",
              ["answer_7e57ab1e", "ultrachat_4411"], {("answer_7e57ab1e", 0), ("ultrachat_4411", 0)})]
RETRIEVERS = ["bm25-turns", "dense-turns", "anchormem", "qgmem-activation"]


def _write(path: Path, rename) -> Path:
    """A LongMemEval-shaped file; `rename` maps each benchmark session id to the id written."""
    data = []
    for qid, text, answer, qtype, gold_sessions, gold_turns in QUESTIONS:
        data.append({
            "question_id": qid, "question_type": qtype, "question": text, "answer": answer,
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": [rename(sid) for sid, _, _ in SESSIONS],
            "haystack_dates": [d for _, d, _ in SESSIONS],
            "haystack_sessions": [[{"role": ("user", "assistant")[j % 2], "content": c,
                                    "has_answer": (sid, j) in gold_turns} for j, c in enumerate(turns)]
                                  for sid, _, turns in SESSIONS],
            "answer_session_ids": [rename(s) for s in gold_sessions],
        })
    path.write_text(json.dumps(data))
    return path


def _other_scheme(sid: str) -> str:
    return "zz-" + sid[::-1].upper()


@pytest.fixture
def hashed(monkeypatch):
    """Every embedder is one recording hashed bag of words (fast, offline)."""

    class Recording(HashEmbedder):
        seen: list[str] = []

        def encode(self, texts, show_progress=False):
            self.seen.extend(texts)
            return super().encode(texts, show_progress)

    return patch_embedder(monkeypatch, Recording(dim=64))


def _methods(store_root: Path) -> dict:
    cfg = RetrievalConfig(embedder="hash", extractor="rule", query_parser="rule")
    cfg.rerank.kind = "none"
    opts = {"anchormem": {"extractor": "rule", "integrator": "concat", "embedder": "hash"}}
    return make_methods(RETRIEVERS, MethodContext(store=MemoryStore(store_root), retrieval=cfg), opts)


def _rankings(convs: list[Conversation], store_root: Path, back: dict[str, str] | None = None) -> dict:
    """method -> question -> ranked items as lists of turn ids (mapped through `back` when given)."""
    out: dict = {}
    for name, m in _methods(store_root).items():
        for conv in convs:
            m.build(conv)
            for q in conv.questions:
                wm = m.activate(q, 3)
                out[(name, q.id)] = [[(back or {}).get(t, t) for t in it.turn_ids] for it in wm.items]
            m.release(conv.id)
    return out


def _rename_ids(conv: Conversation, name) -> tuple[Conversation, dict[str, str]]:
    """A copy of `conv` with every session and turn id renamed by `name`; (copy, new turn id -> old)."""
    tid = {t.id: f"{name(s.id)}/{k}" for s in conv.sessions for k, t in enumerate(s.turns)}
    sessions = [Session(name(s.id), s.date, [Turn(tid[t.id], t.speaker, t.text) for t in s.turns], s.date_text)
                for s in conv.sessions]
    qs = [Question(q.id, q.text, q.answers, q.category, [tid[e] for e in q.evidence],
                   [name(s) for s in q.evidence_sessions], q.question_time, q.conversation_id) for q in conv.questions]
    return Conversation(conv.id, sessions, qs, conv.speakers), {v: k for k, v in tid.items()}


def test_loader_gives_the_same_conversations_whatever_the_benchmark_ids(tmp_path):
    a = load_longmemeval("s", _write(tmp_path / "a.json", lambda s: s))
    b = load_longmemeval("s", _write(tmp_path / "b.json", _other_scheme))
    for ca, cb in zip(a, b):
        assert ca.sessions == cb.sessions and ca.questions[0].evidence == cb.questions[0].evidence
        assert ca.questions[0].evidence_sessions == cb.questions[0].evidence_sessions
        assert ca.meta["haystack_order"] == cb.meta["haystack_order"]
    q = a[0].questions[0]
    assert q.evidence == ["s0001:0"] and q.meta["original_evidence"] == ["answer_5c0ffee1:0"]
    orig = a[0].meta["original_session_ids"]
    assert [orig[s] for s in a[1].questions[0].evidence_sessions] == ["answer_7e57ab1e", "ultrachat_4411"]
    # the two sessions of one date keep the file's order (ties are never broken by id)
    assert [orig[s.id] for s in a[0].sessions][1:3] == ["answer_5c0ffee1", "0b1d2e3f_2"]


def test_no_answer_prefix_reaches_any_index_or_id(tmp_path, hashed, monkeypatch):
    from qgmem.retrieve import lexical

    indexed: list[str] = []
    real_init = lexical.LexicalIndex.__init__

    def recording(self, texts, *a, **kw):
        indexed.extend(texts)
        real_init(self, texts, *a, **kw)

    monkeypatch.setattr(lexical.LexicalIndex, "__init__", recording)
    convs = load_longmemeval("s", _write(tmp_path / "lme.json", lambda s: s))
    ranked = _rankings(convs, tmp_path / "store")
    ids = [c.id for c in convs] + [s.id for c in convs for s in c.sessions] + [t.id for c in convs for t in c.turns()]
    ids += [e for c in convs for q in c.questions for e in [*q.evidence, *q.evidence_sessions]]
    ids += [t for items in ranked.values() for it in items for t in it]
    assert indexed and hashed.seen and ids
    for text in [*indexed, *hashed.seen, *ids]:
        assert "answer" not in text.lower(), text


def test_every_method_ranks_the_same_under_any_id_scheme(tmp_path, hashed):
    convs = load_longmemeval("s", _write(tmp_path / "lme.json", lambda s: s))
    again = load_longmemeval("s", _write(tmp_path / "other.json", _other_scheme))
    ref = _rankings(convs, tmp_path / "a")
    assert _rankings(again, tmp_path / "b") == ref  # the loader: benchmark ids never matter
    # the methods: any renaming of the ids they are given (here: reversed, so sorting by id would show)
    renamed = [_rename_ids(c, lambda s: f"x{99 - int(s[1:]):03d}") for c in convs]
    back = {k: v for _, m in renamed for k, v in m.items()}
    got = _rankings([c for c, _ in renamed], tmp_path / "c", back)
    assert got == ref
    assert all(ref.values()) and {name for name, _ in ref} == set(RETRIEVERS)  # every method returned items
    # gold is found, so the rankings compared are real ones
    assert any(["s0001:0"] == it for it in ref[("bm25-turns", "q_city")])
