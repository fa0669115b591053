"""Load the packaged prompt templates and fill their {{PLACEHOLDER}} slots.

Placeholders use double braces so the JSON examples inside the prompts need no escaping.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PROMPT_DIR = Path(__file__).with_name("prompts")


@functools.lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    path = PROMPT_DIR / f"{name}.txt"
    if not path.exists():
        raise FileNotFoundError(f"AnchorMem prompt not found: {path}")
    return path.read_text(encoding="utf-8")


def fill(template: str, **slots: str) -> str:
    out = template
    for key, value in slots.items():
        marker = "{{" + key.upper() + "}}"
        if marker not in template:
            raise KeyError(f"prompt has no slot {marker}")
        out = out.replace(marker, value)
    return out


def prompt_hash(*names: str) -> str:
    """Short digest of the prompt texts: a changed prompt invalidates stored LLM facts/events."""
    h = hashlib.sha256()
    for n in names:
        h.update(load_prompt(n).encode())
    return h.hexdigest()[:12]
