"""`qgmem data`: stats, download and checksum check for the benchmark data sets.

    qgmem data stats locomo [--data-dir D] [--json] [--limit N]
    qgmem data download beam-128k [--data-dir D]
    qgmem data check locomo [--data-dir D]
    qgmem data list
"""

from __future__ import annotations

import argparse
import json
import sys

from ..paths import data_dir
from .errors import DataError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .registry import DATASET_NAMES

    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    st = sub.add_parser("stats", help="print counts (conversations, sessions, turns, questions by category, ...)")
    st.add_argument("name", choices=DATASET_NAMES)
    st.add_argument("--data-dir", default=None, help="data root (default $QGMEM_DATA_DIR)")
    st.add_argument("--json", action="store_true", help="print JSON instead of a table")
    st.add_argument("--limit", type=int, default=None, help="LongMemEval/ConvoMem: only the first N instances")
    st.add_argument("--no-download", action="store_true", help="fail instead of downloading missing files")
    for action, help_ in (("download", "fetch missing files from their official source (sha256-checked)"),
                          ("check", "verify the sha256 of the files present")):
        p = sub.add_parser(action, help=help_)
        p.add_argument("name", choices=DATASET_NAMES)
        p.add_argument("--data-dir", default=None, help="data root (default $QGMEM_DATA_DIR)")
    sub.add_parser("list", help="list the dataset names")


def run(args: argparse.Namespace) -> int:
    from . import download as dl
    from .registry import DATASET_NAMES, load_dataset_by_name
    from .stats import compute_stats

    if args.action == "list":
        print("\n".join(DATASET_NAMES))
        return 0
    root = args.data_dir or data_dir()
    try:
        if args.action == "stats":
            kw = {"limit": args.limit} if args.limit is not None else {}
            convs = load_dataset_by_name(args.name, root, download=not args.no_download, **kw)
            st = compute_stats(args.name, convs)
            print(json.dumps(st.to_dict(), indent=2) if args.json else st.table())
            return 0
        if args.action == "download":
            files = dl.sources(args.name)
            if not files:
                print(f"{args.name} is read from the HF hub through `datasets`, which downloads and caches it "
                      f"on first load (or put the upstream files under {root}).")
                return 0
            paths = dl.ensure(args.name, root, download=True)
            print(f"{len(paths)} file(s) present under {root}")
            return 0
        if args.action == "check":
            rows = dl.check(args.name, root)
            if not rows:
                print(f"{args.name}: read through `datasets` from the HF hub; nothing to check here")
                return 0
            bad = [r for r in rows if r[1] in ("missing", "sha256 mismatch")]
            for rel, status in rows:
                if status != "ok" or len(rows) <= 5:
                    print(f"{status:<34} {rel}")
            print(f"{len(rows) - len(bad)}/{len(rows)} file(s) present and not mismatched")
            return 1 if bad else 0
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 1
