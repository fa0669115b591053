"""Moved to `qgmem.answer`; kept as a re-export for one release."""

from qgmem.answer import *  # noqa: F401,F403
from qgmem.answer import _LABEL_RE, graph_text, render_item  # noqa: F401
