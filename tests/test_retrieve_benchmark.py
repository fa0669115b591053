"""The retrieval benchmark on the tiny conversation: outputs, scoring, no-gold counting, resume, LongMemEval keys."""

from __future__ import annotations

import json

import pytest

from qgmem.config import ConfigError
from qgmem.evaluation import retrieval_metrics as rm
from qgmem.io import read_jsonl
from qgmem.evaluation.retrieval import RetrievalBenchConfig, main, make_methods, run_benchmark
from qgmem.types import Question


def _cfg(tmp_path, **kw) -> RetrievalBenchConfig:
    base = dict(output_dir=str(tmp_path / "out"), store_dir=str(tmp_path / "store"), k=3, token_budget=40,
                methods=["qgmem", "qgmem-no-rerank", "qgmem-no-attribute", "bm25-turns"])
    base.update(kw)
    return RetrievalBenchConfig(**base)


def test_benchmark_writes_summary_table_and_resumes(tiny_conversation, tmp_path):
    conv = tiny_conversation
    conv.questions.append(Question("q4", "What does Alice think of Dune?", [], "4", evidence=[], conversation_id="c1"))
    cfg = _cfg(tmp_path)
    s = run_benchmark(cfg, [conv])
    out = tmp_path / "out"
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(s))
    overall = s["groups"]["overall"]
    assert set(overall) == {"qgmem", "qgmem-no-rerank (= qgmem)", "qgmem-no-attribute", "bm25-turns"}
    for name, m in overall.items():
        assert m["questions"] == 4 and m["scored"] == 3 and m["no_gold"] == 1
        for key in ("recall", "all_hit", "precision", "ndcg", "budget_recall", "latency_p50_ms", "latency_p95_ms"):
            assert m[key] == m[key]  # not NaN
    # the per-question rows re-score to the summary
    rows = list(read_jsonl(out / "questions.bm25-turns.jsonl"))
    assert len(rows) == 4
    rec = [rm.recall_at_k(r["items"], r["gold"], 3) for r in rows if r["gold"]]
    assert overall["bm25-turns"]["recall"] == pytest.approx(sum(rec) / len(rec))
    assert all(len(r["items"]) <= 3 for r in rows)
    md = (out / "results.md").read_text()
    assert "| method | n | recall |" in md and "### category 2" in md and "| bm25-turns | 3 |" in md
    # resume: nothing is recomputed, the summary is unchanged
    before = (out / "questions.qgmem.jsonl").read_text()
    s2 = run_benchmark(cfg, [conv])
    assert (out / "questions.qgmem.jsonl").read_text() == before
    assert s2["groups"]["overall"]["qgmem"]["recall"] == overall["qgmem"]["recall"]


def test_longmemeval_official_metrics_and_category_filter(tiny_conversation, tmp_path):
    conv = tiny_conversation
    for q in conv.questions:
        q.evidence_sessions = sorted({"S" + e.split(":")[0][1:] for e in q.evidence})
    cfg = _cfg(tmp_path, dataset="longmemeval-s", methods=["bm25-turns"], categories=["2", "4"])
    s = run_benchmark(cfg, [conv])
    m = s["groups"]["overall"]["bm25-turns"]
    assert m["questions"] == 2
    for key in ("session_recall_any@5", "session_recall_all@10", "session_ndcg@5", "turn_recall_any@10", "turn_ndcg@10"):
        assert 0.0 <= m[key] <= 1.0
    assert "LongMemEval official metrics" in (tmp_path / "out" / "results.md").read_text()


def test_unknown_method_and_bad_config_are_clear(tmp_path):
    with pytest.raises(ValueError, match="unknown method 'magic'"):
        make_methods(_cfg(tmp_path, methods=["magic"]), None)
    p = tmp_path / "bad.yaml"
    p.write_text("task: retrieval\nmethodz: [qgmem]\n")
    with pytest.raises(ConfigError, match="methodz"):
        main(str(p), [])
    p.write_text("task: qa\n")
    assert main(str(p), []) == 2
