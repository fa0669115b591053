"""Inference parity: one (question, store, checkpoint) gives one set of graph tokens, in training's
`validate`, in the `qgmem-graph-token` method that `evaluate.py` runs from a *_checkpoint.yaml, and in
`MemoryPipeline.from_pretrained(...).answer`; a checkpoint is served in the dtype it was trained in, on
the best device available.

The tokens are caught where the model makes them (a hook on the graph encoder) while each path runs
for real: the trainer's `validate` on the prepared set, the method's `answer`, the pipeline's `answer`.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch

from qgmem.config import load_config
from qgmem.model.graph_token_lm import CONFIG_NAME, GraphTokenLM
from qgmem.pipeline import MemoryPipeline
from qgmem.testing.tiny_models import make_tiny
from qgmem.training.config import TrainConfig
from qgmem.training.prepare import PrepareConfig, prepare_dataset

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def _fresh_accelerate_state():
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(True)
    GradientState._reset_state()


def _conversations(base) -> list:
    """Three copies of the tiny conversation under other ids: one each for train, val and test."""
    convs = []
    for i in range(3):
        c = copy.deepcopy(base)
        c.id = f"conv-{i}"
        for q in c.questions:
            q.id, q.conversation_id = f"{c.id}:{q.id}", c.id
        convs.append(c)
    return convs


def _train_cfg(llm_dir: Path, prep: Path, out: Path) -> TrainConfig:
    return load_config(TrainConfig, None, [
        f"output_dir={out}", f"model.name={llm_dir}", f"data.dir={prep}", "data.max_length=400",
        "encoder.hidden=32", "encoder.heads=2", "encoder.projector_hidden=64", "encoder.dropout=0.1",
        "optim.lr=3e-3", "optim.warmup_steps=1", "optim.batch_size=2", "optim.eval_batch_size=2",
        "optim.max_steps=3", "eval.every=1", "save_every=1", "eval.test=false", "eval.gen_examples=0",
        "progress=false"])


class Catch:
    """Every output of the model's graph encoder while active (the tokens a path really used)."""

    def __init__(self, model: GraphTokenLM):
        self.model, self.out = model, []

    def __enter__(self) -> list[torch.Tensor]:
        self.h = self.model.graph_encoder.register_forward_hook(lambda m, a, o: self.out.append(o.detach().cpu()))
        return self.out

    def __exit__(self, *exc: object) -> None:
        self.h.remove()


@pytest.fixture
def trained(tiny_conversation, tmp_path):
    """(prepared set, training output dir with best/, train config, val questions): the real
    `qgmem prepare` on three conversations, then three steps of the real trainer."""
    from qgmem.training.trainer import train

    llm, tok = make_tiny("qwen3", seed=0, hidden=32)
    llm.save_pretrained(tmp_path / "llm")
    tok.save_pretrained(tmp_path / "llm")
    convs = _conversations(tiny_conversation)
    pcfg = load_config(PrepareConfig, None, ["dataset=fixture", "retrieval.rerank.kind=none", "retrieval.k=4",
                                             "graph.max_edges=4", "split=[1,1,1]"])
    meta = prepare_dataset(pcfg, tmp_path / "prep", conversations=convs, progress=False)
    cfg = _train_cfg(tmp_path / "llm", tmp_path / "prep", tmp_path / "out")
    threads = torch.get_num_threads()
    try:
        train(cfg)
    finally:
        torch.set_num_threads(threads)
    (val_id,) = meta["conversations"]["val"]
    val_qs = [q for c in convs if c.id == val_id for q in c.questions]
    return tmp_path / "prep", tmp_path / "out", cfg, val_qs


def _validation_tokens(cfg: TrainConfig, out: Path) -> dict[str, torch.Tensor]:
    """Example id -> the graph tokens training's `validate` scores it with, for the weights in best/."""
    from accelerate.state import AcceleratorState, GradientState

    from qgmem.training.checkpoint import load_best_weights
    from qgmem.training.trainer import setup, validate

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    run = setup(cfg)
    model = run.accelerator.unwrap_model(run.model)
    assert load_best_weights(model, out)
    model.train()  # as during training: validate must switch to eval mode itself
    with Catch(model) as caught:
        validate(run, step=0)
    tokens = torch.cat(caught)[:len(run.val_examples)]  # eval_loss scores the examples in order
    return {ex.id: t for ex, t in zip(run.val_examples, tokens)}


def test_checkpoint_graph_tokens_equal_validation_tokens_in_every_path(trained) -> None:
    from qgmem.methods import make_method

    prep, out, cfg, val_qs = trained
    best = out / "best"
    val = _validation_tokens(cfg, out)
    assert set(val) == {q.id for q in val_qs} and len(val) == 3

    # 1. the checkpoint, loaded on its own, is in eval mode: two encodes of one graph are identical
    lm = GraphTokenLM.from_pretrained(best)
    assert not lm.training and not lm.graph_encoder.training and not lm.llm.training
    pipe = MemoryPipeline.from_pretrained(best, store_dir=prep / "store", device="cpu", max_new_tokens=3)
    graph = pipe.example(val_qs[0])[1].graph
    with torch.no_grad():
        a, b = lm.graph_encoder(Batch.from_data_list([graph])), lm.graph_encoder(Batch.from_data_list([graph]))
    assert torch.equal(a, b)

    # 2. MemoryPipeline.from_pretrained(...).answer reads validation's tokens (max abs difference 0)
    for q in val_qs:
        with Catch(pipe.model) as caught:
            pipe.answer(q)
        assert len(caught) == 1, q.id
        assert (caught[0][0] - val[q.id]).abs().max().item() == 0.0, q.id
        assert torch.equal(pipe.graph_tokens(q), val[q.id]), q.id
    pipe.close()

    # 3. the qgmem-graph-token method (what evaluate.py runs for a *_checkpoint.yaml) reads them too
    m = make_method("qgmem-graph-token", store=prep / "store", checkpoint=str(best), device="cpu")
    for q in val_qs:
        wm = m.activate(q)
        with Catch(m.pipeline.model) as caught:
            m.answer(q, wm, max_tokens=3)
        assert len(caught) == 1 and torch.equal(caught[0][0], val[q.id]), q.id
    m.pipeline.close()


