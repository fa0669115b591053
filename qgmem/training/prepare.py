"""`qgmem prepare`: a benchmark -> cached graph-token training examples.

Training must not call an LLM API or rebuild memories, so everything an example needs is computed
once here: the QGMem working memory of each question (rule extractor + CPU retrieval defaults
unless configured otherwise), its serialised text, the local graph's tensors (frozen sentence
embeddings), the question and the gold answer. Examples are split train/val/test *by
conversation* with a seeded permutation, so no conversation leaks across splits.

Layout of ``out_dir``::

    prepare_config.json  the job's config, written first; a rerun with another config is refused
    store/             MemoryStore with the built memories (reused on resume)
    examples.jsonl     one line per finished conversation (the resume log; a torn last line is redone)
    dataset/           datasets.DatasetDict.save_to_disk with splits train / val / test
    prepare_meta.json  config, feature dims, counts per split; written last ("complete": true)

A killed run restarts where it stopped: finished conversations are skipped. ``--partial`` writes
the dataset from the conversations finished so far (marked ``"partial": true`` in the meta).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from qgmem.config import ConfigError, apply_overrides, from_dict, load_config, read_yaml, to_dict
from qgmem.graph.local_graph import GraphConfig, build_local_graph, feature_dims
from qgmem.io import append_jsonl, atomic_write_json, read_jsonl
from qgmem.retrieve.config import RetrievalConfig
from qgmem.types import Conversation, Question, WorkingMemory

SPLITS = ("train", "val", "test")


@dataclass
class PrepareConfig:
    dataset: str = "longmemeval-s"  # any name of qgmem.data.registry (paper: "convomem")
    data_dir: str | None = None  # default: $QGMEM_DATA_DIR
    seed: int = 0  # subset choice, split assignment and distractor sampling
    max_conversations: int | None = None  # seeded subset of conversations (None = all)
    max_questions_per_conversation: int | None = None
    # Keep at most this many sessions per conversation: every session holding evidence of a kept
    # question plus seeded distractors. A CPU budget knob for LongMemEval-S (~48 sessions each).
    max_sessions: int | None = None
    # Cut every turn to this many characters before building memories (None = keep whole turns).
    # A CPU budget knob: LongMemEval assistant turns run to thousands of characters.
    max_turn_chars: int | None = None
    drop_abstention: bool = False  # LongMemEval "_abs" questions
    split: list[float] = field(default_factory=lambda: [0.8, 0.1, 0.1])  # train / val / test by conversation
    k: int = 10  # working-memory size
    text_with_graph: bool = False  # also write the graph as text triples into the memory text
    graph: GraphConfig = field(default_factory=GraphConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)


# ---------------------------------------------------------------------------------------------
# selection and splits


def select_conversations(convs: list[Conversation], cfg: PrepareConfig) -> list[Conversation]:
    """A seeded subset (order: by id, then permuted) so the same config picks the same conversations."""
    convs = sorted(convs, key=lambda c: c.id)
    ids = [c.id for c in convs]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"dataset {cfg.dataset!r}: duplicate conversation ids {dup}")
    if cfg.max_conversations is not None and cfg.max_conversations < len(convs):
        rng = random.Random(cfg.seed)
        convs = sorted(rng.sample(convs, cfg.max_conversations), key=lambda c: c.id)
    return convs


def assign_splits(conv_ids: list[str], fractions: list[float], seed: int) -> dict[str, str]:
    """conversation id -> "train" | "val" | "test", seeded and independent of input order.

    With at least 3 conversations every split with a positive fraction gets at least one.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or sum(fractions) <= 0:
        raise ConfigError(f"split: expected three non-negative fractions (train, val, test), got {fractions}")
    total = sum(fractions)
    fr = [f / total for f in fractions]
    ids = sorted(conv_ids)
    random.Random(seed).shuffle(ids)
    n = len(ids)
    sizes = []
    for f in fr[1:]:
        s = int(round(n * f))
        if f > 0 and n >= 3:
            s = max(1, s)
        sizes.append(s)
    n_val, n_test = sizes
    n_train = max(0, n - n_val - n_test)
    out: dict[str, str] = {}
    for i, cid in enumerate(ids):
        out[cid] = "train" if i < n_train else "val" if i < n_train + n_val else "test"
    return out


def reduce_sessions(conv: Conversation, questions: list[Question], max_sessions: int | None, seed: int) -> Conversation:
    """Evidence sessions of `questions` + seeded distractors, in the original order."""
    if max_sessions is None or len(conv.sessions) <= max_sessions:
        return conv
    turn_session = {t.id: s.id for s in conv.sessions for t in s.turns}
    keep = {sid for q in questions for sid in q.evidence_sessions}
    keep |= {turn_session[t] for q in questions for t in q.evidence if t in turn_session}
    keep &= {s.id for s in conv.sessions}
    others = [s.id for s in conv.sessions if s.id not in keep]
    rng = random.Random(f"{seed}:{conv.id}")
    keep |= set(rng.sample(others, max(0, min(len(others), max_sessions - len(keep)))))
    return dataclasses.replace(conv, sessions=[s for s in conv.sessions if s.id in keep],
                               meta={**conv.meta, "sessions_total": len(conv.sessions)})


