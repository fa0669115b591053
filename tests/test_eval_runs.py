"""Evaluation runs: per-question JSONL, resume after a kill, subsets, run folders, config checks."""

from __future__ import annotations

import json

import pytest

from qgmem.evaluation.config import CoverageConfig, EvalConfig, SubsetConfig
from qgmem.evaluation.report import scores_only
from qgmem.evaluation.runner import evaluate
from qgmem.evaluation.runs import latest_unfinished, read_meta
from qgmem.evaluation.subset import select
from qgmem.io import read_jsonl
from qgmem.llm import ScriptedBackend
from qgmem.types import Conversation, Question


class Killed(BaseException):
    """Stands in for SIGKILL/Ctrl-C in the middle of a run (not an LLMError: nothing catches it)."""


def _answer(req) -> str:
    q = req.messages[-1]["content"].rsplit("Question:", 1)[-1]
    if "work" in q:
        return "Reasoning [M1].\nAnswer: Globex"
    if "Paris" in q:
        return "Answer: July 2023"
    return "Answer: not mentioned"


def _judge(req) -> str:
    user = req.messages[-1]["content"]
    ok = "Model answer: Globex" in user or "Model answer: not mentioned" in user
    return json.dumps({"reason": "r", "label": "CORRECT" if ok else "INCORRECT"})


def _with_unanswerable(conv: Conversation) -> Conversation:
    conv.questions.append(Question("q5", "What is the name of Bob's cat?", [], "5", conversation_id="c1",
                                   meta={"adversarial_answer": "Tom"}))
    return conv


def _cfg(tmp_path, name: str) -> EvalConfig:
    cfg = EvalConfig(methods=["full-context", "bm25-turns"], output_dir=str(tmp_path / name),
                     bootstrap_resamples=500)
    cfg.judge.enabled = True
    cfg.judge.repeats = 2
    cfg.answer.batch_size = 2  # questions are answered and appended two at a time
    return cfg


def test_resume_after_a_kill_skips_finished_questions_and_gives_the_same_summary(tmp_path, tiny_conversation):
    conv = _with_unanswerable(tiny_conversation)
    # uninterrupted reference run
    ref_dir, ref = evaluate(_cfg(tmp_path, "ref"), [conv], ScriptedBackend(_answer), ScriptedBackend(_judge),
                            show_progress=False)
    assert read_meta(ref_dir)["status"] == "finished"

    calls = {"n": 0}

    def dying(req) -> str:
        calls["n"] += 1
        if calls["n"] == 6:  # killed while answering the 6th question (2nd of a batch)
            raise Killed()
        return _answer(req)

    cfg = _cfg(tmp_path, "run")
    with pytest.raises(Killed):
        evaluate(cfg, [conv], ScriptedBackend(dying), ScriptedBackend(_judge), show_progress=False)
    run_dir = latest_unfinished(cfg)
    assert run_dir is not None and read_meta(run_dir)["status"] == "failed"  # stopped by an error, still resumable
    assert len(list(read_jsonl(run_dir / "predictions.jsonl"))) == 4  # two finished batches

    second = ScriptedBackend(_answer)
    cfg2 = _cfg(tmp_path, "run")
    out_dir, summary = evaluate(cfg2, [conv], second, ScriptedBackend(_judge), resume=True, show_progress=False)
    assert out_dir == run_dir
    assert len(second.requests) == 2 * 4 - 4  # only the unfinished questions were answered again
    recs = list(read_jsonl(run_dir / "predictions.jsonl"))
    assert len(recs) == 8 and len({(r["method"], r["question_id"]) for r in recs}) == 8
    assert scores_only(summary) == scores_only(ref)
    assert read_meta(run_dir)["status"] == "finished" and read_meta(run_dir)["resumed"] == 1
    # a third call with --resume finds nothing unfinished and starts afresh
    assert latest_unfinished(cfg2) is None