def test_generate_runs_in_eval_mode_and_restores_the_mode() -> None:
    from test_model_graph_token_lm import example, make_lm

    lm = make_lm("qwen3", dropout=0.5)
    gen = lm.make_collator(256, mode="generate")([example(0, 3, None)])
    lm.train()
    seen = []
    h = lm.graph_encoder.register_forward_hook(lambda m, a, o: seen.append((m.training, o.detach())))
    texts = [lm.generate(gen, max_new_tokens=3) for _ in range(2)]
    h.remove()
    assert lm.training and lm.graph_encoder.training  # the caller's mode is back
    assert [t for t, _ in seen] == [False, False] and torch.equal(seen[0][1], seen[1][1])
    assert texts[0] == texts[1]


# -- dtype and device -----------------------------------------------------------------------------


def _checkpoint(tmp_path: Path, dtype: torch.dtype) -> Path:
    """A tiny checkpoint whose frozen LLM trained in `dtype` (what `save_best` writes) and whose base
    model folder holds weights in that dtype."""
    from qgmem.model.encoder import EncoderConfig

    llm, tok = make_tiny("llama", seed=1, hidden=32)
    llm = llm.to(dtype)
    llm.save_pretrained(tmp_path / "llm")
    tok.save_pretrained(tmp_path / "llm")
    lm = GraphTokenLM(llm, tok, EncoderConfig(node_dim=384, edge_dim=388, hidden=32, heads=2, projector_hidden=64),
                      base_model=str(tmp_path / "llm"), extra={"model_name": str(tmp_path / "llm"), "max_length": 400})
    return lm.save_pretrained(tmp_path / "ck")


def test_checkpoint_records_its_dtypes_and_bf16_is_served_in_bf16(tmp_path) -> None:
    ck = _checkpoint(tmp_path, torch.bfloat16)
    cfg = json.loads((ck / CONFIG_NAME).read_text())
    assert cfg["llm_dtype"] == "bfloat16" and cfg["encoder_dtype"] == "float32"
    pipe = MemoryPipeline.from_pretrained(ck, store_dir=tmp_path / "store", device="cpu")
    assert pipe.model.llm.get_input_embeddings().weight.dtype == torch.bfloat16
    assert pipe.model.graph_encoder.encoder.empty.dtype == torch.float32  # the encoder stays in float32
    assert not pipe.model.training
    pipe.close()
    # the caller may say otherwise
    pipe = MemoryPipeline.from_pretrained(ck, store_dir=tmp_path / "store", device="cpu", torch_dtype="float32")
    assert pipe.model.llm.get_input_embeddings().weight.dtype == torch.float32
    pipe.close()
    with pytest.raises(ValueError, match="torch_dtype: 'fp8' is not one of"):
        MemoryPipeline.from_pretrained(ck, store_dir=tmp_path / "store", device="cpu", torch_dtype="fp8")


def test_a_checkpoint_without_the_dtype_record_loads_in_float32_as_before(tmp_path) -> None:
    ck = _checkpoint(tmp_path, torch.bfloat16)  # base weights on disk in bf16
    cfg = json.loads((ck / CONFIG_NAME).read_text())
    del cfg["llm_dtype"], cfg["encoder_dtype"]
    (ck / CONFIG_NAME).write_text(json.dumps(cfg))
    for model in (MemoryPipeline.from_pretrained(ck, store_dir=tmp_path / "s", device="cpu").model,
                  GraphTokenLM.from_pretrained(ck)):
        assert model.llm.get_input_embeddings().weight.dtype == torch.float32
        assert not model.training


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_the_device_default_follows_what_is_available(tmp_path, monkeypatch, cuda, mps, expected) -> None:
    from qgmem.model.placement import best_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert best_device() == torch.device(expected)
    # the pipeline asks GraphTokenLM for that device (loaded for real on the CPU: this machine has no other)
    ck = _checkpoint(tmp_path, torch.float32)
    asked = []
    real = GraphTokenLM.from_pretrained.__func__

    def spy(cls, directory, **kw):
        asked.append(kw.get("device"))
        return real(cls, directory, **{**kw, "device": "cpu"})

    monkeypatch.setattr(GraphTokenLM, "from_pretrained", classmethod(spy))
    MemoryPipeline.from_pretrained(ck, store_dir=tmp_path / "store").close()
    MemoryPipeline.from_pretrained(ck, store_dir=tmp_path / "store", device="cpu").close()
    assert asked == [torch.device(expected), torch.device("cpu")]
