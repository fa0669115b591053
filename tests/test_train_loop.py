"""The training loop on a tiny frozen LM and a tiny prepared set: it learns, it resumes exactly,
its accumulation is real, and it refuses to train LLM weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from qgmem.training.prepared import save_prepared
from qgmem.training.config import TrainConfig
from qgmem.training.examples import shuffled_graphs
from qgmem.training.trainer import train
from qgmem.config import load_config
from qgmem.testing.tiny_models import make_tiny

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]
DIM = 16


def _vec(word: str) -> list[float]:
    g = torch.Generator().manual_seed(sum(ord(c) * 31 ** i for i, c in enumerate(word)) % (2 ** 31))
    v = torch.randn(DIM, generator=g)
    return (v / v.norm()).tolist()


def _row(i: int, split: str) -> dict:
    """Synthetic example: the answer (a colour) is carried only by the graph edge item -has_colour-> colour."""
    colour = COLOURS[i % len(COLOURS)]
    item = f"item{i % 40}"
    return {
        "id": f"ex{i}", "conversation_id": f"c{i}", "split": split,
        "question": f"what is the secret colour of {item} ?", "question_time": "", "category": "x",
        "answer": colour, "answers": [colour], "evidence": [],
        "memory_text": f"[m1] the secret colour of {item} is in the graph .",
        "labels": ["M1"], "item_texts": [f"secret colour of {item}"], "item_turn_ids": [["D1:1"]],
        "x": [_vec(item), _vec(colour)], "edge_index": [[0, 1]], "edge_attr": [_vec("has_colour")],
        "node_text": [item, colour], "edge_text": ["has_colour"], "edge_labels": ["M1"], "num_nodes": 2,
    }


@pytest.fixture(autouse=True)
def _fresh_accelerate_state():
    """`accelerate` keeps process-wide singletons; each run in this process starts clean. One torch
    thread: the tiny model is 10x faster that way on a shared 2-core machine."""
    from accelerate.state import AcceleratorState, GradientState

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory) -> tuple[Path, Path]:
    """(tiny LLM folder, prepared dir) shared by the tests of this module."""
    root = tmp_path_factory.mktemp("train")
    llm, tok = make_tiny("qwen3", seed=0, hidden=32)
    llm_dir = root / "llm"
    llm.save_pretrained(llm_dir)
    tok.save_pretrained(llm_dir)
    rows = {"train": [_row(i, "train") for i in range(24)],
            "val": [_row(100 + i, "val") for i in range(6)],
            "test": [_row(200 + i, "test") for i in range(6)]}
    # the prepare config the set was built with: the trainer copies its graph/k/retrieval settings into checkpoints
    prepare = {"dataset": "synthetic", "graph": {"max_edges": 3, "rank_feature": False, "time_feature": False},
               "retrieval": {"k": 6, "embedder": "hash"}}
    save_prepared(rows, root / "prepared", prepare, DIM, DIM)
    return llm_dir, root / "prepared"


def _cfg(llm_dir: Path, prepared: Path, out: Path, *overrides: str) -> TrainConfig:
    base = [
        f"output_dir={out}", f"model.name={llm_dir}", f"data.dir={prepared}",
        "data.max_length=160", "encoder.hidden=32", "encoder.heads=2", "encoder.projector_hidden=64",
        "encoder.dropout=0.1", "optim.lr=3e-3", "optim.warmup_steps=2", "optim.batch_size=4",
        "optim.eval_batch_size=6", "eval.every=5", "save_every=5", "progress=false", "eval.test_gen_examples=2",
        "eval.max_new_tokens=4",
    ]
    return load_config(TrainConfig, None, base + list(overrides))


def _trainable(out: Path) -> dict[str, torch.Tensor]:
    return load_file(str(out / "last" / "trainable.safetensors"))


def test_loss_decreases_and_report(tiny_setup, tmp_path):
    llm_dir, prepared = tiny_setup
    out = tmp_path / "run"
    rep = train(_cfg(llm_dir, prepared, out, "optim.max_steps=20", "eval.every=5", "optim.lr=1e-2"))
    # held-out answer loss goes down from the untrained encoder (step 0) and keeps the best
    val = [h["val_loss"] for h in rep["history"] if "val_loss" in h]
    assert len(val) == 5 and rep["history"][0]["step"] == 0
    assert min(val[1:]) < val[0] - 1e-3, val
    assert rep["best"]["val_loss"] == min(val) and rep["best"]["step"] > 0
    # checkpoint + report artefacts
    assert (out / "best" / "model.safetensors").exists() and (out / "best" / "qgmem_config.json").exists()
    assert json.loads((out / "best" / "val_metrics.json").read_text())["val_loss"] == min(val)
    saved = json.loads((out / "report.json").read_text())
    assert saved["steps"] == 20 and saved["parameters"]["trainable"] > 0
    t = saved["test"]
    assert t["n"] == 6 and t["n_generated"] == 2
    for cond in ("graph+text", "shuffled graph+text", "text only", "graph only", "shuffled graph only"):
        assert math.isfinite(t[cond]["loss"]) and 0.0 <= t[cond]["f1"] <= 1.0 and len(t[cond]["samples"]) == 2
        assert len(t[cond]["example_loss"]) == 6 and len(t[cond]["example_f1"]) == 2
    # the controls really differ from the trained condition
    for cond in ("text only", "shuffled graph+text", "graph only"):
        assert t["graph+text"]["loss"] != t[cond]["loss"]
    # paired differences: the mean is the mean per-example difference, inside its interval
    d = t["differences"]["shuffled graph+text"]["loss"]
    per = [a - b for a, b in zip(t["shuffled graph+text"]["example_loss"], t["graph+text"]["example_loss"])]
    assert d["n"] == 6 and abs(d["mean"] - sum(per) / 6) < 1e-9 and d["low"] <= d["mean"] <= d["high"]
    md = (out / "report.md").read_text()
    assert "| graph+text |" in md and "| graph only |" in md and "95% CI" in md
    # only trainable weights are checkpointed: no LLM tensor in best/
    names = load_file(str(out / "best" / "model.safetensors")).keys()
    assert names and all(n.startswith("graph_encoder.") for n in names)


def test_kill_and_resume_matches_uninterrupted(tiny_setup, tmp_path):
    llm_dir, prepared = tiny_setup
    common = ("optim.max_steps=8", "optim.batch_size=2", "optim.grad_accum=2", "save_every=2", "eval.every=4",
              "eval.test=false")  # 24 examples / (2 x 2) = 6 steps per epoch: the run crosses an epoch
    full = train(_cfg(llm_dir, prepared, tmp_path / "full", *common))
    assert full["steps"] == 8 and full["resumed_from"] == []

    stopped = train(_cfg(llm_dir, prepared, tmp_path / "killed", *common, "stop_after_steps=7"))
    assert stopped == {"stopped_at": 7}
    state = json.loads((tmp_path / "killed" / "last" / "trainer_state.json").read_text())
    assert state["step"] == 6  # the last save before the "kill"; step 7 is lost and redone
    # the resume state holds the trainable weights only, never a copy of the frozen LLM
    saved = {p.name for p in (tmp_path / "killed" / "last").iterdir()}
    assert "trainable.safetensors" in saved and "optimizer.bin" in saved and "model.safetensors" not in saved
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    resumed = train(_cfg(llm_dir, prepared, tmp_path / "killed", *common))
    assert resumed["resumed_from"] == [6] and resumed["steps"] == 8
    a, b = _trainable(tmp_path / "full"), _trainable(tmp_path / "killed")
    assert a.keys() == b.keys()
    for n in a:
        assert torch.equal(a[n], b[n]), n
    # the per-step losses after resuming are the uninterrupted run's
    la = {h["step"]: h["train_loss"] for h in full["history"] if "train_loss" in h}
    lb = {h["step"]: h["train_loss"] for h in resumed["history"] if "train_loss" in h}
    assert la == lb


@pytest.mark.parametrize("dies_at", [1, 2])
def test_a_kill_during_the_checkpoint_swap_never_restarts_from_step_0(tiny_setup, tmp_path, monkeypatch, dies_at):
    """Killed after `last` became `last.old` (1) or after `last.tmp` became `last` but before `last.old`
    was removed (2): the next run resumes from the newest complete copy, step 10."""
    import shutil

    llm_dir, prepared = tiny_setup
    out = tmp_path / "run"
    common = ("optim.max_steps=12", "eval.test=false")
    train(_cfg(llm_dir, prepared, out, *common, "stop_after_steps=5"))
    _reset_accelerate()

    class Killed(Exception):
        pass

    calls = {"rename": 0}
    real_rename, real_rmtree = Path.rename, shutil.rmtree

    def rename(self, target):
        if self.name == "last.tmp" and dies_at == 1:
            raise Killed()
        return real_rename(self, target)

    def rmtree(path, *a, **kw):
        if Path(path).name == "last.old" and Path(path).exists() and dies_at == 2:
            calls["rename"] += 1
            raise Killed()
        return real_rmtree(path, *a, **kw)

    monkeypatch.setattr(Path, "rename", rename)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    with pytest.raises(Killed):
        train(_cfg(llm_dir, prepared, out, *common, "stop_after_steps=10", "save_every=10"))
    monkeypatch.undo()
    _reset_accelerate()
    rep = train(_cfg(llm_dir, prepared, out, *common))
    assert rep["resumed_from"] == [5, 10] and rep["steps"] == 12  # the second run resumed at 5, this one at 10


def test_checkpoints_none_of_which_is_complete_are_an_error_not_a_fresh_start(tiny_setup, tmp_path):
    from qgmem.training.checkpoint import COMPLETE, CheckpointError

    llm_dir, prepared = tiny_setup
    out = tmp_path / "run"
    train(_cfg(llm_dir, prepared, out, "optim.max_steps=6", "eval.test=false", "stop_after_steps=5"))
    _reset_accelerate()
    (out / "last" / COMPLETE).unlink()
    with pytest.raises(CheckpointError, match="none is complete"):
        train(_cfg(llm_dir, prepared, out, "optim.max_steps=6", "eval.test=false"))


def test_gradient_accumulation_matches_large_batch(tiny_setup, tmp_path):
    """2 micro-batches of 2 accumulate to exactly one batch of 4 (equal answer lengths, dropout off)."""
    llm_dir, prepared = tiny_setup
    common = ("optim.max_steps=3", "encoder.dropout=0.0", "eval.test=false", "eval.every=100")
    acc = train(_cfg(llm_dir, prepared, tmp_path / "acc", *common, "optim.batch_size=2", "optim.grad_accum=2"))
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    big = train(_cfg(llm_dir, prepared, tmp_path / "big", *common, "optim.batch_size=4", "optim.grad_accum=1"))
    assert acc["steps"] == big["steps"] == 3
    a, b = _trainable(tmp_path / "acc"), _trainable(tmp_path / "big")
    for n in a:
        assert torch.allclose(a[n], b[n], atol=1e-5, rtol=1e-4), n


def _reset_accelerate() -> None:
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


def test_accumulation_is_token_weighted_when_answers_differ_in_length(tiny_setup, tmp_path):
    """Answers of 1 and of 6 tokens: 4 micro-batches of 1 give the gradient of one batch of 4, i.e. the
    mean over all answer tokens, not the mean of per-micro-batch means."""
    llm_dir, _ = tiny_setup
    rows = {"train": [_row(i, "train") for i in range(8)], "val": [_row(100, "val")], "test": []}
    for i, r in enumerate(rows["train"]):
        if i % 4 == 0:
            r["answer"] = r["answers"][0] = " ".join([r["answer"]] * 6)
    prepare = {"dataset": "synthetic", "graph": {"max_edges": 3}, "retrieval": {"k": 6, "embedder": "hash"}}
    save_prepared(rows, tmp_path / "prepared", prepare, DIM, DIM)
    common = ("optim.max_steps=2", "encoder.dropout=0.0", "eval.test=false", "eval.every=100", "optim.clip=0",
              f"data.dir={tmp_path / 'prepared'}")
    acc = train(_cfg(llm_dir, tmp_path, tmp_path / "acc", *common, "optim.batch_size=1", "optim.grad_accum=4"))
    _reset_accelerate()
    big = train(_cfg(llm_dir, tmp_path, tmp_path / "big", *common, "optim.batch_size=4", "optim.grad_accum=1"))
    assert acc["steps"] == big["steps"] == 2
    assert [h["train_loss"] for h in acc["history"][1:]] == pytest.approx([h["train_loss"] for h in big["history"][1:]],
                                                                          rel=1e-4)
    a, b = _trainable(tmp_path / "acc"), _trainable(tmp_path / "big")
    for n in a:
        assert torch.allclose(a[n], b[n], atol=1e-5, rtol=1e-4), n


def test_llm_weights_cannot_train(tiny_setup, tmp_path, monkeypatch):
    from qgmem.model import graph_token_lm

    orig = graph_token_lm.GraphTokenLM.__init__

    def leaky(self, *a, **kw):
        orig(self, *a, **kw)
        self.llm.get_output_embeddings().weight.requires_grad_(True)

    monkeypatch.setattr(graph_token_lm.GraphTokenLM, "__init__", leaky)
    llm_dir, prepared = tiny_setup
    with pytest.raises(RuntimeError, match="LLM parameters would train"):
        train(_cfg(llm_dir, prepared, tmp_path / "leak", "optim.max_steps=1"))


def test_shuffled_graphs_is_a_derangement():
    from dataclasses import dataclass

    @dataclass
    class E:
        id: str
        graph: object

    exs = [E(str(i), object()) for i in range(7)]
    sh = shuffled_graphs(exs, seed=3)
    assert [e.id for e in sh] == [e.id for e in exs]
    assert all(s.graph is not e.graph for s, e in zip(sh, exs))
    assert {id(s.graph) for s in sh} == {id(e.graph) for e in exs}
    assert [id(s.graph) for s in shuffled_graphs(exs, seed=3)] == [id(s.graph) for s in sh]


def test_lora_option_trains_adapters_only(tiny_setup, tmp_path):
    llm_dir, prepared = tiny_setup
    out = tmp_path / "lora"
    rep = train(_cfg(llm_dir, prepared, out, "optim.max_steps=2", "eval.test=false", "model.lora.enabled=true",
                     "model.lora.r=4", "model.lora.target_modules=[q_proj,v_proj]"))
    assert rep["steps"] == 2
    names = set(load_file(str(out / "best" / "model.safetensors")))
    lora = {n for n in names if "lora_" in n}
    assert lora and all(("q_proj" in n or "v_proj" in n) for n in lora)
    assert names - lora and all(n.startswith("graph_encoder.") for n in names - lora)
    assert json.loads((out / "best" / "qgmem_config.json").read_text())["lora"]["r"] == 4


def test_setup_follows_the_config_checkpointing_ddp_and_lora_dropout(tiny_setup, tmp_path):
    """gradient_checkpointing comes from the config; DDP does not search for unused parameters; in
    training mode the LoRA dropout is active while the frozen LLM's own modules stay in eval mode."""
    from qgmem.training.trainer import setup

    llm_dir, prepared = tiny_setup
    run = setup(_cfg(llm_dir, prepared, tmp_path / "s", "model.gradient_checkpointing=true", "model.lora.enabled=true",
                     "model.lora.dropout=0.5", "optim.max_steps=1"))
    m = run.accelerator.unwrap_model(run.model)
    assert m.gradient_checkpointing is True
    assert run.accelerator.ddp_handler is not None and run.accelerator.ddp_handler.find_unused_parameters is False
    m.train()
    drops = [mod for name, mod in m.llm.named_modules() if name.endswith("lora_dropout.default")]
    assert drops and all(d.training for d in drops)
    assert not m.llm.get_input_embeddings().training
    batch = run.collator([run.train_ds[0]])
    with torch.no_grad():
        a, b = m(batch).loss, m(batch).loss
    assert not torch.equal(a, b), "LoRA dropout fires while training"
    m.eval()
    with torch.no_grad():
        assert torch.equal(m(batch).loss, m(batch).loss)


