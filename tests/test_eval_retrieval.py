"""The retrieval harness on the tiny conversation: outputs, scoring, no-gold counting, run folders,
resume by the QA rule, LongMemEval keys, config errors."""

from __future__ import annotations

import json

import pytest

from qgmem.config import ConfigError
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.evaluation.config import RetrievalBenchConfig, SubsetConfig
from qgmem.evaluation.retrieval import load_retrieval_config, main, make_run_methods, run_benchmark
from qgmem.evaluation.runs import read_meta
from qgmem.io import read_jsonl
from qgmem.types import Question


def _cfg(tmp_path, **kw) -> RetrievalBenchConfig:
    base = dict(output_dir=str(tmp_path / "out"), store_dir=str(tmp_path / "store"), k=3, token_budget=40,
                methods=["qgmem-activation", "qgmem-no-rerank", "qgmem-no-attribute", "bm25-turns"])
    base.update(kw)
    return RetrievalBenchConfig(**base)


def _only_run(tmp_path, benchmark="locomo"):
    (run,) = list((tmp_path / "out" / benchmark).iterdir())
    return run


def test_benchmark_writes_summary_table_and_resumes(tiny_conversation, tmp_path):
    conv = tiny_conversation
    conv.questions.append(Question("q4", "What does Alice think of Dune?", [], "4", evidence=[], conversation_id="c1"))
    cfg = _cfg(tmp_path, run_name="r1")
    s = run_benchmark(cfg, [conv])
    out = _only_run(tmp_path)
    assert out == tmp_path / "out" / "locomo" / "r1"  # results/<benchmark>/<run>, no method names in the path
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(s))
    assert s["methods"] == cfg.methods and read_meta(out)["status"] == "finished"
    overall = s["groups"]["overall"]
    # the no-rerank ablation equals the full pipeline under this config (no reranker): computed once
    assert set(overall) == {"qgmem-activation", "qgmem-no-rerank (= qgmem-activation)", "qgmem-no-attribute",
                            "bm25-turns"}
    for name, m in overall.items():
        assert m["questions"] == 4 and m["scored"] == 3 and m["no_gold"] == 1
        for key in ("recall", "all_hit", "precision", "ndcg", "budget_recall", "latency_p50_ms", "latency_p95_ms"):
            assert m[key] == m[key]  # not NaN
    rows = list(read_jsonl(out / "retrieval.jsonl"))
    assert {r["method"] for r in rows} == {"qgmem-activation", "qgmem-no-attribute", "bm25-turns"}
    assert {r["qid"] for r in rows} == {"c1/q1", "c1/q2", "c1/q3", "c1/q4"}  # <conversation_id>/<question_id>
    bm = [r for r in rows if r["method"] == "bm25-turns"]
    rec = [rm.recall_at_k(r["items"], r["gold"], 3) for r in bm if r["gold"]]
    assert len(bm) == 4 and overall["bm25-turns"]["recall"] == pytest.approx(sum(rec) / len(rec))
    assert all(len(r["items"]) <= 3 for r in rows)
    md = (out / "results.md").read_text()
    assert "| method | n | recall |" in md and "### category 2" in md and "| bm25-turns | 3 |" in md
    # resume (run_name): nothing is recomputed, the summary is unchanged
    before = (out / "retrieval.jsonl").read_text()
    s2 = run_benchmark(_cfg(tmp_path, run_name="r1"), [conv])
    assert (out / "retrieval.jsonl").read_text() == before
    assert s2["groups"]["overall"]["qgmem-activation"]["recall"] == overall["qgmem-activation"]["recall"]


def test_retrieval_run_resumes_after_a_kill_and_refuses_other_settings(tiny_conversation, tmp_path, monkeypatch):
    from qgmem.baselines.bm25_turns import BM25Turns

    real = BM25Turns.activate
    calls = {"n": 0}

    def dying(self, q, k=10):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, q, k)

    cfg = _cfg(tmp_path, methods=["bm25-turns"])
    monkeypatch.setattr(BM25Turns, "activate", dying)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(cfg, [tiny_conversation])
    monkeypatch.setattr(BM25Turns, "activate", real)
    run = _only_run(tmp_path)
    assert read_meta(run)["status"] == "interrupted" and not (run / "retrieval.jsonl").exists()
    # a changed scoring field: --resume finds no matching unfinished run; run_name refuses by name
    other = _cfg(tmp_path, methods=["bm25-turns"], k=2, run_name=run.name)
    with pytest.raises(ValueError, match="'k' differs"):
        run_benchmark(other, [tiny_conversation])
    s = run_benchmark(_cfg(tmp_path, methods=["bm25-turns"]), [tiny_conversation], resume=True)
    assert _only_run(tmp_path) == run and read_meta(run)["status"] == "finished" and read_meta(run)["resumed"] == 1
    assert s["groups"]["overall"]["bm25-turns"]["questions"] == 3


