"""`python evaluate.py --config configs/eval/NAME.yaml [key=value ...] [--resume]` (= `qgmem evaluate`).

A config with ``task: retrieval`` is handed to the retrieval harness
(`qgmem.evaluation.retrieval`); everything else is a question-answering evaluation. Both write
``<output_dir>/<benchmark>/<run>/`` and resume by the same rule (`qgmem.evaluation.runs`).

`--shard I/N` (retrieval runs): score only the conversations of shard I of N (`qgmem.sharding`) into
the run ``<run_name>.shard-I-of-N``; `qgmem merge-runs` joins the shard runs into one run.
"""

from __future__ import annotations

import argparse
import shlex
import sys


from qgmem.config import ConfigError, apply_overrides, load_config, read_yaml
from qgmem.sharding import ShardError, parse_shard


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="YAML file under configs/eval/")
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. subset.per_category=5 methods=[dense-turns]")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest unfinished run of this benchmark whose settings match (finished questions are skipped)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--shard", default=None, metavar="I/N",
                        help="retrieval runs: score only shard I of N of the conversations (0-based; a hash of the id) "
                             "into run <run_name>.shard-I-of-N, reading store <store_dir>.shard-I-of-N; needs "
                             "run_name=NAME; join the shards with `qgmem merge-runs`")


def task_of(config: str, overrides: list[str]) -> str:
    """The `task` the YAML (after overrides) asks for: "qa" unless it says "retrieval"."""
    data = read_yaml(config)
    apply_overrides(data, [o for o in overrides if o.split("=", 1)[0].strip() == "task"])
    return str(data.get("task", "qa"))


def run(args: argparse.Namespace) -> int:
    """Config errors (before anything runs) and data errors (while it runs) are user errors: one line,
    exit code 2 (the entry point reports them); a run folder already opened is marked failed."""
    overrides = list(args.overrides or [])
    shard = parse_shard(args.shard) if args.shard is not None else None
    task = task_of(args.config, overrides)
    if shard is not None:
        if task != "retrieval":
            raise ShardError(f"--shard {args.shard}: only retrieval runs (task: retrieval) are sharded")
        overrides.append(f"shard={shard}")
    if task == "retrieval":
        from qgmem.evaluation.retrieval import load_retrieval_config
        from qgmem.evaluation.retrieval import main as retrieval_main

        try:
            load_retrieval_config(args.config, overrides)  # errors here, before anything runs
        except ValueError as e:
            raise _config_error(e) from None
        return int(retrieval_main(args.config, overrides, resume=args.resume) or 0)
    from qgmem.evaluation.config import EvalConfig
    from qgmem.evaluation.report import score_table
    from qgmem.evaluation.runner import Evaluator

    try:
        cfg = load_config(EvalConfig, args.config, overrides)
    except ValueError as e:
        raise _config_error(e) from None
    command = "python evaluate.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else None
    ev = Evaluator(cfg, resume=args.resume, show_progress=not args.quiet, command=command)
    summary = ev.run()
    print()
    print(score_table(summary))
    print(f"\n[evaluate] report: {ev.run_dir / 'report.md'}")
    return 0


def _config_error(e: ValueError) -> ConfigError:
    return e if isinstance(e, ConfigError) else ConfigError(str(e))


def main(argv: list[str] | None = None) -> int:
    from qgmem.errors import run_entry_point

    parser = argparse.ArgumentParser(prog="evaluate.py", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_entry_point("evaluate.py", lambda a: run(parser.parse_args(a)), argv)