def test_summary_scores_categories_and_keeps_abstention_apart(tmp_path, tiny_conversation):
    conv = _with_unanswerable(tiny_conversation)
    run_dir, s = evaluate(_cfg(tmp_path, "s"), [conv], ScriptedBackend(_answer), ScriptedBackend(_judge),
                          show_progress=False)
    m = s["methods"]["full-context"]
    # q1 "Globex" right (F1 1), q2 "July 2023" right, q3 "not mentioned" vs "Foundation" wrong
    assert m["categories"]["4"]["f1_locomo"]["mean"] == 1.0
    assert m["categories"]["2"]["f1_locomo"]["mean"] == 1.0
    assert m["categories"]["1"]["f1_locomo"]["mean"] == 0.0
    assert m["overall"]["n"] == 3 and m["overall"]["f1_locomo"]["mean"] == pytest.approx(2 / 3)
    assert m["abstention"]["n"] == 1 and m["abstention"]["f1_locomo"]["mean"] == 1.0
    # the scripted judge grades only "Globex" and "not mentioned" CORRECT: q1 and q3 of the three
    assert m["overall"]["judge"]["mean"] == pytest.approx(2 / 3) and m["overall"]["judge"]["runs"] == 2
    assert m["costs"]["llm"]["generation"]["calls"] == 4 and m["costs"]["llm"]["judge"]["calls"] == 8
    assert m["costs"]["context_tokens_mean"] > 50  # the whole tiny dialogue
    rec = next(r for r in read_jsonl(run_dir / "predictions.jsonl") if r["question_id"] == "q1")
    assert rec["prediction"] == "Globex" and rec["references"] == ["Globex"] and rec["cited"] == ["M1"]
    assert "D2:1" in rec["turn_ids"] and rec["retrieval"]["recall"] == 1.0
    for f in ("summary.json", "report.md", "config.yaml", "meta.json", "plots/accuracy_per_category.png",
              "plots/cost_vs_accuracy.png"):
        assert (run_dir / f).stat().st_size > 0, f
    report = (run_dir / "report.md").read_text()
    assert "5 adversarial (abstention accuracy)" in report and "official LoCoMo" in report
    assert read_meta(run_dir)["version"]


def test_resuming_with_different_settings_is_refused(tmp_path, tiny_conversation):
    cfg = _cfg(tmp_path, "x")
    cfg.methods = ["full-context"]
    run_dir, _ = evaluate(cfg, [tiny_conversation], ScriptedBackend(_answer), ScriptedBackend(_judge),
                          show_progress=False)
    other = _cfg(tmp_path, "x")
    other.methods = ["full-context"]
    other.k = 5
    other.run_name = run_dir.name
    with pytest.raises(ValueError, match="'k' differs"):
        evaluate(other, [tiny_conversation], ScriptedBackend(_answer), ScriptedBackend(_judge), show_progress=False)


def test_subset_is_seeded_per_category_and_names_missing_conversations(tiny_conversation):
    conv = tiny_conversation
    conv.questions += [Question(f"x{i}", f"q{i}?", ["a"], "4", conversation_id="c1") for i in range(10)]
    cfg = SubsetConfig(per_category=3, per_category_overrides={"2": 0}, seed=1)
    sel = select([conv], cfg)
    cats = [q.category for q in sel[0][1]]
    assert cats.count("4") == 3 and cats.count("2") == 1 and cats.count("1") == 1
    assert [q.id for q in select([conv], cfg)[0][1]] == [q.id for q in sel[0][1]]
    other = [q.id for q in select([conv], SubsetConfig(per_category=3, seed=2))[0][1]]
    assert other != [q.id for q in sel[0][1]]
    assert len(select([conv], SubsetConfig(max_questions=4))[0][1]) == 4
    assert [q.category for q in select([conv], SubsetConfig(categories=["1"]))[0][1]] == ["1"]
    with pytest.raises(ValueError, match="nope"):
        select([conv], SubsetConfig(conversations=["nope"]))