def cut_turns(conv: Conversation, max_chars: int | None) -> Conversation:
    """Every turn's text cut to `max_chars` (at a word boundary, marked with "...")."""
    if max_chars is None:
        return conv

    def cut(text: str) -> str:
        if len(text) <= max_chars:
            return text
        head = text[:max_chars].rsplit(" ", 1)[0]
        return (head or text[:max_chars]) + " ..."

    sessions = [dataclasses.replace(s, turns=[dataclasses.replace(t, text=cut(t.text)) for t in s.turns])
                for s in conv.sessions]
    return dataclasses.replace(conv, sessions=sessions)


def kept_questions(conv: Conversation, cfg: PrepareConfig) -> list[Question]:
    qs = [q for q in conv.questions if not (cfg.drop_abstention and q.meta.get("abstention"))]
    qs = [q for q in qs if q.answers]  # e.g. LoCoMo adversarial questions have no gold answer to supervise
    if cfg.max_questions_per_conversation is not None:
        qs = qs[: cfg.max_questions_per_conversation]
    return qs


# ---------------------------------------------------------------------------------------------
# one example


def example_record(q: Question, wm: WorkingMemory, graph: Any, memory_text: str, split: str) -> dict[str, Any]:
    """A JSON-able row: everything training and evaluation need, graphs as nested lists."""
    ei = graph.edge_index.t().tolist() if graph.edge_index.numel() else []
    return {
        "id": q.id,
        "conversation_id": q.conversation_id,
        "split": split,
        "question": q.text,
        "question_time": q.question_time or "",
        "category": str(q.category),
        "answer": str(q.answers[0]),
        "answers": [str(a) for a in q.answers],
        "evidence": list(q.evidence),
        "memory_text": memory_text,
        "labels": [it.label for it in wm.items],
        "item_texts": [it.text for it in wm.items],
        "item_turn_ids": [list(it.turn_ids) for it in wm.items],
        "x": graph.x.tolist(),
        "edge_index": ei,
        "edge_attr": graph.edge_attr.tolist(),
        "node_text": list(graph.node_text),
        "edge_text": list(graph.edge_text),
        "edge_labels": list(getattr(graph, "labels", [])),
        "num_nodes": int(graph.num_nodes),
    }


def question_prompt(row: dict[str, Any]) -> str:
    """The question as the model sees it: dated when the benchmark gives a question time."""
    t = row.get("question_time") or ""
    q = str(row["question"]).strip()
    return f"{q}\n(The question is asked on {t}.)" if t else q


def row_graph(row: dict[str, Any], node_dim: int, edge_dim: int):
    """Rebuild the `torch_geometric` graph of a stored row (empty graphs keep their feature dims)."""
    import torch
    from torch_geometric.data import Data

    x = torch.tensor(row["x"], dtype=torch.float32).reshape(-1, node_dim)
    ea = torch.tensor(row["edge_attr"], dtype=torch.float32).reshape(-1, edge_dim)
    ei = torch.tensor(row["edge_index"], dtype=torch.long).reshape(-1, 2).t().contiguous()
    if x.shape[0] != row["num_nodes"] or ei.shape[1] != ea.shape[0] or (ei.numel() and int(ei.max()) >= x.shape[0]):
        raise ValueError(f"example {row.get('id')!r}: inconsistent graph (nodes {x.shape[0]} vs num_nodes "
                         f"{row['num_nodes']}, edges {ei.shape[1]} vs edge_attr {ea.shape[0]})")
    return Data(x=x, edge_index=ei, edge_attr=ea, num_nodes=x.shape[0],
                node_text=list(row.get("node_text", [])), edge_text=list(row.get("edge_text", [])),
                labels=list(row.get("edge_labels", [])))


def row_to_example(row: dict[str, Any], node_dim: int, edge_dim: int):
    from qgmem.model.collate import GraphExample

    return GraphExample(question=question_prompt(row), memory_text=row["memory_text"], answer=row["answer"],
                        graph=row_graph(row, node_dim, edge_dim), id=row["id"])


# ---------------------------------------------------------------------------------------------
# the job