def test_one_data_loader_serves_every_epoch(tiny_setup, tmp_path, monkeypatch):
    from accelerate import Accelerator

    prepared_loaders = []
    real = Accelerator.prepare_data_loader
    monkeypatch.setattr(Accelerator, "prepare_data_loader",
                        lambda self, *a, **kw: prepared_loaders.append(1) or real(self, *a, **kw))
    llm_dir, prepared = tiny_setup
    rep = train(_cfg(llm_dir, prepared, tmp_path / "e", "optim.epochs=3", "optim.batch_size=8", "eval.test=false",
                     "eval.every=3"))  # 9 steps: validated 3 times, as a schedule by epochs must be
    assert rep["steps"] == 9 and len(prepared_loaders) == 1


def test_missing_prepared_set_names_the_prepare_command(tiny_setup, tmp_path):
    llm_dir, _ = tiny_setup
    cfg = _cfg(llm_dir, tmp_path / "nothing", tmp_path / "run", "data.prepare=configs/prepare/longmemeval_s_cpu.yaml")
    with pytest.raises(FileNotFoundError) as err:
        train(cfg)
    assert str(err.value).endswith(
        f"qgmem prepare --config configs/prepare/longmemeval_s_cpu.yaml --out {tmp_path / 'nothing'}")
    assert not (tmp_path / "nothing").exists()  # training never prepares in-line


