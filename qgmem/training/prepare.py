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
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from qgmem.config import ConfigError, apply_overrides, from_dict, load_config, read_yaml, to_dict
from qgmem.graph.local_graph import GraphConfig, feature_dims
from qgmem.io import append_jsonl, atomic_write_json, read_jsonl
from qgmem.model.inputs import InputConfig, build_example
from qgmem.retrieve.config import RetrievalConfig
from qgmem.training.answer_filter import AnswerFilterConfig, filter_counts
from qgmem.training.config import resolve_config_path
from qgmem.training.prepared import SPLITS, example_record, load_prepared, save_prepared
from qgmem.training.sessions import CHOICES, LABEL_FREE, choose_sessions, reduce_sessions
from qgmem.types import Conversation, Question

__all__ = ["PrepareConfig", "SPLITS", "assign_splits", "config_from_file", "cut_turns", "finalize_partial",
           "input_config", "kept_questions", "load_prepared", "prepare_dataset", "prepare_question",
           "reduce_sessions", "save_prepared", "select_conversations", "session_choice", "memory_card",
           "memory_meta"]


@dataclass
class PrepareConfig:
    dataset: str = "longmemeval-s"  # any name of qgmem.data.registry (paper: "convomem-cases")
    # keywords for the dataset's loader, e.g. convomem-cases: {context_sizes: [2]} (qgmem/data/convomem.py)
    dataset_options: dict[str, Any] = field(default_factory=dict)
    data_dir: str | None = None  # default: $QGMEM_DATA_DIR
    seed: int = 0  # subset choice, split assignment and distractor sampling
    max_conversations: int | None = None  # seeded subset of conversations (None = all)
    max_questions_per_conversation: int | None = None
    # Keep at most this many sessions per conversation (a CPU budget knob for LongMemEval-S, ~48
    # sessions each), chosen by `sessions` (qgmem/training/sessions.py): "retrieved" (BM25 on the
    # question text) or "recent" never read the answer key; "evidence" does and is train-only.
    max_sessions: int | None = None
    sessions: str = "retrieved"  # how val and test memories (and train's, unless train_sessions) are cut
    train_sessions: str | None = None  # None = `sessions`; "evidence" makes the train split an oracle set
    # Cut every turn to this many characters before building memories (None = keep whole turns).
    # A CPU budget knob: LongMemEval assistant turns run to thousands of characters.
    max_turn_chars: int | None = None
    drop_abstention: bool = False  # LongMemEval "_abs" questions
    split: list[float] = field(default_factory=lambda: [0.8, 0.1, 0.1])  # train / val / test by conversation
    # How a working memory becomes a model example; stored with the prepared set and, by the
    # trainer, in every checkpoint (so inference builds the same inputs). The working-memory
    # size is retrieval.k.
    text_with_graph: bool = False  # also write the graph as text triples into the memory text
    graph: GraphConfig = field(default_factory=GraphConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    # keep only the train cases the frozen model answers correctly with the text method (paper setting;
    # val/test are never filtered, see qgmem/training/answer_filter.py)
    answer_filter: AnswerFilterConfig = field(default_factory=AnswerFilterConfig)


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


def session_choice(cfg: PrepareConfig, split: str) -> str:
    """How the memory of a `split` example is cut; the answer key never chooses val or test memory."""
    choice = cfg.train_sessions if split == "train" and cfg.train_sessions is not None else cfg.sessions
    if choice not in CHOICES:
        field_name = "train_sessions" if split == "train" and cfg.train_sessions is not None else "sessions"
        raise ConfigError(f"prepare config: field {field_name!r} must be one of {CHOICES}, got {choice!r}")
    if split != "train" and choice not in LABEL_FREE:
        raise ConfigError(f"prepare config: field 'sessions' is {choice!r}, which reads the answer key; val and "
                          f"test memories must be chosen without it ({LABEL_FREE}); use train_sessions for an "
                          "oracle train split")
    return choice


def memory_card(cfg: PrepareConfig) -> dict[str, str]:
    """Per split, how its memories were chosen, in words; "oracle" where the answer key chose them."""
    if cfg.max_sessions is None:
        return {s: "whole history" for s in SPLITS}
    n = f"{cfg.max_sessions} session" + ("s" if cfg.max_sessions != 1 else "")
    words = {"retrieved": f"the {n} BM25 ranks highest for the question (no labels)",
             "recent": f"the last {n} (no labels)",
             "evidence": f"oracle: evidence sessions + seeded distractors, {cfg.max_sessions} sessions"}
    return {s: words[session_choice(cfg, s)] for s in SPLITS}


def memory_meta(cfg: PrepareConfig) -> dict[str, Any]:
    """The meta keys that say how memories were chosen: ``memory`` (per split, in words) and ``oracle``
    (the answer key chose the train memories)."""
    oracle = cfg.max_sessions is not None and session_choice(cfg, "train") not in LABEL_FREE
    return {"memory": memory_card(cfg), "oracle": oracle}


def kept_questions(conv: Conversation, cfg: PrepareConfig) -> list[Question]:
    qs = [q for q in conv.questions if not (cfg.drop_abstention and q.meta.get("abstention"))]
    qs = [q for q in qs if q.answers]  # e.g. LoCoMo adversarial questions have no gold answer to supervise
    if cfg.max_questions_per_conversation is not None:
        qs = qs[: cfg.max_questions_per_conversation]
    return qs


# ---------------------------------------------------------------------------------------------
# one question


def input_config(cfg: PrepareConfig) -> InputConfig:
    return InputConfig(graph=cfg.graph, text_with_graph=cfg.text_with_graph)


def prepare_question(retriever: Any, embedder: Any, q: Question, cfg: PrepareConfig, split: str) -> dict[str, Any]:
    """The stored row of one question: its working memory (`retriever` holds its conversation),
    turned into a model example by `qgmem.model.inputs.build_example`, as `MemoryPipeline` does."""
    wm = retriever.activate(q, k=cfg.retrieval.k)
    ex = build_example(wm, embedder.encode, input_config(cfg), embed_dim=embedder.dim, answer=str(q.answers[0]))
    return example_record(q, wm, ex, split)


# ---------------------------------------------------------------------------------------------
# the job


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
                    progress: bool = True, answer_backend: Any = None) -> dict[str, Any]:
    """Build (or finish building) the prepared set in `out_dir`; returns the meta written to prepare_meta.json."""
    from tqdm import tqdm

    out = Path(out_dir)
    for split in SPLITS:  # a config that lets the answer key choose val/test memory fails before any work
        session_choice(cfg, split)
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

        try:
            conversations = load_dataset_by_name(cfg.dataset, data_dir=cfg.data_dir, **dict(cfg.dataset_options))
        except TypeError as e:
            if "unexpected keyword argument" not in str(e):
                raise
            raise ConfigError(f"prepare config: field 'dataset_options' {cfg.dataset_options}: {e}") from None
    selected = select_conversations(conversations, cfg)
    splits = assign_splits([c.id for c in selected], cfg.split, cfg.seed)
    _drop_torn_tail(out / "examples.jsonl")
    done = _done_log(out)
    todo = [c for c in selected if c.id not in done]
    if todo:
        from qgmem.retrieve.method import QGMemRetriever
        from qgmem.store import MemoryStore

        store = MemoryStore(out / "store")
        retriever = QGMemRetriever(store, cfg.retrieval)
        # graph features from the retriever's own embedder: one copy, on retrieval.device, as at inference
        # (`MemoryPipeline` embeds its graphs with its retriever's embedder too)
        embedder = retriever.embedder
        judge = None
        if cfg.answer_filter.enabled:
            from qgmem.training.answer_filter import AnswerFilter

            judge = AnswerFilter(cfg.answer_filter, answer_backend)
        for conv in tqdm(todo, desc="prepare", unit="conv", disable=not progress):
            qs = kept_questions(conv, cfg)
            rows: list[dict[str, Any]] = []
            flags: list[bool] = []
            if qs:
                choice = session_choice(cfg, splits[conv.id])
                small = cut_turns(choose_sessions(conv, qs, choice, cfg.max_sessions, cfg.seed), cfg.max_turn_chars)
                retriever.build(small)
                qs = [dataclasses.replace(q, conversation_id=q.conversation_id or conv.id) for q in qs]
                rows = [prepare_question(retriever, embedder, q, cfg, splits[conv.id]) for q in qs]
                if judge is not None and splits[conv.id] == "train":  # never val/test
                    flags = judge.keep([(q, retriever.activate(q, k=cfg.retrieval.k)) for q in qs])
                    rows = [r for r, ok in zip(rows, flags) if ok]
            # one line per conversation: a kill mid-write leaves a torn line, which resume redoes
            append_jsonl(out / "examples.jsonl", [{"conversation_id": conv.id, "split": splits[conv.id],
                                                   "examples": rows, "filter_checked": len(flags),
                                                   "filter_dropped": flags.count(False)}])
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
             "partial": True, "conversations_done": len(done), "conversations_planned": expected,
             **memory_meta(cfg)}
    return save_prepared(by_split, out, to_dict(cfg), node_dim, edge_dim, extra)


