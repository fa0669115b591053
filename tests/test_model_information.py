"""The graph token carries information the text does not.

Synthetic task: the text only says that the secret colour of item K is in the graph; the graph's
edge (item K) -[has colour]-> (colour) carries it. After training only the encoder + projector on a
frozen random tiny LLM, the held-out answer loss must be well below the controls: the same model
without the graph token (text only), the same model with graphs shuffled across examples, and a
model trained on shuffled graphs (which can learn the colour prior but nothing per example).
"""

from __future__ import annotations

import random

import pytest
import torch
from test_model_graph_token_lm import DIM, hash_embed
from qgmem.testing.tiny_models import make_tiny

from qgmem.graph import GraphConfig, build_local_graph, feature_dims
from qgmem.model import EncoderConfig
from qgmem.model import GraphExample, GraphTokenLM
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]
SYSTEM = "answer from the memory ."
GCFG = GraphConfig(max_edges=10)
INIT_STD = 0.2  # random LLM whose logits can become confident (see tiny_models.make_model)
STEPS, BATCH, LR = 100, 16, 1e-2
# First-step training loss observed for seed 0 (torchtune-style regression pin).
FIRST_LOSS = {"qwen3": 6.2941, "llama": 6.3285}


pytestmark = pytest.mark.usefixtures("one_thread")


def make_example(item: int, colour: str) -> GraphExample:
    name = f"item{item}"
    q = Question(f"{name}-{colour}", f"what is the secret colour of {name} ?", [colour], "4")
    u = AtomicUnit(f"u-{name}", "ns", "S1", f"the secret colour of {name} is in the graph .", "D1:1", "D1:1",
                   ["D1:1"], "alice", name, "has colour", colour)
    wm = WorkingMemory(q, [MemoryItem("M1", "unit", u.text, u.turn_ids, unit=u)], "synthetic")
    g = build_local_graph(wm, hash_embed, GCFG, embed_dim=DIM)
    return GraphExample(q.text, f"[M1] the secret colour of {name} is in the graph .", colour, g, id=q.id)


def dataset(items: range, n: int, seed: int) -> list[GraphExample]:
    rng = random.Random(seed)
    return [make_example(rng.choice(items), rng.choice(COLOURS)) for _ in range(n)]


def shuffled(exs: list[GraphExample], seed: int) -> list[GraphExample]:
    """Same prompts and answers, graphs permuted across examples (a derangement of colours)."""
    rng = random.Random(seed)
    out = []
    for ex in exs:
        other = rng.choice([e for e in exs if e.answer != ex.answer])
        out.append(GraphExample(ex.question, ex.memory_text, ex.answer, other.graph, ex.id))
    return out


def train(arch: str, train_set: list[GraphExample], seed: int = 0) -> tuple[GraphTokenLM, list[float]]:
    llm, tok = make_tiny(arch, seed=seed, init_std=INIT_STD)
    node_dim, edge_dim = feature_dims(GCFG, DIM)
    torch.manual_seed(seed)
    cfg = EncoderConfig(node_dim=node_dim, edge_dim=edge_dim, hidden=32, heads=4, layers=2, dropout=0.0,
                        num_graph_tokens=4, projector_hidden=64)
    lm = GraphTokenLM(llm, tok, cfg, graph_cfg=GCFG)
    col = lm.make_collator(128, system=SYSTEM, answer_template="{answer}")
    opt = torch.optim.AdamW(lm.trainable_parameters(), lr=LR)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    lm.train()
    for _ in range(STEPS):
        idx = torch.randint(len(train_set), (BATCH,), generator=gen).tolist()
        out = lm(col([train_set[i] for i in idx]))
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        losses.append(float(out.loss))
    return lm.eval(), losses


@torch.no_grad()
def eval_loss(lm: GraphTokenLM, exs: list[GraphExample]) -> tuple[float, float]:
    """(mean loss over answer + EOS tokens, mean loss of the colour token alone)."""
    col = lm.make_collator(128, system=SYSTEM, answer_template="{answer}")
    batch = col(exs)
    out = lm(batch, return_logits=True)
    labels = batch["labels"]
    if not lm.use_graph:  # the text-only control drops the graph positions
        labels = torch.stack([row[~m] for row, m in zip(labels, batch["graph_mask"])])
    first = (labels != -100).int().argmax(1)  # position of the colour token
    rows = torch.arange(labels.size(0))
    logp = out.logits[rows, first - 1].float().log_softmax(-1)
    colour = -logp[rows, labels[rows, first]].mean()
    return float(out.loss), float(colour)


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_graph_token_carries_answer(arch: str) -> None:
    train_set = dataset(range(48), 256, seed=1)
    held_out = dataset(range(48, 64), 64, seed=2)  # unseen item names
    lm, losses = train(arch, train_set)
    assert losses[0] == pytest.approx(FIRST_LOSS[arch], abs=2e-3)

    trained = eval_loss(lm, held_out)
    shuffled_eval = eval_loss(lm, shuffled(held_out, seed=3))
    lm.use_graph = False
    text_only = eval_loss(lm, held_out)
    lm.use_graph = True
    prior_lm, _ = train(arch, shuffled(train_set, seed=4))  # can learn the colour prior only
    prior = eval_loss(prior_lm, held_out)

    print(f"{arch}: answer loss / colour-token loss: trained {trained} text-only {text_only} "
          f"shuffled-eval {shuffled_eval} shuffled-train {prior}")
    for name, ctrl in [("text-only", text_only), ("shuffled graphs", shuffled_eval), ("shuffled training", prior)]:
        assert trained[0] < 0.7 * ctrl[0], f"{name}: answer loss {trained[0]:.3f} vs control {ctrl[0]:.3f}"
        assert trained[1] < 0.5 * ctrl[1], f"{name}: colour-token loss {trained[1]:.3f} vs control {ctrl[1]:.3f}"
