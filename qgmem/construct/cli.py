"""`qgmem build`: build QGMem memories (atomic units + traces) for a benchmark into a store.

Resumable: rerunning the same command after a crash or kill continues where it stopped; rerunning
with more sessions or edited turns updates the namespaces. Ends with the build table (per phase:
units, traces, failed windows, LLM calls, tokens, seconds), also written to `<store>/build_report.json`.

Exit codes: 0 = every memory complete; 1 = some windows failed (the failure table is printed and the
memory stays incomplete until a rerun succeeds); 2 = bad input, config or store (one line, no traceback).

`--shard I/N` builds only the conversations of shard I of N (`qgmem.sharding`: a hash of the
conversation id) into ``<store>.shard-<I>-of-<N>``; `qgmem merge-stores` joins the shard stores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from qgmem.config import ConfigError, apply_overrides, from_dict, read_yaml, to_dict
from qgmem.construct.build import BuildConfig, BuildReport, build_memory, conversation_windows
from qgmem.data.errors import DataError
from qgmem.io import atomic_write_json
from qgmem.sharding import Shard, parse_shard, sharded_name
from qgmem.types import Conversation


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="locomo", help="benchmark name (see `qgmem data`), default locomo")
    p.add_argument("--input", default=None,
                   help="instead of --dataset: a JSON file with a list of conversations in qgmem's own format")
    p.add_argument("--data-dir", default=None, help="benchmark data directory (default $QGMEM_DATA_DIR)")
    p.add_argument("--store", required=True, help="store directory (created if missing)")
    p.add_argument("--extractor", choices=["rule", "llm"], default=None, help="unit extractor (default rule)")
    p.add_argument("--consolidation", choices=["rule", "llm", "auto"], default=None)
    p.add_argument("--conversations", nargs="*", default=None, help="conversation ids to build (default: all)")
    p.add_argument("--limit-sessions", type=int, default=None, help="build only the first N sessions of each")
    p.add_argument("--config", default=None, help="YAML with BuildConfig fields (sections: rule, traces, llm, ...)")
    p.add_argument("--llm-backend", choices=["hf", "openai"], default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--base-url", default=None)
    p.add_argument("--set", dest="overrides", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config overrides, e.g. traces.update_threshold=0.4 llm.max_concurrency=16")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="build only shard I of N (0-based; a conversation's shard is a hash of its id) into "
                        "<store>.shard-I-of-N; join the shards with `qgmem merge-stores`")
    p.add_argument("--rebuild", action="store_true", help="delete the selected namespaces first")
    p.add_argument("--no-progress", action="store_true")


def make_config(args: argparse.Namespace) -> BuildConfig:
    """BuildConfig from --config, flags and --set overrides; any mistake is a ConfigError naming it."""
    data: dict = {}
    where = "build config"
    if args.limit_sessions is not None and args.limit_sessions < 1:
        raise ConfigError(f"--limit-sessions must be >= 1, got {args.limit_sessions}")
    if args.config:
        data = read_yaml(args.config)
        where = str(args.config)
    over = list(args.overrides or [])
    if args.extractor:
        over.append(f"extractor={args.extractor}")
    if args.consolidation:
        over.append(f"consolidation={args.consolidation}")
    if args.llm_backend:
        over.append(f"llm.backend={args.llm_backend}")
    if args.llm_model:
        over.append(f"llm.model={args.llm_model}")
    if args.base_url:
        over.append(f"llm.base_url={args.base_url}")
    apply_overrides(data, over)
    try:
        return from_dict(BuildConfig, data, where)
    except ConfigError:
        raise
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from None


def load_conversations(args: argparse.Namespace, shard: Shard | None = None) -> list[Conversation]:
    from qgmem.data.registry import load_conversations_json, load_dataset_by_name, select_conversations

    try:
        if args.input:
            convs = load_conversations_json(args.input)
        else:
            convs = load_dataset_by_name(args.dataset, data_dir=args.data_dir, download=False)
        convs = select_conversations(convs, args.conversations)
        if shard is not None:
            convs = [c for c in convs if shard.holds(c.id)]
    except DataError:
        raise
    except ValueError as e:  # an unknown id
        raise DataError(args.input or args.dataset, "", str(e)) from None
    if args.limit_sessions:
        for c in convs:
            c.sessions = c.sessions[: args.limit_sessions]
    return convs


def run(args: argparse.Namespace) -> int:
    shard = parse_shard(args.shard) if args.shard is not None else None  # checked before anything is read
    cfg = make_config(args)
    convs = load_conversations(args, shard)
    args.store, args.shard = sharded_name(args.store, shard), (str(shard) if shard else None)
    return _build(args, cfg, convs)


def _build(args: argparse.Namespace, cfg: BuildConfig, convs: list[Conversation]) -> int:
    from tqdm import tqdm

    from qgmem.data.validate import check_conversation
    from qgmem.store import MemoryStore

    for c in convs:  # every conversation checked before anything is written
        check_conversation(c, str(c.meta.get("source") or args.input or args.dataset), cfg.limits)
    store = MemoryStore(args.store)
    if args.rebuild:
        for c in convs:
            store.delete_namespace(c.id)
    llm = None
    if cfg.extractor == "llm" or cfg.consolidation == "llm":
        from qgmem.llm import make_backend

        llm = make_backend(cfg.llm)
    report = BuildReport()
    total = sum(len(conversation_windows(c, cfg.window_size, cfg.window_overlap)) for c in convs)
    t0 = time.perf_counter()
    with tqdm(total=total, unit="win", desc="build", disable=args.no_progress, file=sys.stderr) as bar:
        for conv in convs:
            bar.set_postfix_str(conv.id)
            build_memory(conv, extractor=cfg.extractor, llm=llm, store=store, config=cfg, report=report,
                         progress=bar.update)
    wall = time.perf_counter() - t0
    out = {"command": "qgmem build " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["build"] else " ".join(sys.argv),
           "dataset": args.input or args.dataset, "shard": args.shard, "conversations": [c.id for c in convs],
           "wall_seconds": round(wall, 2), "config": to_dict(cfg), **report.as_dict()}
    atomic_write_json(Path(args.store) / "build_report.json", out)
    print(report.table())
    for w in report.warnings:
        print(f"warning: {w}", file=sys.stderr)
    n_fail = len(report.failures)
    print(f"\n{len(convs)} conversation(s) in {wall:.1f} s; store: {args.store}; "
          f"{n_fail} failure record(s)" + (" (see build_report.json)" if n_fail else ""))
    store.close()
    if report.incomplete:
        print(failure_table(report), file=sys.stderr)
        missing = sum(report.incomplete.values())
        print(f"qgmem build: memory incomplete: {missing} window(s) not extracted in {len(report.incomplete)} "
              "namespace(s); rerun the same command to retry them", file=sys.stderr)
        return 1
    return 0


def failure_table(report: BuildReport, width: int = 100) -> str:
    """One line per failed window: namespace, key, error (its end kept: that is where the cause is)."""
    rows = [(f["namespace"], f["key"], " ".join(str(f["error"]).split())) for f in report.failures]
    if not rows:
        return ""
    w1, w2 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    lines = [f"{'namespace':<{w1}}  {'window':<{w2}}  error", "-" * min(width, w1 + w2 + 30)]
    lines += [f"{a:<{w1}}  {b:<{w2}}  {c if len(c) <= width else '...' + c[3 - width:]}" for a, b, c in rows]
    return "\n".join(lines)