def _finalize(cfg: PrepareConfig, out: Path, selected: list[Conversation], splits: dict[str, str],
              done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for conv in selected:
        for r in done[conv.id]["examples"]:
            by_split[splits[conv.id]].append(r)
    node_dim, edge_dim = feature_dims(cfg.graph, _embed_dim(by_split, cfg))
    extra = {"conversations": {s: sorted(c for c, sp in splits.items() if sp == s) for s in SPLITS},
             **memory_meta(cfg)}
    if cfg.answer_filter.enabled:
        extra["answer_filter"] = {**filter_counts(done), "split": "train", "model": cfg.answer_filter.llm.model}
    return save_prepared(by_split, out, to_dict(cfg), node_dim, edge_dim, extra)


def _embed_dim(by_split: dict[str, list[dict[str, Any]]], cfg: PrepareConfig) -> int:
    for rows in by_split.values():
        for r in rows:
            if r["x"]:
                return len(r["x"][0])
    from qgmem.embed import get_embedder

    return get_embedder(cfg.retrieval.embedder, cfg.retrieval.device).dim


# ---------------------------------------------------------------------------------------------
# CLI


def config_from_file(path: str | None, overrides: list[str]) -> tuple[PrepareConfig, str | None]:
    """A PrepareConfig from a prepare YAML, or from the prepare YAML a train YAML names (``data.prepare``).

    Returns the config and, for a train YAML, its ``data.dir`` (the default output dir).
    """
    if path is None:
        return load_config(PrepareConfig, None, overrides), None
    p = Path(path)
    data = read_yaml(p)
    out = None
    if "data" in data:  # a train config: data.prepare names the prepare YAML, data.dir is the output
        section = data.get("data") or {}
        ref = section.get("prepare")
        if not isinstance(ref, str):
            raise ConfigError(f"{p}: data.prepare must name a prepare YAML (e.g. configs/prepare/*.yaml), got {ref!r}")
        p, out = resolve_config_path(ref, Path(path)), section.get("dir")
        data = read_yaml(p)
    apply_overrides(data, overrides)
    return from_dict(PrepareConfig, data, str(p)), out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="prepare YAML, or a train YAML (the prepare YAML its "
                        "data.prepare names, and data.dir)")
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
    for s in SPLITS:
        print(f"memory of {s}: {meta.get('memory', {}).get(s, 'not recorded')}")
    print(f"graphs: node dim {meta['node_dim']}, edge dim {meta['edge_dim']}, empty {meta['empty_graphs']}")
    if "answer_filter" in meta:
        af = meta["answer_filter"]
        print(f"answer filter ({af['model']}): kept {af['kept']} of {af['checked']} train cases, dropped {af['dropped']}")
    return 0
