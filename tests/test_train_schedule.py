"""A schedule that follows the data: warm-up, validation and saves as fractions of the total steps, the
step counts printed before training (and by ``--estimate-only``), and the config check that refuses a
schedule that never leaves warm-up, validates fewer than 3 times or saves ``last/`` too rarely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from qgmem.config import ConfigError, load_config
from qgmem.testing.tiny_models import make_tiny
from qgmem.training.config import TrainConfig, load_train_config, validate_config
from qgmem.training.prepared import save_prepared
from qgmem.training.schedule import check_schedule, plan_schedule
from qgmem.training.trainer import main as train_main
from qgmem.training.trainer import train

ROOT = Path(__file__).resolve().parents[1]
BEFORE = ROOT / "tests/fixtures/train_configs/qwen3_8b_convomem_before_issue23.yaml"
PAPER = {"qwen3": ROOT / "configs/train/qwen3_8b_convomem.yaml",
         "llama": ROOT / "configs/train/llama31_8b_convomem.yaml"}
DIM = 8


def _refusal(cfg: TrainConfig) -> str:
    with pytest.raises(ConfigError) as e:
        validate_config(cfg)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_todays_paper_config_is_refused_in_one_line():
    """The Qwen3 config as it was, for the run it was written for (the corrected config's plan: 1,307 train
    examples, 8 GPUs, its step time): 63 steps, validation at 50 and 63 only, last/ only at the end."""
    plan = load_train_config(str(PAPER["qwen3"])).plan
    cfg = load_train_config(str(BEFORE), overrides=[f"plan.train_examples={plan.train_examples}",
                                                    f"plan.processes={plan.processes}",
                                                    f"plan.step_seconds={plan.step_seconds}"])
    msg = _refusal(cfg)
    assert msg.startswith("eval.every: validation runs 2 time(s) after step 0 (steps [50, 63]) in 63 optimizer steps")
    # the count (one QA pair per evidence item: at most 960 train examples -> 45 steps): warm-up 50
    msg = _refusal(load_train_config(str(BEFORE), overrides=["plan.train_examples=960", "plan.processes=8"]))
    assert msg.startswith("optim.warmup_steps: a warm-up of 50 steps reaches the total of 45 optimizer steps")


@pytest.mark.parametrize("name", sorted(PAPER))
def test_paper_configs_pass_and_print_their_steps(name, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = load_train_config(str(PAPER[name]))
    validate_config(cfg)
    s = plan_schedule(cfg, cfg.plan.train_examples, cfg.plan.processes, "plan.train_examples")
    assert (s.micro_per_epoch, s.steps_per_epoch, s.total_steps) == (82, 21, 63)
    assert (s.warmup_steps, s.eval_every, s.save_every, len(s.validations)) == (3, 6, 6, 11)
    assert train_main(["--config", str(PAPER[name]), "--estimate-only"]) == 0
    out = capsys.readouterr().out
    assert ("schedule: 1,307 train examples (plan.train_examples) | 8 process(es) x batch_size 2 x grad_accum 4 = "
            "64 examples per optimizer step") in out
    assert "steps per epoch 21 x 3 epochs = 63 optimizer steps | warm-up 3 (optim.warmup_fraction 0.05)" in out
    assert "validation every 6 steps: 11 times" in out and "memory estimate per GPU" in out


def test_fractions_integers_and_defaults():
    cfg = load_config(TrainConfig, None, ["optim.epochs=2", "optim.batch_size=4", "optim.grad_accum=2",
                                          "optim.warmup_fraction=0.1", "eval.every_fraction=0.25",
                                          "save_every_fraction=0.5"])
    s = plan_schedule(cfg, 100, 2, "test")  # 13 micro-batches per process -> 7 steps per epoch, 14 in all
    assert (s.micro_per_epoch, s.steps_per_epoch, s.total_steps) == (13, 7, 14)
    assert (s.warmup_steps, s.eval_every, s.save_every) == (1, 4, 7) and s.validations == [4, 8, 12, 14]
    ints = load_config(TrainConfig, None, ["optim.warmup_steps=2", "eval.every=3", "save_every=5"])
    s = plan_schedule(ints, 100, 1, "test")  # 25 micro-batches, 25 steps
    assert (s.total_steps, s.warmup_steps, s.eval_every, s.save_every) == (25, 2, 3, 5)
    s = plan_schedule(TrainConfig(), 1000, 1, "test")  # neither stated: the old defaults
    assert (s.total_steps, s.warmup_steps, s.eval_every, s.save_every) == (250, 10, 50, 50)
    # the CPU demo configs keep their integer cadences
    for name in ("smollm2_cpu", "smollm2_graph_experiment"):
        validate_config(load_train_config(str(ROOT / f"configs/train/{name}.yaml")))


@pytest.mark.parametrize("overrides, start", [
    (["optim.warmup_steps=5", "optim.warmup_fraction=0.05"], "optim.warmup_steps (5) and optim.warmup_fraction"),
    (["eval.every=5", "eval.every_fraction=0.1"], "eval.every (5) and eval.every_fraction (0.1) are both stated"),
    (["save_every=5", "save_every_fraction=0.1"], "save_every (5) and save_every_fraction (0.1) are both stated"),
    (["optim.warmup_fraction=1.0"], "optim.warmup_fraction: expected a fraction of the total steps in [0, 1)"),
    (["eval.every_fraction=0"], "eval.every_fraction: expected a fraction of the total steps in (0, 1]"),
    (["eval.every=0"], "eval.every: expected an integer >= 1"),
    (["plan.step_seconds=-1"], "plan.step_seconds: expected a positive number"),
    (["save_minutes=0"], "save_minutes: expected a positive number"),
])
def test_bad_cadences_are_one_line(overrides, start):
    assert _refusal(load_config(TrainConfig, None, overrides)).startswith(start)


def test_save_cadence_against_expected_wall_time():
    base = ["optim.epochs=1", "optim.batch_size=1", "optim.warmup_steps=1", "eval.every=10", "save_every=20",
            "plan.train_examples=100", "plan.step_seconds=120"]  # 100 steps; last/ every 20 x 2 min = 40 min
    msg = _refusal(load_config(TrainConfig, None, base))
    assert msg.startswith("save_every: last/ is written every 20 steps, 40 minutes at plan.step_seconds=120")
    assert msg.endswith("set save_every<=15")
    validate_config(load_config(TrainConfig, None, base + ["save_every=15"]))
    validate_config(load_config(TrainConfig, None, base + ["save_minutes=45"]))
    validate_config(load_config(TrainConfig, None, base[:-1]))  # no step time stated: not checked


def test_max_steps_runs_are_printed_not_refused():
    cfg = load_config(TrainConfig, None, ["optim.max_steps=2", "eval.every=100", "plan.train_examples=10"])
    validate_config(cfg)  # a smoke run of fixed length
    check_schedule(cfg, plan_schedule(cfg, 10, 1, "test"))


# -- through the real trainer ------------------------------------------------------------------

def _row(i: int, split: str) -> dict:
    g = torch.Generator().manual_seed(i)
    return {"id": f"ex{i}", "conversation_id": f"c{i}", "split": split, "question": f"what is item {i} ?",
            "question_time": "", "category": "x", "answer": "red", "answers": ["red"], "evidence": [],
            "memory_text": f"[m1] item {i} is red .", "labels": ["M1"], "item_texts": ["item"],
            "item_turn_ids": [["D1:1"]], "x": torch.randn(2, DIM, generator=g).tolist(), "edge_index": [[0, 1]],
            "edge_attr": torch.randn(1, DIM, generator=g).tolist(), "node_text": ["item", "red"],
            "edge_text": ["is"], "edge_labels": ["M1"], "num_nodes": 2}


@pytest.fixture(scope="module")
def tiny_run_setup(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("schedule")
    llm, tok = make_tiny("qwen3", seed=0, hidden=32)
    llm.save_pretrained(root / "llm")
    tok.save_pretrained(root / "llm")
    rows = {"train": [_row(i, "train") for i in range(24)], "val": [_row(100 + i, "val") for i in range(4)],
            "test": []}
    prepare = {"dataset": "synthetic", "graph": {"max_edges": 3, "rank_feature": False, "time_feature": False},
               "retrieval": {"k": 4, "embedder": "hash"}}
    save_prepared(rows, root / "prepared", prepare, DIM, DIM)
    return root / "llm", root / "prepared"


def _reset_accelerate() -> None:
    """`accelerate` keeps process-wide singletons; each run in this process starts clean."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


