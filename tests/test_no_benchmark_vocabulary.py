"""The package holds no benchmark vocabulary: no speaker name of a benchmark conversation and no LoCoMo topic
word may appear (whole word, any case) in a word list, a prompt, or a Python string or comment under qgmem/.
A method tuned to the names and topics of the test conversations would not be a general method.

Speaker names come from the benchmark files present under $QGMEM_DATA_DIR (files that are missing are
skipped); role names ("user", "assistant", "Speaker 1") are not person names and are left out."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "qgmem"
# topic words of the LoCoMo test conversations
TOPIC_WORDS = ("pottery", "lgbtq", "transgender", "adoption", "counseling", "clarinet", "turtles")
ROLES = re.compile(r"(?i)^(user|assistant|system|speaker\s*\d+|bot|human)$")


def _data_dir() -> Path:
    env = os.environ.get("QGMEM_DATA_DIR")
    return Path(env).expanduser() if env else ROOT.parent / "shared" / "data"


def benchmark_speakers(root: Path) -> set[str]:
    """Person names speaking in the benchmark conversations found under `root` (roles left out)."""
    names: set[str] = set()
    locomo = root / "locomo" / "locomo10.json"
    if locomo.exists():
        for sample in json.loads(locomo.read_text(encoding="utf-8")):
            conv = sample["conversation"]
            names.update(str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k))
    loaders = {"msc": ("msc", {}), "longmemeval": ("longmemeval-oracle", {"limit": 5})}
    for folder, (name, kw) in loaders.items():
        if not (root / folder).exists():
            continue
        from qgmem.data.registry import load_dataset_by_name

        try:
            convs = load_dataset_by_name(name, data_dir=root, download=False, **kw)
        except FileNotFoundError:
            continue
        names.update(s for c in convs for s in [*c.speakers, *(t.speaker for t in c.turns())])
    return {n.strip() for n in names if n.strip() and not ROLES.match(n.strip())}


def _files() -> list[Path]:
    words = sorted((PACKAGE / "words").glob("*.txt"))
    prompts = sorted(PACKAGE.glob("**/prompts/*.txt"))
    code = sorted(PACKAGE.rglob("*.py"))
    return [*words, *prompts, *code]


def _texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of what a file says in words: every line of a .txt; string constants and comments of a .py."""
    src = path.read_text(encoding="utf-8")
    if path.suffix == ".txt":
        return list(enumerate(src.splitlines(), 1))
    out = [(n.lineno, n.value) for n in ast.walk(ast.parse(src))
           if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    out += [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(src).readline)
            if t.type == tokenize.COMMENT]
    return out


def vocabulary_pattern() -> re.Pattern[str]:
    """The topic words and the benchmark speakers under $QGMEM_DATA_DIR, each as a whole word, any case."""
    words = sorted({*TOPIC_WORDS, *benchmark_speakers(_data_dir())}, key=str.lower)
    return re.compile(r"(?<![\w-])(" + "|".join(re.escape(w) for w in words) + r")(?![\w-])", re.IGNORECASE)


@pytest.fixture(scope="module")
def vocabulary() -> re.Pattern[str]:
    return vocabulary_pattern()


def test_the_vocabulary_holds_the_locomo_speakers_when_the_data_is_there(vocabulary):
    if not (_data_dir() / "locomo" / "locomo10.json").exists():
        pytest.skip("LoCoMo not under $QGMEM_DATA_DIR: topic words only")
    assert vocabulary.search("Caroline") and vocabulary.search("as jon said") and vocabulary.search("Pottery")
    assert not vocabulary.search("user") and not vocabulary.search("Jonathan")


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_benchmark_vocabulary(path: Path, vocabulary: re.Pattern[str]):
    found = [f"line {line + text.count(chr(10), 0, m.start())}: {m.group(0)!r}"
             for line, text in _texts(path) for m in vocabulary.finditer(text)]
    assert not found, f"{path.relative_to(ROOT)} holds benchmark vocabulary: {', '.join(found[:20])}"
