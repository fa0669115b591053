"""Moved to `qgmem.timex`; this re-export goes away once callers have moved."""

from qgmem.timex import *  # noqa: F401,F403
