"""Moved to `qgmem.training.trainer`; this re-export goes away once callers have moved."""

from qgmem.training.trainer import *  # noqa: F401,F403
