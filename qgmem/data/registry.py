"""Benchmark names -> loaders, so evaluation configs can say ``dataset: locomo``.

Files come from ``data_dir`` (default `qgmem.paths.data_dir()`, i.e. $QGMEM_DATA_DIR); a missing
LoCoMo/LongMemEval/BEAM file is downloaded (`download.ensure`) unless ``download=False``. ConvoMem and
FactConsolidation are read from ``<data_dir>/convomem`` / ``<data_dir>/memoryagentbench`` when those
exist, else from the HF hub through `datasets`.
"""

from __future__ import annotations

import json

from pathlib import Path
from typing import Any, Callable

from ..paths import data_dir as default_data_dir
from ..types import Conversation
from . import download as dl
from .beam import load_beam
from .convomem import load_convomem, load_convomem_cases
from .errors import DataError
from .factconsolidation import load_factconsolidation
from .locomo import load_locomo
from .longmemeval import default_path as lme_path
from .longmemeval import load_longmemeval
from .msc import default_path as msc_path
from .msc import load_msc
from .msc_persona import load_msc_persona

DATASET_NAMES = ("locomo", "longmemeval-oracle", "longmemeval-s", "beam-128k", "beam-500k", "convomem", "convomem-cases",
                 "factconsolidation-sh", "factconsolidation-mh", "msc", "msc-persona")


def _locomo(root: Path, download: bool, **kw: Any) -> list[Conversation]:
    p = root / "locomo" / "locomo10.json"
    if not p.exists():
        dl.ensure("locomo", root, download)
    return load_locomo(p, **kw)


def _lme(variant: str) -> Callable[..., list[Conversation]]:
    def load(root: Path, download: bool, **kw: Any) -> list[Conversation]:
        p = lme_path(variant, root)  # type: ignore[arg-type]
        if not p.exists():
            dl.ensure(f"longmemeval-{variant}", root, download)
            p = lme_path(variant, root)  # type: ignore[arg-type]
        return load_longmemeval(variant, p, **kw)  # type: ignore[arg-type]
    return load


def _beam(scale: str) -> Callable[..., list[Conversation]]:
    def load(root: Path, download: bool, **kw: Any) -> list[Conversation]:
        qdir = root / "beam" / "chats" / ("100K" if scale == "128K" else "500K")
        have_500k_chats = (root / "beam" / "beam_500K_chats.json.xz").exists() or (qdir / "1" / "chat.json").exists()
        if not qdir.is_dir() or (scale == "500K" and not have_500k_chats):
            dl.ensure(f"beam-{scale.lower()}", root, download)
        return load_beam(scale, root / "beam", **kw)  # type: ignore[arg-type]
    return load


def _with_root(root: Path, fn: Callable[[], list[Conversation]]) -> list[Conversation]:
    """Hub errors say '<data dir>/...'; name the real folder the user should fill."""
    try:
        return fn()
    except DataError as e:
        raise DataError(e.file, e.where, e.problem.replace("<data dir>", str(root))) from None


def _convomem(root: Path, download: bool, **kw: Any) -> list[Conversation]:
    local = root / "convomem"
    return _with_root(root, lambda: load_convomem(local if local.exists() else None, **kw))


def _convomem_cases(root: Path, download: bool, **kw: Any) -> list[Conversation]:
    """ConvoMem's pre-mixed test cases, the QGMem paper's training unit (see qgmem/data/convomem.py)."""
    local = root / "convomem"
    return _with_root(root, lambda: load_convomem_cases(local if local.exists() else None, **kw))


def _fc(variant: str) -> Callable[..., list[Conversation]]:
    def load(root: Path, download: bool, **kw: Any) -> list[Conversation]:
        local = root / "memoryagentbench"
        return _with_root(root, lambda: load_factconsolidation(
            variant, path=local if local.exists() else None, **kw))  # type: ignore[arg-type]
    return load


def _msc(root: Path, download: bool, session: int = 3, split: str = "test", **kw: Any) -> list[Conversation]:
    return load_msc(session, split, msc_path(session, split, root), **kw)  # type: ignore[arg-type]


_LOADERS: dict[str, Callable[..., list[Conversation]]] = {
    "locomo": _locomo,
    "longmemeval-oracle": _lme("oracle"),
    "longmemeval-s": _lme("s"),
    "beam-128k": _beam("128K"),
    "beam-500k": _beam("500K"),
    "convomem": _convomem,
    "convomem-cases": _convomem_cases,  # test cases: several QA pairs over shared conversations (training)
    "factconsolidation-sh": _fc("sh"),
    "factconsolidation-mh": _fc("mh"),
    "msc": _msc,  # dialogue only, no questions (session 3, test split by default)
    "msc-persona": lambda root, download, **kw: load_msc_persona(root, **kw),  # persona facts -> their turn (training)
}


_STREAMING = {"longmemeval-oracle", "longmemeval-s", "convomem", "convomem-cases", "msc", "msc-persona"}  # loaders that stop early at ``limit``


def load_dataset_by_name(name: str, data_dir: str | Path | None = None, download: bool = True,
                         **kw: Any) -> list[Conversation]:
    """Load a benchmark by registry name; extra keywords go to its loader. ``limit=N`` keeps the first N
    conversations (LongMemEval, ConvoMem and MSC stop reading there; the others load all, then cut)."""
    key = name.lower()
    if key not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASET_NAMES)}")
    root = Path(data_dir) if data_dir else default_data_dir()
    limit = kw.pop("limit", None) if key not in _STREAMING else None
    convs = _LOADERS[key](root, download, **kw)
    return convs[:limit] if limit is not None else convs


def load_conversations_json(path: str | Path) -> list[Conversation]:
    """Conversations saved as JSON (one object or a list, in the shape of `qgmem.types`)."""
    from ..types import conversation_from_dict

    from .jsonfile import read_json

    path = Path(path)
    raw = read_json(path)
    items = raw if isinstance(raw, list) else [raw]
    convs = []
    for i, d in enumerate(items):
        try:
            conv = conversation_from_dict(d)
        except (KeyError, TypeError, AttributeError) as e:
            raise DataError(path, f"conversation [{i}]", f"bad or missing field: {e}") from None
        conv.meta.setdefault("source", path.name)
        convs.append(conv)
    return convs


def select_conversations(convs: list[Conversation], ids: list[str] | None) -> list[Conversation]:
    """The conversations named by `ids` (all when None); an unknown id is an error listing the known ones."""
    if not ids:
        return convs
    known = {c.id for c in convs}
    unknown = [c for c in ids if c not in known]
    if unknown:
        raise ValueError(f"unknown conversation id(s) {unknown}; known: {sorted(known)[:20]}")
    return [c for c in convs if c.id in set(ids)]
