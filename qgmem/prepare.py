"""Moved to `qgmem.training.prepare`; this re-export goes away once callers have moved."""

from qgmem.training.prepare import *  # noqa: F401,F403
