"""MemoryAgentBench FactConsolidation-SH/MH (conflict resolution) -> Conversations of numbered facts.

Upstream: HF ``ai-hyz/MemoryAgentBench``, split ``Conflict_Resolution``
(``data/Conflict_Resolution-00000-of-00001.parquet``). One row per source
``factconsolidation_{sh,mh}_{6k,32k,64k,262k}``::

    {"context": "Here is a list of facts:\\n0. <fact>\\n1. <fact>\\n...",
     "questions": [str, ...],
     "answers": [[str, ...], ...],          # accepted variants per question
     "metadata": {"source": "factconsolidation_sh_6k", "qa_pair_ids": [str, ...],
                  "question_ids"?, "question_types"?, "question_dates"?, "previous_events"?, "demo"?}}

Confirmed from code that reads the rows (field names ``context``/``questions``/``answers``/
``metadata.source``/``metadata.qa_pair_ids``, facts written as ``N. text``); the exact header line and
whether facts are separated by newlines or spaces could not be seen here, so facts are found by their
consecutive numbers ``0. 1. 2. ...`` wherever they start after whitespace. Later facts override
earlier ones (the benchmark's rule), so the fact number is the memory time.

Mapping: one Conversation per source row; one turn per fact (id ``F<number>``, speaker "user"),
chunked into sessions ``S1, S2, ...`` of ``facts_per_session`` facts (no dates: order is time);
questions get id = ``qa_pair_ids[i]``, category = source, answers = the variants. There is no
gold evidence (``evidence == []``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

from ..types import Conversation, Question, Session, Turn
from .errors import Ctx, DataError
from .jsonfile import read_json

HF_REPO = "ai-hyz/MemoryAgentBench"
HF_SPLIT = "Conflict_Resolution"
SIZES = ("6k", "32k", "64k", "262k")
_MARK = re.compile(r"(?:^|(?<=\s))(\d+)\.\s+")


def source_name(variant: str, size: str) -> str:
    return f"factconsolidation_{variant}_{size}"


def load_factconsolidation(variant: Literal["sh", "mh"] = "sh", sizes: Sequence[str] | None = None,
                           path: str | Path | None = None, facts_per_session: int = 50) -> list[Conversation]:
    """One Conversation per context size; rows from a local parquet/json/jsonl file or folder, else the HF hub.

    ``sizes=None`` takes every size present (an error only if none is); named sizes must all be present.
    """
    if variant not in ("sh", "mh"):
        raise ValueError(f"unknown FactConsolidation variant {variant!r}; choose 'sh' or 'mh'")
    explicit = sizes is not None
    sizes = tuple(sizes or SIZES)
    bad = [s for s in sizes if s not in SIZES]
    if bad:
        raise ValueError(f"unknown sizes {bad}; choose from {SIZES}")
    if facts_per_session < 1:
        raise ValueError("facts_per_session must be >= 1")
    wanted = {source_name(variant, s): s for s in sizes}
    if path is not None:
        file, rows = _local_rows(Path(path))
    else:
        file, rows = Path(f"{HF_REPO}:{HF_SPLIT}"), hub_rows(HF_REPO, HF_SPLIT)
    found: dict[str, Conversation] = {}
    for i, row in enumerate(rows):
        ctx = Ctx(file, f"row {i}")
        meta = ctx.field(row, "metadata", dict)
        src = ctx.sub("metadata").field(meta, "source", str)
        if src in wanted:
            found[src] = _row(Ctx(file, f"row {i} ({src})"), row, variant, wanted[src], facts_per_session)
    missing = [s for s in wanted if s not in found]
    if missing and (explicit or not found):
        raise DataError(file, "", f"no row with metadata.source {', '.join(missing)}")
    return [found[s] for s in wanted if s in found]


def hub_rows(repo: str, split: str, data_files: Any = None) -> list[dict[str, Any]]:
    """Rows of a `datasets` split (``repo`` may be "parquet"/"json" with local ``data_files``)."""
    import datasets  # heavy import, only when needed

    try:
        ds = datasets.load_dataset(repo, split=split, data_files=data_files) if data_files else \
            datasets.load_dataset(repo, split=split)
    except ConnectionError as e:
        raise DataError(Path(repo), "", f"cannot reach the HF hub ({e}); download "
                                        f"data/{HF_SPLIT}-00000-of-00001.parquet from "
                                        f"https://huggingface.co/datasets/{HF_REPO} and put it under "
                                        f"<data dir>/memoryagentbench/ (or pass path=)") from None
    return list(ds)


def _local_rows(path: Path) -> tuple[Path, list[dict[str, Any]]]:
    if not path.exists():
        raise DataError(path, "", f"file or folder not found: {path}")
    if path.is_dir():
        cands = sorted(path.rglob(f"{HF_SPLIT}*.parquet")) or sorted(path.rglob("*.parquet")) or \
            sorted(path.rglob("*.jsonl")) or sorted(path.rglob("*.json"))
        if not cands:
            raise DataError(path, "", f"no {HF_SPLIT}*.parquet, .jsonl or .json file in this folder")
        rows: list[dict[str, Any]] = []
        for f in cands:
            rows.extend(_local_rows(f)[1])
        return path, rows
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return path, pq.read_table(path).to_pylist()
    if path.suffix == ".jsonl":
        out = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise DataError(path, f"line {n}", f"invalid JSON: {e.msg}") from None
        return path, out
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(path, "", "expected a list of rows")
    return path, data


def split_facts(context: str) -> tuple[str, list[tuple[int, str]]]:
    """(preamble, [(number, fact text)]) from a numbered list; numbers must run on by one."""
    marks = []
    expect: int | None = None
    for m in _MARK.finditer(context):
        num = int(m.group(1))
        if expect is None or num == expect:
            marks.append(m)
            expect = num + 1
    if not marks:
        return context.strip(), []
    facts = []
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(context)
        facts.append((int(m.group(1)), context[m.end():end].strip()))
    return context[:marks[0].start()].strip(), facts


def _chunks(items: list[Any], n: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def _row(ctx: Ctx, row: dict[str, Any], variant: str, size: str, per_session: int) -> Conversation:
    src = source_name(variant, size)
    context = ctx.field(row, "context", str)
    questions = ctx.field(row, "questions", list)
    answers = ctx.field(row, "answers", list)
    meta = row["metadata"]
    if len(questions) != len(answers):
        raise ctx.error(f"fields 'questions' and 'answers' differ in length ({len(questions)} vs {len(answers)})")
    preamble, facts = split_facts(context)
    if not facts:
        raise ctx.error("field 'context' holds no numbered facts ('0. ...')")
    sessions = [Session(id=f"S{k + 1}", date=None,
                        turns=[Turn(id=f"F{num}", speaker="user", text=text) for num, text in chunk])
                for k, chunk in enumerate(_chunks(facts, per_session))]
    ids = meta.get("qa_pair_ids") or []
    qtypes = meta.get("question_types") or []
    out = []
    for i, (qt, ans) in enumerate(zip(questions, answers)):
        qctx = ctx.sub(f"question {i}")
        if not isinstance(qt, str):
            raise qctx.error(f"field 'questions' item {i} should be a string")
        variants = ans if isinstance(ans, list) else [ans]
        if not variants or not all(isinstance(a, (str, int, float)) for a in variants):
            raise qctx.error(f"field 'answers' item {i} should be a non-empty list of strings")
        qid = str(ids[i]) if i < len(ids) and ids[i] else f"{src}:q{i}"
        qmeta: dict[str, Any] = {"abstention": False, "variant": variant, "size": size}
        if i < len(qtypes):
            qmeta["question_type"] = qtypes[i]
        out.append(Question(id=qid, text=qt, answers=[str(a) for a in variants], category=src,
                            conversation_id=src, meta=qmeta))
    return Conversation(id=src, sessions=sessions, questions=out, speakers=["user"],
                        meta={"source": src, "preamble": preamble, "facts": len(facts),
                              "time_order": "fact number (later facts override earlier ones)"})