@pytest.fixture
def fresh_accelerate():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tiny model is much faster on one thread of a shared machine
    _reset_accelerate()
    yield
    _reset_accelerate()
    torch.set_num_threads(threads)


def _overrides(llm: Path, prepared: Path, out: Path) -> list[str]:
    # 24 examples / batch 4 = 6 micro-batches / grad_accum 2 = 3 steps per epoch, 6 in 2 epochs
    return [f"output_dir={out}", f"model.name={llm}", f"data.dir={prepared}", "data.max_length=200",
            "encoder.hidden=16", "encoder.heads=2", "encoder.projector_hidden=32", "optim.epochs=2",
            "optim.batch_size=4", "optim.grad_accum=2", "optim.warmup_fraction=0.2", "eval.every_fraction=0.34",
            "save_every_fraction=0.5", "eval.test=false", "progress=false", "optim.eval_batch_size=4"]


def test_trainer_follows_the_printed_schedule(tiny_run_setup, tmp_path, capsys, fresh_accelerate):
    llm, prepared = tiny_run_setup
    out = tmp_path / "run"
    rep = train(load_config(TrainConfig, None, _overrides(llm, prepared, out) + ["stop_after_steps=5"]))
    printed = capsys.readouterr().out
    assert "schedule: 24 train examples (prepared set) | 1 process(es) x batch_size 4 x grad_accum 2 = 8" in printed
    assert "steps per epoch 3 x 2 epochs = 6 optimizer steps | warm-up 1 (optim.warmup_fraction 0.2)" in printed
    assert "validation every 2 steps: 3 times (steps 2..6) | last/ every 3 steps" in printed
    assert rep == {"stopped_at": 5}
    assert json.loads((out / "last" / "trainer_state.json").read_text())["step"] == 3  # saved at 3, not 4 or 5
    _reset_accelerate()
    rep = train(load_config(TrainConfig, None, _overrides(llm, prepared, out)))  # resumes at 3, runs to 6
    assert rep["steps"] == 6 and rep["resumed_from"] == [3]
    assert [h["step"] for h in rep["history"] if "val_loss" in h] == [0, 2, 4, 6]
    lrs = {h["step"]: h["lr"] for h in rep["history"] if "lr" in h}
    assert lrs[1] == pytest.approx(1e-4) and lrs[6] == pytest.approx(1e-5)  # warm-up 1, cosine to min_lr_ratio