def test_config_rejects_unknown_methods_and_benchmarks():
    with pytest.raises(ValueError, match="unknown"):
        EvalConfig(methods=["magic"])
    with pytest.raises(ValueError, match="'qgmem-activation' does not answer questions"):
        EvalConfig(methods=["qgmem-activation"])
    with pytest.raises(ValueError, match="method_options.qgmem-graph-token.checkpoint: required"):
        EvalConfig(methods=["qgmem-graph-token"])
    with pytest.raises(ValueError, match=r"method_options.qgmem-text.rerank.kind: expected str"):
        EvalConfig(methods=["qgmem-text"], method_options={"qgmem-text": {"rerank": {"kind": 3}}})
    with pytest.raises(ValueError, match=r"method_options.anchormem: AnchorMemConfig.tau must be"):
        EvalConfig(methods=["anchormem"], method_options={"anchormem": {"tau": 5.0}})
    with pytest.raises(ValueError, match="benchmark"):
        EvalConfig(benchmark="squad")
    with pytest.raises(ValueError, match="coverage"):
        EvalConfig(coverage=CoverageConfig(enabled=True))  # coverage runs on the judge backend


def test_the_registry_is_the_only_list_of_method_names(monkeypatch):
    from qgmem import methods
    from qgmem.evaluation import config as eval_config
    from qgmem.evaluation.config import RetrievalBenchConfig

    assert not hasattr(eval_config, "METHODS")
    assert EvalConfig().methods == list(methods.DEFAULTS["qa"])
    assert RetrievalBenchConfig().methods == list(methods.DEFAULTS["retrieval"])
    assert set(methods.names("qa")) == {"qgmem-text", "qgmem-graph-token", "anchormem", "bm25-turns", "dense-turns",
                                        "full-context"}
    assert "qgmem-activation" in methods.names("retrieval") and "qgmem-no-rerank" in methods.names("retrieval")
    for name, spec in methods.REGISTRY.items():
        assert spec.name == name and spec.description and (spec.answers or spec.retrieves)
    # a method registered at run time is known to both configs, nothing else to edit
    extra = methods.MethodSpec("echo-turns", "test only", methods.BM25TurnsOptions, methods.REGISTRY["bm25-turns"].factory)
    monkeypatch.setitem(methods.REGISTRY, "echo-turns", extra)
    assert EvalConfig(methods=["echo-turns"]).methods == ["echo-turns"]
    assert RetrievalBenchConfig(methods=["echo-turns"]).methods == ["echo-turns"]
    monkeypatch.delitem(methods.REGISTRY, "echo-turns")
    with pytest.raises(ValueError, match="unknown method 'echo-turns'"):
        EvalConfig(methods=["echo-turns"])


def test_qa_runs_live_in_benchmark_run_folders_and_resume_only_matching_runs(tmp_path, tiny_conversation):
    cfg = _cfg(tmp_path, "q")
    cfg.methods = ["bm25-turns"]
    cfg.judge.enabled = False
    with pytest.raises(Killed):
        evaluate(cfg, [tiny_conversation], ScriptedBackend(lambda req: (_ for _ in ()).throw(Killed())),
                 show_progress=False)
    (run,) = list((tmp_path / "q" / "locomo").iterdir())  # <output_dir>/<benchmark>/<run>
    other = _cfg(tmp_path, "q")
    other.methods = ["full-context"]
    other.judge.enabled = False
    assert latest_unfinished(other) is None  # an unfinished run of other methods is not picked up
    same = _cfg(tmp_path, "q")
    same.methods = ["bm25-turns"]
    same.judge.enabled = False
    assert latest_unfinished(same) == run
    out, s = evaluate(same, [tiny_conversation], ScriptedBackend(_answer), resume=True, show_progress=False)
    assert out == run and s["methods"]["bm25-turns"]["overall"]["n"] == 3
