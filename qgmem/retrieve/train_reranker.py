"""Moved to `qgmem.training.reranker`; this re-export goes away once callers have moved."""

from qgmem.training.reranker import *  # noqa: F401,F403