def _features():
    from datasets import Features, Sequence, Value

    s = Value("string")
    return Features({
        "id": s, "conversation_id": s, "split": s, "question": s, "question_time": s, "category": s,
        "answer": s, "answers": Sequence(s), "evidence": Sequence(s), "memory_text": s,
        "labels": Sequence(s), "item_texts": Sequence(s), "item_turn_ids": Sequence(Sequence(s)),
        "x": Sequence(Sequence(Value("float32"))), "edge_index": Sequence(Sequence(Value("int64"))),
        "edge_attr": Sequence(Sequence(Value("float32"))), "node_text": Sequence(s), "edge_text": Sequence(s),
        "edge_labels": Sequence(s), "num_nodes": Value("int32"),
    })


def _done_log(out_dir: Path) -> dict[str, dict[str, Any]]:
    return {r["conversation_id"]: r for r in read_jsonl(out_dir / "examples.jsonl")}


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line left unfinished by a kill, so the next append starts on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def prepare_dataset(cfg: PrepareConfig, out_dir: str | Path, conversations: list[Conversation] | None = None,
                    progress: bool = True) -> dict[str, Any]:
    """Build (or finish building) the prepared set in `out_dir`; returns the meta written to prepare_meta.json."""
    from tqdm import tqdm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg_dict = to_dict(cfg)
    cfg_path = out / "prepare_config.json"  # written first, so a resumed run checks it is the same job
    if cfg_path.exists():
        if json.loads(cfg_path.read_text()) != json.loads(json.dumps(cfg_dict)):
            raise ConfigError(f"{out}: prepared with a different config (see {cfg_path}); "
                              "use a new output dir or delete this one")
    else:
        atomic_write_json(cfg_path, cfg_dict)
    if conversations is None:
        from qgmem.data.registry import load_dataset_by_name

        conversations = load_dataset_by_name(cfg.dataset, data_dir=cfg.data_dir)
    selected = select_conversations(conversations, cfg)
    splits = assign_splits([c.id for c in selected], cfg.split, cfg.seed)
    _drop_torn_tail(out / "examples.jsonl")
    done = _done_log(out)
    todo = [c for c in selected if c.id not in done]
    if todo:
        from qgmem.embed import get_embedder
        from qgmem.answer import serialize_working_memory
        from qgmem.retrieve.method import QGMemRetriever
        from qgmem.store import MemoryStore

        store = MemoryStore(out / "store")
        embedder = get_embedder(cfg.retrieval.embedder)
        retriever = QGMemRetriever(store, cfg.retrieval)
        for conv in tqdm(todo, desc="prepare", unit="conv", disable=not progress):
            qs = kept_questions(conv, cfg)
            rows: list[dict[str, Any]] = []
            if qs:
                small = cut_turns(reduce_sessions(conv, qs, cfg.max_sessions, cfg.seed), cfg.max_turn_chars)
                retriever.build(small)
                for q in qs:
                    q = dataclasses.replace(q, conversation_id=q.conversation_id or conv.id)
                    wm = retriever.activate(q, k=cfg.k)
                    g = build_local_graph(wm, embedder.encode, cfg.graph, embed_dim=embedder.dim)
                    text = serialize_working_memory(wm, with_graph=cfg.text_with_graph, graph=g)
                    rows.append(example_record(q, wm, g, text, splits[conv.id]))
            # one line per conversation: a kill mid-write leaves a torn line, which resume redoes
            append_jsonl(out / "examples.jsonl", [{"conversation_id": conv.id, "split": splits[conv.id],
                                                   "examples": rows}])
        done = _done_log(out)
    return _finalize(cfg, out, selected, splits, done)


def finalize_partial(cfg: PrepareConfig, out_dir: str | Path) -> dict[str, Any]:
    """Write the dataset from the conversations finished so far (their splits come from the log),
    without loading the benchmark; meta says how many are still missing. A rerun of
    `prepare_dataset` later completes the set."""
    out = Path(out_dir)
    cfg_path = out / "prepare_config.json"
    if not cfg_path.exists() or json.loads(cfg_path.read_text()) != json.loads(json.dumps(to_dict(cfg))):
        raise ConfigError(f"{out}: no prepare run with this config to finalize (see {cfg_path})")
    _drop_torn_tail(out / "examples.jsonl")
    done = _done_log(out)
    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for cid in sorted(done):
        by_split[done[cid]["split"]].extend(done[cid]["examples"])
    node_dim, edge_dim = feature_dims(cfg.graph, _embed_dim(by_split, cfg))
    expected = cfg.max_conversations
    extra = {"conversations": {s: sorted(c for c, r in done.items() if r["split"] == s) for s in SPLITS},
             "partial": True, "conversations_done": len(done), "conversations_planned": expected}
    return save_prepared(by_split, out, to_dict(cfg), node_dim, edge_dim, extra)


