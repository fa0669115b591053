"""The `qgmem` command. Each subcommand lives in the module that does the work and exposes
`add_arguments(parser)` and `run(args) -> int`; modules are imported only when their command runs,
so `qgmem --help` stays fast. A user error (bad input, config or store) is one line and exit code 2;
`--debug` anywhere on the command line shows its traceback."""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "data": ("qgmem.data.cli", "benchmark data: stats, download, check"),
    "build": ("qgmem.construct.cli", "build QGMem memories (atomic units + traces) into a store"),
    "merge-stores": ("qgmem.construct.merge_stores", "join the stores of sharded builds (`build --shard I/N`) into one"),
    "forget": ("qgmem.construct.forget", "forget a namespace, a session or turns, and all that was derived from them"),
    "evaluate": ("qgmem.evaluation.cli", "evaluate a method on a benchmark (same as evaluate.py)"),
    "merge-runs": ("qgmem.evaluation.merge_runs", "join the shard runs of a retrieval evaluation (`evaluate.py --shard I/N`)"),
    "prepare": ("qgmem.training.prepare", "turn a data set into cached graph-token training examples"),
    "train": ("qgmem.training.trainer", "train the graph encoder + projector (same as train.py)"),
    "train-reranker": ("qgmem.training.reranker", "train the learned pool ranker from a configs/rerank/*.yaml"),
    "train-change-probe": ("qgmem.training.change_probe_fit", "fit the traces' change probe (configs/traces/*.yaml)"),
    "train-cross-encoder": ("qgmem.training.cross_encoder_fit", "fine-tune a MiniLM cross-encoder reranker"),
    "serve": ("qgmem.serve.cli", "serve a store over HTTP (FastAPI) and MCP, with API keys per namespace"),
    "anchormem-sweep": ("qgmem.anchormem.sweep", "AnchorMem event-graph sweep over tau and N (Table 6)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qgmem", description="qgmem: long-term conversational memory (QGMem, AnchorMem)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    from qgmem.errors import run_entry_point

    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), "")
    return run_entry_point(f"qgmem {command}" if command in COMMANDS else "qgmem", _dispatch, args)


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        parser = build_parser()
        if argv and argv[0] not in ("-h", "--help"):
            parser.error(f"unknown command {argv[0]!r}")
        parser.print_help()
        return 0
    name = argv[0]
    module = importlib.import_module(COMMANDS[name][0])
    sub = argparse.ArgumentParser(prog=f"qgmem {name}", description=COMMANDS[name][1])
    module.add_arguments(sub)
    args = sub.parse_args(argv[1:])
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
