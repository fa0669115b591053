"""Scoring the positive control (`qgmem.training.graph_control`): exact match under each condition,
paired bootstrap intervals of the differences, and what each design's graph tokens look like.

Conditions, all on the same questions:

- graph-only variant: the question's own graph (no memory text), the graph of a question of another
  conversation (`shuffled_across`: never the same person's other question, whose graph holds the answer
  too), no graph at all;
- conflict variant (the text shows the old and the new state): own graph + text, text only, another
  question's graph + text.

Conditions without a graph token do not depend on the encoder (the LLM is frozen and the prompt is
the same), so a run scores them once for every design (`score_conditions(..., known=...)`).
Exact match: the reply's answer (`qgmem.answer.parse_answer`) equals the gold after SQuAD
normalisation (case, punctuation, articles); greedy decoding. Beside it, "names the answer": the reply
contains the gold value as a word and not the other (superseded) state, whatever its format, so that a
frozen LLM that answers in a sentence ("Tavo lives in Oslo") is scored on content, not on format.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from qgmem.answer import parse_answer
from qgmem.evaluation.bootstrap import bootstrap_ci
from qgmem.evaluation.metrics import normalize_squad
from qgmem.training.graph_control import ControlExample

GRAPH_ONLY = ("graph only", "shuffled graph only", "no graph")
CONFLICT = ("graph + text", "text only", "shuffled graph + text")
CONDITIONS = GRAPH_ONLY + CONFLICT
NO_TOKEN = ("no graph", "text only")  # design-independent: scored once per run
# (better, worse) pairs whose paired difference the report gives
COMPARISONS = (("graph only", "shuffled graph only"), ("graph only", "no graph"),
               ("graph + text", "text only"), ("graph + text", "shuffled graph + text"))


def exact_match(output: str, gold: str) -> float:
    """1.0 when the reply's answer equals `gold` after SQuAD normalisation, else 0.0."""
    return float(normalize_squad(parse_answer(output)[0]) == normalize_squad(gold))


def shuffled_across(examples: list[ControlExample], forms: list[Any], seed: int) -> list[Any]:
    """`forms` (one `GraphExample` per example) each with the graph of an example of another conversation:
    conversations in a seeded cycle, each one's graphs given to the next one's questions in a seeded order
    (every graph used once, so the graphs' statistics stay those of the split)."""
    convs: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        convs.setdefault(ex.question.conversation_id, []).append(i)
    if len(convs) < 2 or len({len(v) for v in convs.values()}) != 1:
        raise ValueError(f"shuffled_across needs >= 2 conversations of equal size, got sizes "
                         f"{sorted(len(v) for v in convs.values())}")
    rng = random.Random(f"{seed}:shuffle")
    order = sorted(convs)
    rng.shuffle(order)
    out = list(forms)
    for c, nxt in zip(order, order[1:] + order[:1]):
        donors = list(convs[nxt])
        rng.shuffle(donors)
        for i, j in zip(convs[c], donors):
            out[i] = dataclasses.replace(forms[i], graph=forms[j].graph)
    return out


def names_answer(output: str, gold: str, other: str) -> float:
    """1.0 when the reply names `gold` (as whole words) and not `other`, else 0.0."""
    said = f" {normalize_squad(output)} "
    return float(f" {normalize_squad(gold)} " in said and f" {normalize_squad(other)} " not in said)


def condition_sets(examples: list[ControlExample], seed: int, names: tuple[str, ...] = CONDITIONS
                   ) -> dict[str, tuple[bool, list[Any]]]:
    """Condition -> (use the graph token, the `GraphExample`s to score), for the conditions in `names`."""
    only = [ex.graph_only for ex in examples]
    text = [ex.conflict for ex in examples]
    sets = {"graph only": (True, only), "shuffled graph only": (True, shuffled_across(examples, only, seed)),
            "no graph": (False, only), "graph + text": (True, text), "text only": (False, text),
            "shuffled graph + text": (True, shuffled_across(examples, text, seed))}
    return {n: sets[n] for n in names}