def _finalize(cfg: PrepareConfig, out: Path, selected: list[Conversation], splits: dict[str, str],
              done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for conv in selected:
        for r in done[conv.id]["examples"]:
            by_split[splits[conv.id]].append(r)
    node_dim, edge_dim = feature_dims(cfg.graph, _embed_dim(by_split, cfg))
    extra = {"conversations": {s: sorted(c for c, sp in splits.items() if sp == s) for s in SPLITS}}
    return save_prepared(by_split, out, to_dict(cfg), node_dim, edge_dim, extra)


def save_prepared(by_split: dict[str, list[dict[str, Any]]], out_dir: str | Path, config: dict[str, Any],
                  node_dim: int, edge_dim: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write rows (`example_record` shape) as the datasets splits + prepare_meta.json (atomically)."""
    from datasets import Dataset, DatasetDict

    out = Path(out_dir)
    feats = _features()
    # empty splits are not written (datasets cannot reload a 0-shard split); load_prepared recreates them
    dd = DatasetDict({s: Dataset.from_list(by_split[s], features=feats) for s in SPLITS if by_split.get(s)})
    tmp = out / "dataset.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    dd.save_to_disk(str(tmp))
    final = out / "dataset"
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    meta = {
        "complete": True,
        "config": config,
        "node_dim": node_dim,
        "edge_dim": edge_dim,
        "counts": {s: len(by_split.get(s, [])) for s in SPLITS},
        "empty_graphs": sum(1 for v in by_split.values() for r in v if r["num_nodes"] == 0),
        **(extra or {}),
    }
    atomic_write_json(out / "prepare_meta.json", meta)
    return meta


def _embed_dim(by_split: dict[str, list[dict[str, Any]]], cfg: PrepareConfig) -> int:
    for rows in by_split.values():
        for r in rows:
            if r["x"]:
                return len(r["x"][0])
    from qgmem.embed import get_embedder

    return get_embedder(cfg.retrieval.embedder).dim


def load_prepared(out_dir: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta, {split: datasets.Dataset}) of a finished prepared set; a clear error otherwise."""
    from datasets import load_from_disk

    out = Path(out_dir)
    meta_path = out / "prepare_meta.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{out}: no prepared set here (missing prepare_meta.json); run `qgmem prepare`")
    meta = json.loads(meta_path.read_text())
    if not meta.get("complete"):
        raise ValueError(f"{meta_path}: prepared set is incomplete; rerun `qgmem prepare` to finish it")
    from datasets import Dataset

    dd = load_from_disk(str(out / "dataset")) if any(meta.get("counts", {}).values()) else {}
    feats = _features()
    return meta, {s: dd[s] if s in dd else Dataset.from_dict({k: [] for k in feats}, features=feats)
                  for s in SPLITS}


# ---------------------------------------------------------------------------------------------
# CLI


def config_from_file(path: str | None, overrides: list[str]) -> tuple[PrepareConfig, str | None]:
    """A PrepareConfig from a prepare YAML, or from the ``data`` section of a train YAML.

    Returns the config and, for a train YAML, its ``data.dir`` (the default output dir).
    """
    if path is None:
        return load_config(PrepareConfig, None, overrides), None
    p = Path(path)
    data = read_yaml(p)
    if "data" in data:  # a train config: data.prepare is the PrepareConfig, data.dir the output
        section = dict((data.get("data") or {}).get("prepare") or {})
        apply_overrides(section, overrides)
        return from_dict(PrepareConfig, section, f"{p}: data.prepare"), (data.get("data") or {}).get("dir")
    apply_overrides(data, overrides)
    return from_dict(PrepareConfig, data, str(p)), None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="prepare YAML, or a train YAML (its data.prepare section and data.dir)")
    parser.add_argument("--out", help="output directory (default: data.dir of a train config)")
    parser.add_argument("--partial", action="store_true",
                        help="write the dataset now from the conversations already finished (no building); "
                             "rerun without it to complete the set")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. dataset=locomo max_conversations=20")


def run(args: argparse.Namespace) -> int:
    cfg, default_out = config_from_file(args.config, args.overrides)
    out = args.out or default_out
    if not out:
        print("qgmem prepare: --out is required (or a train config with data.dir)", file=sys.stderr)
        return 2
    meta = finalize_partial(cfg, out) if args.partial else prepare_dataset(cfg, out)
    partial = f" (partial: {meta['conversations_done']} conversations finished)" if meta.get("partial") else ""
    print(f"prepared {cfg.dataset} -> {out}{partial}")
    print(f"{'split':<8}{'examples':>10}{'conversations':>15}")
    for s in SPLITS:
        print(f"{s:<8}{meta['counts'][s]:>10}{len(meta['conversations'][s]):>15}")
    print(f"graphs: node dim {meta['node_dim']}, edge dim {meta['edge_dim']}, empty {meta['empty_graphs']}")
    return 0