def test_longmemeval_official_metrics_and_category_filter(tiny_conversation, tmp_path):
    conv = tiny_conversation
    for q in conv.questions:
        q.evidence_sessions = sorted({"S" + e.split(":")[0][1:] for e in q.evidence})
    cfg = _cfg(tmp_path, benchmark="longmemeval-s", methods=["bm25-turns"], subset=SubsetConfig(categories=["2", "4"]),
               protocol="all-turns")  # a hand-made conversation has no benchmark session ids for the official one
    s = run_benchmark(cfg, [conv])
    m = s["groups"]["overall"]["bm25-turns"]
    assert m["questions"] == 2 and s["protocol"] == "all-turns"
    for key in ("session_recall_any@5", "session_recall_all@10", "session_ndcg@5", "turn_recall_any@10", "turn_ndcg@10"):
        assert 0.0 <= m["all_turns_" + key] <= 1.0
    assert not any(k.startswith("official_") for k in m)
    md = (_only_run(tmp_path, "longmemeval-s") / "results.md").read_text()
    assert "All-turns protocol" in md and "LongMemEval official protocol" not in md


def test_unknown_old_and_qa_only_methods_and_bad_config_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="unknown method 'magic'"):
        _cfg(tmp_path, methods=["magic"])
    with pytest.raises(ConfigError, match="'qgmem' was renamed: use 'qgmem-activation'"):
        _cfg(tmp_path, methods=["qgmem"])
    with pytest.raises(ConfigError, match="'full-context' is not scored in retrieval runs"):
        _cfg(tmp_path, methods=["full-context"])
    p = tmp_path / "bad.yaml"
    p.write_text("task: retrieval\nmethodz: [qgmem-activation]\n")
    with pytest.raises(ConfigError, match="methodz"):
        main(str(p), [])
    p.write_text("task: retrieval\ndataset: locomo\n")  # the old layout says where the key went
    with pytest.raises(ConfigError, match="'dataset' moved: use benchmark"):
        load_retrieval_config(p)
    p.write_text("task: qa\n")
    with pytest.raises(ValueError, match="only 'retrieval'"):
        load_retrieval_config(p)


def test_ablations_get_their_retrieval_changes_and_dense_turns_the_run_embedder(tmp_path):
    from qgmem.store import MemoryStore

    cfg = _cfg(tmp_path, methods=["qgmem-activation", "qgmem-no-traces", "qgmem-lexical-only", "dense-turns"],
               method_options={"qgmem-activation": {"pool_size": 50}})
    ms = make_run_methods(cfg, MemoryStore(tmp_path / "store"))
    assert ms["qgmem-activation"].cfg.pool_size == 50 and ms["qgmem-no-traces"].cfg.pool_size == 100
    assert ms["qgmem-no-traces"].cfg.use_traces is False and ms["qgmem-lexical-only"].cfg.channels == ["lexical"]
    assert ms["qgmem-lexical-only"].name == "qgmem-lexical-only"
    assert ms["dense-turns"].embedder.name == ms["qgmem-activation"].embedder.name  # the run's retrieval.embedder
    assert len({id(m) for m in ms.values()}) == 4


def test_longmemeval_abstention_questions_are_counted_not_scored() -> None:
    """LongMemEval's official retrieval metrics leave out "_abs" questions, even with evidence turns."""
    from qgmem.evaluation.retrieval_summary import _score_rows

    sc = {"recall": 1.0, "all_hit": 1.0, "precision": 0.1, "ndcg": 1.0, "budget_recall": 1.0}
    rows = [{"qid": "q1/q1", "scores": sc, "latency_ms": 1.0, "context_tokens": 5,
             "lme_all_turns": {"turn_recall_all@10": 1.0}},
            {"qid": "q2_abs/q2_abs", "scores": {**sc, "recall": 0.0}, "latency_ms": 1.0, "context_tokens": 5,
             "lme_all_turns": {"turn_recall_all@10": 0.0}},
            {"qid": "q3/q3", "scores": None, "latency_ms": 1.0, "context_tokens": 5}]
    lme = _score_rows(rows, 10, longmemeval=True)
    assert (lme["questions"], lme["scored"], lme["no_gold"], lme["abstention"]) == (3, 1, 1, 1)
    assert lme["recall"] == 1.0 and lme["all_turns_turn_recall_all@10"] == 1.0
    other = _score_rows(rows, 10, longmemeval=False)  # elsewhere an "_abs" id means nothing
    assert other["scored"] == 2 and other["recall"] == 0.5 and "abstention" not in other
