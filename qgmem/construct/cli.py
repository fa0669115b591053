"""`qgmem build`: build QGMem memories (atomic units + traces) for a benchmark into a store.

Resumable: rerunning the same command after a crash or kill continues where it stopped; rerunning
with more sessions extends the namespaces. Ends with the build table (per phase: units, traces,
failed windows, LLM calls, tokens, seconds), also written to `<store>/build_report.json`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from qgmem.config import apply_overrides, from_dict, to_dict
from qgmem.construct.build import BuildConfig, BuildReport, build_memory, conversation_windows
from qgmem.io import atomic_write_json
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
    p.add_argument("--rebuild", action="store_true", help="delete the selected namespaces first")
    p.add_argument("--no-progress", action="store_true")


def make_config(args: argparse.Namespace) -> BuildConfig:
    import yaml

    data: dict = {}
    where = "build config"
    if args.config:
        path = Path(args.config)
        if not path.exists():
            raise SystemExit(f"qgmem build: config file not found: {path}")
        data = yaml.safe_load(path.read_text()) or {}
        where = str(path)
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
    return from_dict(BuildConfig, data, where)


def load_conversations(args: argparse.Namespace) -> list[Conversation]:
    from qgmem.data.registry import load_conversations_json, load_dataset_by_name, select_conversations

    try:
        if args.input:
            convs = load_conversations_json(args.input)
        else:
            convs = load_dataset_by_name(args.dataset, data_dir=args.data_dir, download=False)
        convs = select_conversations(convs, args.conversations)
    except ValueError as e:  # DataError (file, record, field) or an unknown id
        raise SystemExit(f"qgmem build: {e}") from None
    if args.limit_sessions:
        for c in convs:
            c.sessions = c.sessions[: args.limit_sessions]
    return convs


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from qgmem.store import MemoryStore

    cfg = make_config(args)
    convs = load_conversations(args)
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
           "dataset": args.input or args.dataset, "conversations": [c.id for c in convs],
           "wall_seconds": round(wall, 2), "config": to_dict(cfg), **report.as_dict()}
    atomic_write_json(Path(args.store) / "build_report.json", out)
    print(report.table())
    n_fail = len(report.failures)
    print(f"\n{len(convs)} conversation(s) in {wall:.1f} s; store: {args.store}; "
          f"{n_fail} failure record(s)" + (" (see build_report.json)" if n_fail else ""))
    store.close()
    return 0
