"""Moved to `qgmem.evaluation.retrieval`; this re-export goes away once callers have moved."""

from qgmem.evaluation.retrieval import *  # noqa: F401,F403
