"""Word lists and lexicons of the rule-based methods, kept as plain text files beside this module.

Keeping them as data lets a list be read, reviewed and changed (e.g. for another benchmark's domain)
without touching method code. Format: one word or phrase per line; `#` starts a comment; blank lines
are ignored; each file opens with a comment saying what the list is for. `irregular_verbs.txt` holds
pairs ("went go"); `load_rows` reads tab-separated tables whose cells may hold phrases. Files are read
once per process.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


def _lines(name: str) -> list[str]:
    path = resources.files(__name__).joinpath(f"{name}.txt")
    if not path.is_file():
        raise FileNotFoundError(f"no word list {name!r} in qgmem/words/")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = line.split("#", 1)[0].strip()
        if entry:
            out.append(entry)
    return out


def digest(names: tuple[str, ...]) -> str:
    """A short hash of the named lists' files: part of a build key, so editing a list that decides what a
    build produces rebuilds that part of a stored memory instead of serving what the old list made."""
    import hashlib

    h = hashlib.sha1()
    for name in sorted(names):
        h.update(name.encode() + b"\0" + resources.files(__name__).joinpath(f"{name}.txt").read_bytes())
    return h.hexdigest()[:12]


@lru_cache(maxsize=None)
def load_list(name: str) -> tuple[str, ...]:
    """The entries of `qgmem/words/<name>.txt` in file order, without repeats."""
    return tuple(dict.fromkeys(_lines(name)))


@lru_cache(maxsize=None)
def load_words(name: str) -> frozenset[str]:
    """The entries of `qgmem/words/<name>.txt` as a set (case kept as written)."""
    return frozenset(load_list(name))


def load_table(name: str) -> dict[str, str]:
    """`qgmem/words/<name>.txt` read as "key value" pairs, one per line (a fresh dict each call)."""
    return dict(_cached_pairs(name))


@lru_cache(maxsize=None)
def _cached_pairs(name: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for entry in _lines(name):
        parts = entry.split()
        if len(parts) != 2:
            raise ValueError(f"qgmem/words/{name}.txt: expected 'key value', got {entry!r}")
        pairs.append((parts[0], parts[1]))
    return tuple(pairs)


@lru_cache(maxsize=None)
def load_rows(name: str) -> tuple[tuple[str, ...], ...]:
    """`qgmem/words/<name>.txt` read as tab-separated rows (cells stripped; a cell may hold spaces,
    so phrases like "break up" can be keys)."""
    return tuple(tuple(c.strip() for c in entry.split("\t")) for entry in _lines(name))
