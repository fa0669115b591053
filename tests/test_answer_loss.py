"""Training keeps no full-vocabulary logits: `GraphTokenLM.forward` with labels runs the LM head on the
answer positions only, with the same loss and gradients as the full logits, and the memory estimate
counts what remains (batch x the longest answer of the prepared set, not batch x max_length)."""

from __future__ import annotations

import pytest
import torch

from qgmem.config import load_config
from qgmem.training.config import TrainConfig
from qgmem.training.memory import (ANSWER_PREFIX, answer_tokens_bound, estimate, model_shape,
                                   scored_positions)
from test_model_graph_token_lm import ARCHS, example, make_lm

pytestmark = pytest.mark.usefixtures("one_thread")


def _batch(lm):
    exs = [example(i, 1 + i % 3) for i in range(4)]
    for i, e in enumerate(exs):  # answers of different lengths: rows hold different numbers of answer tokens
        e.answer = " ".join(["red"] * (1 + 2 * i))
    return lm.make_collator(256)(exs)


def _grads(lm, out) -> dict[str, torch.Tensor]:
    lm.zero_grad()
    out.loss.backward()
    return {n: p.grad.clone() for n, p in lm.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("arch", ARCHS)
def test_answer_rows_give_the_loss_and_gradients_of_the_full_logits(arch) -> None:
    lm = make_lm(arch)
    lm.train()
    batch = _batch(lm)
    rows, full = lm(batch), lm(batch, return_logits=True)
    assert rows.logits is None and full.logits.shape[:2] == batch["input_ids"].shape
    assert torch.equal(rows.row_tokens, full.row_tokens) and int(rows.num_tokens) == int(full.num_tokens)
    assert torch.allclose(rows.row_loss_sum, full.row_loss_sum, rtol=1e-5, atol=1e-5)
    assert torch.allclose(rows.loss, full.loss, rtol=1e-6, atol=1e-6)
    g_rows, g_full = _grads(lm, rows), _grads(lm, full)
    assert g_rows.keys() == g_full.keys() and g_rows
    for n in g_rows:
        assert torch.allclose(g_rows[n], g_full[n], rtol=1e-4, atol=1e-6), n
    lm.use_graph = False  # the text-only control compacts the batch; the rows follow it
    a, b = lm(batch), lm(batch, return_logits=True)
    assert torch.allclose(a.loss, b.loss, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("arch", ARCHS)
def test_no_full_vocabulary_tensor_is_kept_for_backward(arch) -> None:
    lm = make_lm(arch)
    lm.train()
    batch = _batch(lm)
    b, length = batch["input_ids"].shape
    vocab = lm.llm.get_output_embeddings().weight.shape[0]
    answer = int((batch["labels"][:, 1:] != -100).sum())

    params = {p.untyped_storage().data_ptr() for p in lm.parameters()}

    def widest(**kw) -> int:
        """Elements of the largest non-parameter tensor with a vocabulary axis that autograd keeps."""
        sizes = [0]

        def pack(t: torch.Tensor) -> torch.Tensor:
            if t.shape[-1:] == (vocab,) and t.untyped_storage().data_ptr() not in params:
                sizes.append(t.numel())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            lm(batch, **kw)
        return max(sizes)

    assert widest(return_logits=True) >= b * (length - 1) * vocab  # the full logits are kept ...
    assert widest() == answer * vocab  # ... here only the answer rows


def test_estimate_counts_the_answer_rows_of_the_prepared_set() -> None:
    cfg = load_config(TrainConfig, "configs/train/qwen3_8b_convomem.yaml")
    shape = model_shape(cfg.model.name)  # offline: the shipped published config
    meta = {"answer_bytes_max": 40}
    a = answer_tokens_bound(meta)
    assert a == len(ANSWER_PREFIX) + 40 + 2 and answer_tokens_bound({}) is None and answer_tokens_bound(None) is None
    rows = estimate(cfg, shape, answer_tokens=a).rows["logits (full vocabulary, fp32 loss)"]
    full = estimate(cfg, shape).rows["logits (full vocabulary, fp32 loss)"]
    assert rows == cfg.optim.batch_size * a * shape.vocab * 14  # bf16 logits + fp32 copy, log-softmax, gradient
    assert full == cfg.optim.batch_size * cfg.data.max_length * shape.vocab * 14  # unknown answers: every position
    assert scored_positions(cfg, 10 ** 9) == cfg.optim.batch_size * cfg.data.max_length  # never above max_length


def test_the_answer_bound_covers_the_collators_answer_tokens(tmp_path) -> None:
    """The prepared set records its longest answer; its byte bound covers what the collator supervises."""
    from qgmem.training.prepared import save_prepared
    from test_train_loop import DIM, _row

    rows = {"train": [_row(i, "train") for i in range(3)]}
    rows["train"][1]["answer"] = "red and blue and green"
    meta = save_prepared(rows, tmp_path, {"dataset": "synthetic"}, DIM, DIM)
    assert meta["answer_bytes_max"] == len("red and blue and green")
    lm = make_lm("qwen3")
    col = lm.make_collator(256)
    ex = example(0, 1)
    ex.answer = "red and blue and green"
    supervised = int((col([ex])["labels"] != -100).sum())
    assert supervised <= answer_tokens_bound(meta)