def generate_all(model: Any, examples: list[Any], collator: Any, batch_size: int, max_new_tokens: int) -> list[str]:
    """Greedy replies of `model` to `examples` (prompt-only batches), in order."""
    import torch

    gen = collator.for_generation()
    out: list[str] = []
    with torch.no_grad():
        for i in range(0, len(examples), batch_size):
            out += model.generate(gen(examples[i:i + batch_size]), max_new_tokens=max_new_tokens)
    return out


def score_conditions(model: Any, examples: list[ControlExample], collator: Any, *, seed: int, batch_size: int,
                     max_new_tokens: int, names: tuple[str, ...] = CONDITIONS,
                     known: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Per condition: exact match and "names the answer" (means and per example) and the replies;
    conditions in `known` are copied."""
    golds = [ex.answer for ex in examples]
    res: dict[str, dict[str, Any]] = {}
    model.eval()
    for name, (use_graph, exs) in condition_sets(examples, seed, names).items():
        if known and name in known:
            res[name] = known[name]
            continue
        model.use_graph = use_graph
        try:
            replies = generate_all(model, exs, collator, batch_size, max_new_tokens)
        finally:
            model.use_graph = True
        em = [exact_match(r, g) for r, g in zip(replies, golds)]
        named = [names_answer(r, ex.answer, ex.old) for r, ex in zip(replies, examples)]
        res[name] = {"em": _mean(em), "per_example": em, "named": _mean(named), "named_per_example": named,
                     "replies": replies}
    return res


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def comparisons(res: dict[str, dict[str, Any]], seed: int, key: str = "per_example") -> dict[str, dict[str, float]]:
    """``"A - B"`` -> mean and paired bootstrap 95% interval of score(A) - score(B) over the same questions
    (`key`: "per_example" = exact match, "named_per_example" = names the answer)."""
    out = {}
    for a, b in COMPARISONS:
        if a in res and b in res:
            diff = [x - y for x, y in zip(res[a][key], res[b][key])]
            out[f"{a} - {b}"] = bootstrap_ci(diff, seed=seed).as_dict()
    return out


def token_diagnostics(model: Any, examples: list[ControlExample], collator: Any, *, show: int = 3, k: int = 3
                      ) -> dict[str, Any]:
    """What a design's graph tokens (own graph only) look like to the LLM: mean norm, spread across
    questions (root-mean-square distance from the mean token, per token position), the nearest vocabulary
    tokens of the first `show` questions' tokens, and how often a token's nearest vocabulary token is the
    first token of the gold answer."""
    import torch

    from qgmem.model.llm_space import nearest_tokens

    model.eval()
    batch = collator.for_generation()([ex.graph_only for ex in examples])
    with torch.no_grad():
        tokens = model.graph_tokens(batch).float()  # [N, K, H]
    weight = model.llm.get_input_embeddings().weight
    tok = model.tokenizer
    flat = tokens.reshape(-1, tokens.size(-1))
    near = nearest_tokens(flat, weight, tok, k)
    kk = tokens.size(1)
    gold_first = [tok.decode(tok(" " + ex.answer, add_special_tokens=False)["input_ids"][:1]) for ex in examples]
    hits = [any(near[i * kk + j][0][0].strip().lower() == gold_first[i].strip().lower() for j in range(kk))
            for i in range(len(examples))]
    spread = (tokens - tokens.mean(0, keepdim=True)).norm(dim=-1).pow(2).mean().sqrt()
    norm = tokens.norm(dim=-1).mean()
    return {"token_norm": float(norm), "spread": float(spread), "spread_over_norm": float(spread / norm),
            "llm_embedding_norm": float(weight.detach().float().norm(dim=-1).mean()),
            "nearest_is_answer": sum(hits) / len(hits) if hits else float("nan"),
            "examples": [{"question": ex.question.text, "answer": ex.answer,
                          "nearest": [near[i * kk + j] for j in range(kk)]} for i, ex in enumerate(examples[:show])]}


def without_replies(res: dict[str, dict[str, Any]], keep: int = 5) -> dict[str, dict[str, Any]]:
    """The scores with only the first `keep` replies of each condition (what a summary stores)."""
    return {n: {**{k: v for k, v in r.items() if k != "replies"}, "replies": r["replies"][:keep]}
            for n, r in res.items()}
