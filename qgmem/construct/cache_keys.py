"""Which cached LLM replies quote which window, so that forgetting a window forgets them too.

An LLM extraction request carries the window's turns, and the response cache keeps its reply (which
restates them) outside the store. Each window's cache keys are noted in the store as a record of kind
``llm-cache-keys:<window done key>``; when the window's content goes (edited, deleted, forgotten) the
build deletes those replies from the cache file before it drops the window's units.
"""

from __future__ import annotations

from typing import Any

from qgmem.llm.base import ChatBackend
from qgmem.llm.cache import forget_keys
from qgmem.store import MemoryStore

PREFIX = "llm-cache-keys:"


def remember_cache_keys(store: MemoryStore, ns: str, llm: ChatBackend | None, requests: list[Any], src: str) -> None:
    """Note the response-cache keys of the requests sent for window `src` (when `llm` caches)."""
    keys_for = getattr(llm, "keys_for", None)
    if not requests or keys_for is None:
        return
    keys = keys_for(requests)
    if keys:
        old = store.get_records(ns, PREFIX + src)
        store.put_records(ns, PREFIX + src, old + [{"cache": str(getattr(llm, "path")), "keys": keys}])


def forget_cache_entries(store: MemoryStore, ns: str, sources: list[str]) -> int:
    """Delete the cached replies of windows `sources` and their notes; returns how many replies went."""
    gone = 0
    for src in sources:
        for rec in store.get_records(ns, PREFIX + src):
            gone += forget_keys(rec["cache"], rec["keys"])
        store.put_records(ns, PREFIX + src, [])
    return gone


def all_sources(store: MemoryStore, ns: str) -> list[str]:
    """Every window with noted cache keys (for forgetting a whole namespace)."""
    return [k[len(PREFIX):] for k in store.record_kinds(ns) if k.startswith(PREFIX)]