def test_checkpoint_carries_the_prepared_settings(tiny_setup, tmp_path):
    """Graph, k and retrieval settings come from prepare_meta.json into best/ (what inference reads)."""
    from qgmem.pipeline import inference_settings

    llm_dir, prepared = tiny_setup
    out = tmp_path / "run"
    train(_cfg(llm_dir, prepared, out, "optim.max_steps=1", "eval.test=false"))
    meta = json.loads((prepared / "prepare_meta.json").read_text())
    saved = json.loads((out / "best" / "qgmem_config.json").read_text())
    assert saved["extra"]["prepare"] == meta["config"]
    st = inference_settings(saved["extra"]["prepare"])
    assert st.k == 6 and st.inputs.graph.max_edges == 3 and saved["graph"]["max_edges"] == 3
    assert (saved["encoder"]["node_dim"], saved["encoder"]["edge_dim"]) == (DIM, DIM)


@pytest.mark.parametrize("name", ["smollm2_cpu", "qwen3_8b_convomem", "llama31_8b_convomem"])
def test_train_yamls_name_one_prepare_config(name):
    from qgmem.training.config import load_train_config
    from qgmem.training.prepare import config_from_file

    root = Path(__file__).resolve().parents[1]
    path = root / "configs" / "train" / f"{name}.yaml"
    cfg = load_train_config(str(path))
    assert cfg.data.prepare and (root / cfg.data.prepare).exists()
    prep, out = config_from_file(str(path), [])  # what `qgmem prepare --config <train yaml>` runs
    assert out == cfg.data.dir and prep.retrieval.k == 10 and prep.graph.max_edges == 10
    assert config_from_file(str(path), ["retrieval.k=5"])[0].retrieval.k == 5
    backbone = "smollm2" if name.startswith("smollm2") else name.replace("_convomem", "")
    model = root / "configs" / "model" / f"{backbone}.yaml"
    assert load_train_config(str(path), str(model)).data == cfg.data
