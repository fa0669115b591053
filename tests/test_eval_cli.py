"""`evaluate.py` end to end on real LoCoMo data, answer and judge served by the local test server."""

from __future__ import annotations

import json

import pytest
import yaml
from qgmem.testing.openai_server import OpenAIServer

from qgmem.evaluation.cli import main
from qgmem.io import read_jsonl

pytestmark = pytest.mark.data


def _handler(req: dict) -> str:
    if req["model"] == "judge":
        ok = "cannot be answered from the conversation" in req["messages"][-1]["content"]  # the abstention prompt
        return json.dumps({"reason": "r", "label": "CORRECT" if ok else "INCORRECT"})
    return "Answer: not mentioned"


def test_evaluate_cli_runs_locomo_subset_and_prints_the_report(tmp_path, data_dir, capsys):
    with OpenAIServer(_handler) as srv:
        cfg = {
            "benchmark": "locomo", "data_dir": str(data_dir),
            "subset": {"max_conversations": 1, "per_category": 1, "seed": 3},
            "methods": ["bm25-turns", "full-context"],
            "answer": {"llm": {"backend": "openai", "model": "answerer", "base_url": srv.base_url, "cache": False}},
            "judge": {"enabled": True, "repeats": 1,
                      "llm": {"backend": "openai", "model": "judge", "base_url": srv.base_url, "cache": False}},
            "bootstrap_resamples": 300, "output_dir": str(tmp_path / "results"),
        }
        path = tmp_path / "eval.yaml"
        path.write_text(yaml.safe_dump(cfg))
        assert main(["--config", str(path), "k=5", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "| bm25-turns | **overall (1-4)** | 4 |" in out
    assert "| full-context | 5 adversarial (abstention accuracy) | 1 |" in out
    runs = list((tmp_path / "results" / "locomo").iterdir())  # <output_dir>/<benchmark>/<run>
    assert len(runs) == 1
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert summary["k"] == 5 and list(summary["methods"]) == ["bm25-turns", "full-context"]
    fc = summary["methods"]["full-context"]
    # "not mentioned" is right only for the adversarial question, by the official rule and by the judge
    assert fc["abstention"]["f1_locomo"]["mean"] == 1.0 and fc["overall"]["f1_locomo"]["mean"] == 0.0
    assert fc["abstention"]["judge"]["mean"] == 1.0 and fc["overall"]["judge"]["mean"] == 0.0
    recs = list(read_jsonl(runs[0] / "predictions.jsonl"))
    assert len(recs) == 10 and {r["category"] for r in recs} == {"1", "2", "3", "4", "5"}
    assert all(r["gold_turn_ids"] for r in recs if r["category"] != "5")
    assert all(r["qid"] == f"{r['conversation_id']}/{r['question_id']}" for r in recs)
    assert yaml.safe_load((runs[0] / "config.yaml").read_text())["k"] == 5


def test_bad_config_is_reported_with_file_and_key(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("benchmark: locomo\nmethodz: [dense-turns]\n")
    assert main(["--config", str(p)]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "methodz" in err


def test_retrieval_task_is_dispatched_to_the_retrieval_harness(tmp_path, capsys):
    p = tmp_path / "r.yaml"
    p.write_text("task: retrieval\nnot_a_field: 1\n")
    assert main(["--config", str(p)]) == 2
    assert "RetrievalBenchConfig" in capsys.readouterr().err  # its own config class read the file


@pytest.mark.parametrize("task,old,new", [("qa", "naive-rag", "dense-turns"), ("qa", "qgmem", "qgmem-graph-token"),
                                          ("retrieval", "qgmem", "qgmem-activation"),
                                          ("retrieval", "naive-rag", "dense-turns")])
def test_an_old_method_name_fails_at_load_naming_the_new_one(tmp_path, capsys, task, old, new):
    p = tmp_path / "old.yaml"
    p.write_text(f"task: {task}\nmethods: [{old}]\n")
    assert main(["--config", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"'{old}' was renamed: use '{new}'" in err
    assert not (tmp_path / "results").exists()


def test_bad_method_options_fail_at_load_naming_the_key(tmp_path, capsys):
    p = tmp_path / "opts.yaml"
    p.write_text("methods: [anchormem]\nmethod_options:\n  anchormem: {tua: 0.9}\n")
    assert main(["--config", str(p)]) == 2
    assert "method_options.anchormem.tua" in capsys.readouterr().err
    p.write_text("task: retrieval\nmethods: [dense-turns]\nmethod_options:\n  full-context: {max_context_tokens: lots}\n")
    assert main(["--config", str(p)]) == 2
    assert "method_options.full-context.max_context_tokens: expected int" in capsys.readouterr().err


@pytest.mark.parametrize("task", ["qa", "retrieval"])
def test_unreadable_data_is_one_line_and_the_run_is_marked_failed(tmp_path, capsys, task):
    """A benchmark file that is not UTF-8: exit 2 naming the file, no traceback, run folder not left running."""
    (tmp_path / "data" / "locomo").mkdir(parents=True)
    (tmp_path / "data" / "locomo" / "locomo10.json").write_bytes(b'[{"sample_id": "c\xff"}]')
    p = tmp_path / "e.yaml"
    p.write_text(yaml.safe_dump({"task": task, "benchmark": "locomo", "data_dir": str(tmp_path / "data"),
                                 "methods": ["bm25-turns"], "output_dir": str(tmp_path / "results")}))
    assert main(["--config", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "locomo10.json" in err[0] and "not UTF-8 text" in err[0] and "Traceback" not in err[0]
    (run,) = (tmp_path / "results" / "locomo").iterdir()
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "failed" and "not UTF-8" in meta["error"]


def test_negative_subset_counts_are_refused(tmp_path, capsys):
    p = tmp_path / "neg.yaml"
    p.write_text("benchmark: locomo\nmethods: [dense-turns]\n")
    assert main(["--config", str(p), "subset.per_category=-5"]) == 2
    assert "subset: counts must be whole numbers >= 0 (0 = all), got {'per_category': -5}" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(str(p) for p in
                                        (__import__("pathlib").Path(__file__).parents[1] / "configs" / "eval").glob("*.yaml")))
def test_every_shipped_eval_config_loads(path):
    from qgmem.config import load_config, read_yaml
    from qgmem.evaluation.config import EvalConfig
    from qgmem.evaluation.retrieval import load_retrieval_config

    if read_yaml(path).get("task", "qa") == "retrieval":
        load_retrieval_config(path, [])
    else:
        load_config(EvalConfig, path, [])
