"""Moved to `qgmem.model.encoder`; this re-export goes away once callers have moved."""

from qgmem.model.encoder import *  # noqa: F401,F403