def test_trainer_refuses_before_loading_the_llm(tiny_run_setup, tmp_path, capsys, fresh_accelerate):
    llm, prepared = tiny_run_setup
    bad = _overrides(tmp_path / "no-such-llm", prepared, tmp_path / "run") + ["eval.every_fraction=0.5"]
    assert train_main(["--config", str(ROOT / "configs/train/smollm2_cpu.yaml"), *bad, "eval.every=null",
                       "save_every=null", "optim.warmup_steps=null"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("train.py: eval.every_fraction: validation runs 2 time(s) after step 0 (steps [3, 6]) in 6")
    assert "\n" not in err and not (tmp_path / "run").exists()


def test_estimate_only_counts_the_prepared_set(tmp_path, capsys, monkeypatch):
    """With the prepared set in place, --estimate-only schedules its real train count, not the plan's."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    save_prepared({"train": [_row(i, "train") for i in range(100)], "val": [_row(500, "val")], "test": []},
                  tmp_path / "prep", {"dataset": "synthetic"}, DIM, DIM)
    args = ["--config", str(PAPER["qwen3"]), "--estimate-only", f"data.dir={tmp_path / 'prep'}"]
    assert train_main(args) == 0
    out = capsys.readouterr().out  # 100 / (8 x 2) = 7 micro-batches -> 2 steps per epoch, 6 in 3 epochs
    assert f"schedule: 100 train examples (prepared set {tmp_path / 'prep'})" in out
    assert "steps per epoch 2 x 3 epochs = 6 optimizer steps | warm-up 0 (optim.warmup_fraction 0.05)" in out
    assert "(planned for 1,307 train examples on 8 process(es); the schedule follows the real counts)" in out
    assert train_main(args + ["optim.epochs=1"]) == 2  # 2 steps cannot be validated 3 times
    assert "eval.every_fraction: validation runs 2 time(s)" in capsys.readouterr().err
