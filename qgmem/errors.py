"""Errors a user can fix (bad input, config or store state) and how every entry point reports them.

Such an error is one line naming the file, record and field, exit code 2, no traceback; `--debug`
(anywhere on the command line) shows the traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


class UserError(Exception):
    """Mixed into the error types whose message tells the user what to change."""


class StoreError(RuntimeError, UserError):
    """A store that cannot be opened or written as asked (unreadable, other schema, busy)."""


class StoreBusy(StoreError):
    """Another process is writing to the store."""


def run_entry_point(prog: str, fn: Callable[[list[str]], int], argv: list[str] | None = None) -> int:
    """`fn(argv)` with user errors reported as `prog: message` on stderr and exit code 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    try:
        return int(fn(args) or 0)
    except UserError as e:
        if debug:
            raise
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
