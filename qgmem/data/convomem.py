"""ConvoMem (Salesforce, arXiv 2511.10523) in its two upstream layouts: evidence items, and the pre-mixed
test cases that the QGMem paper counts ("1,200 ConvoMem cases yielding 2,138 QA pairs").

Upstream: the HF dataset ``Salesforce/ConvoMem`` (https://huggingface.co/datasets/Salesforce/ConvoMem), made
by the Scala code of ``SalesforceAIResearch/ConvoMem`` on GitHub. Both layouts live under ``core_benchmark/``:

``evidence_questions/<evidence type>/<n>_evidence/<file>.json`` (`load_convomem`): an ``EvidencePayload``
(``src/main/scala/com/salesforce/crmmembench/questions/evidence/EvidenceSchema.scala``)::

    {"evidence_items": [
        {"question": str, "answer": str,
         "message_evidences": [{"speaker": "User"|"Assistant", "text": str}, ...],
         "conversations": [{"messages": [{"speaker": str, "text": str}, ...],
                            "id": str?, "containsEvidence": bool?, "model_name": str?}, ...],
         "category": str,                      # the use case's topical category
         "scenario_description": str?, "personId": str?,
         "use_case_model_name": str?, "core_model_name": str?}, ...],
     "checkpoint": str?}

Each item becomes one Conversation (its conversations the sessions) with one question.

``pre_mixed_testcases/<evidence type>/<n>_evidence/batched_NNN.json`` (`load_convomem_cases`): a JSON list of
serialised ``TestCase``s (``src/main/scala/com/salesforce/crmmembench/evaluation/TestCase.scala``; written
for the HF release by ``evaluation/runners/GenerateAllTestCases.scala`` through
``BatchedTestCasesGenerator`` and ``CachingTestCasesGenerator``)::

    [{"evidenceItems": [<EvidenceItem as above>, ...],   # the QA pairs asked over this case
      "conversations": [<Conversation as above>, ...],   # one shared haystack: every item's evidence
                                                         # conversations mixed with filler ones
      "contextSize": int}, ...]                          # conversations the case was built for

A case groups several evidence items over shared conversations: for each context size the batched
generator shuffles the items and packs them into cases whose evidence conversations fit ``contextSize``
(at most 100 items a case), then fills the case with the same persons' filler conversations. A case is
the paper's unit: it becomes one Conversation (its conversations the sessions) with one question per
evidence item, so a prepare config's ``max_conversations`` counts cases and the questions are its QA
pairs. Every item is in one case per context size, so the same QA pair recurs in cases of other sizes:
a case that repeats an evidence item of a case read before (files in path order) is skipped and counted,
so no question can land in two splits.

Confirmed from the Scala case classes and the HF viewer's error message (which prints the
``EvidencePayload`` struct and the test-case columns); the folder names of the evidence types are those
of the Scala ``*EvidenceConfig.resourcePath``s (`EVIDENCE_TYPES`). Which ``<n>_evidence`` folders exist
per type could not be listed from here (reportedly ``changing_evidence`` has no ``1_evidence``); missing
ones are skipped. The hub's ``filler_conversations/`` are never read.

Mapping, both layouts: conversations become sessions (no dates: ConvoMem has none), messages become
turns ``<session id>:<i>``; gold evidence = the turns whose text equals a ``message_evidences`` text
(whitespace/case-insensitive; failing that, containment either way); evidence texts found in no turn
go to ``unmatched_evidence``. Category = evidence type; ``meta['abstention']`` for abstention items.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..types import Conversation, Question, Session, Turn
from .errors import Ctx, DataError
from .jsonfile import read_json

HF_REPO = "Salesforce/ConvoMem"
HF_ROOT = "core_benchmark/evidence_questions"
CASES_ROOT = "core_benchmark/pre_mixed_testcases"
_LAYOUTS = {"evidence_questions", "pre_mixed_testcases", "filler_conversations"}  # folders under core_benchmark/
EVIDENCE_TYPES = ("user_evidence", "assistant_facts_evidence", "changing_evidence", "abstention_evidence",
                  "preference_evidence", "implicit_connection_evidence")
_N_DIR = re.compile(r"^(\d+)_evidence$")
_WS = re.compile(r"\s+")
log = logging.getLogger(__name__)


def load_convomem(path: str | Path | None = None, evidence_types: Sequence[str] | None = None,
                  evidence_counts: Sequence[int] | None = None, limit: int | None = None) -> list[Conversation]:
    """ConvoMem evidence items (one Conversation each) from a local file/folder (upstream layout) or, with no
    path, from the HF hub."""
    types = tuple(evidence_types or EVIDENCE_TYPES)
    counts = tuple(evidence_counts or range(1, 7))
    out: list[Conversation] = []
    if path is not None:
        for f, etype, n in _local_files(Path(path), types, counts, "evidence_questions"):
            payload = read_json(f)
            items = payload.get("evidence_items") if isinstance(payload, dict) else payload
            if not isinstance(items, list):
                raise DataError(f, "", "field 'evidence_items' missing (expected an EvidencePayload object)")
            out.extend(_items(f, f"{etype}/{n}_evidence/{f.stem}", etype, n, items))
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out
    for etype in types:
        for n in counts:
            rows = hub_rows(HF_REPO, f"{HF_ROOT}/{etype}/{n}_evidence/*.json")
            if rows is None:
                continue
            out.extend(_items(Path(f"{HF_ROOT}/{etype}/{n}_evidence"), f"{etype}/{n}_evidence", etype, n, rows))
            if limit is not None and len(out) >= limit:
                return out[:limit]
    if not out:
        raise DataError(Path(HF_REPO), "", f"no evidence files for types {list(types)} and counts {list(counts)} "
                                           f"under {HF_ROOT}/")
    return out


def load_convomem_cases(path: str | Path | None = None, evidence_types: Sequence[str] | None = None,
                        evidence_counts: Sequence[int] | None = None, context_sizes: Sequence[int] | None = None,
                        limit: int | None = None) -> list[Conversation]:
    """ConvoMem pre-mixed test cases (one Conversation each, one question per evidence item) from a local
    file/folder (upstream layout) or, with no path, from the HF hub; only cases built for `context_sizes`
    when given. A case repeating an evidence item of an earlier case is skipped (see the module doc)."""
    types = tuple(evidence_types or EVIDENCE_TYPES)
    counts = tuple(evidence_counts or range(1, 7))
    sizes = set(context_sizes) if context_sizes else None
    if path is not None:
        sources: Iterable[tuple[Path, str, str, int, list[Any]]] = (
            (f, f"{etype}/{n}_evidence/{f.stem}", etype, n, _case_list(f)) for f, etype, n in
            _local_files(Path(path), types, counts, "pre_mixed_testcases"))
    else:
        sources = ((Path(f"{CASES_ROOT}/{etype}/{n}_evidence"), f"{etype}/{n}_evidence", etype, n, rows)
                   for etype in types for n in counts
                   if (rows := hub_rows(HF_REPO, f"{CASES_ROOT}/{etype}/{n}_evidence/*.json", field=None)) is not None)
    out: list[Conversation] = []
    seen: set[tuple[str, str, str]] = set()
    skipped = 0
    for file, prefix, etype, n, cases in sources:
        for i, case in enumerate(cases):
            ctx = Ctx(file, f"test case {i}")
            size = ctx.field(case, "contextSize", int, optional=True)
            if sizes is not None and size not in sizes:
                continue
            keys = [_item_key(ctx.sub(f"evidence item {k}"), it)
                    for k, it in enumerate(ctx.field(case, "evidenceItems", list))]
            if seen.intersection(keys):
                skipped += 1
                continue
            seen.update(keys)
            out.append(_case(ctx, f"{prefix}#{i}", etype, n, size, case))
            if limit is not None and len(out) >= limit:
                return out
    if skipped:
        log.warning("ConvoMem: %d test case(s) skipped: each repeats an evidence item of a case read before "
                    "(the same QA pair over another haystack)", skipped)
    if path is None and not out:
        raise DataError(Path(HF_REPO), "", f"no test cases for types {list(types)}, counts {list(counts)} and "
                                           f"context sizes {sorted(sizes) if sizes else 'all'} under {CASES_ROOT}/")
    return out


def hub_rows(repo: str, data_files: str | list[str],
             field: str | None = "evidence_items") -> list[dict[str, Any]] | None:
    """Rows of the matching files through `datasets` (each evidence item a row; with ``field=None`` each
    element of the top-level list, i.e. each test case); None if no file matches.

    ``repo`` may also be ``"json"`` with local ``data_files``: the same code path without a network.
    """
    import datasets  # heavy import, only when the hub is used

    try:
        kw = {"field": field} if field else {}
        ds = datasets.load_dataset(repo, data_files=data_files, split="train", **kw)
    except (FileNotFoundError, StopIteration):  # no file matches (hub: FileNotFoundError; local: StopIteration)
        return None
    except ConnectionError as e:
        raise DataError(Path(repo), "", f"cannot reach the HF hub ({e}); download {HF_ROOT}/ (or {CASES_ROOT}/) "
                                        f"from https://huggingface.co/datasets/{HF_REPO} into <data dir>/convomem/, "
                                        f"keeping its path (or pass path=)") from None
    return list(ds)


def _local_files(root: Path, types: tuple[str, ...], counts: tuple[int, ...],
                 layout: str) -> Iterable[tuple[Path, str, int]]:
    """(file, evidence type, evidence count) of the `layout` files under `root` (the files of the other
    upstream layouts in the same tree are left alone)."""
    if not root.exists():
        raise DataError(root, "", f"file or folder not found: {root}")
    files = [root] if root.is_file() else [f for f in sorted(root.rglob("*.json"))
                                           if not (_LAYOUTS - {layout}) & set(f.relative_to(root).parts)]
    if not files:
        raise DataError(root, "", f"no .json {layout} files in this folder")
    for f in files:
        parts = f.parts
        etype = next((p for p in reversed(parts) if p in EVIDENCE_TYPES), "unknown")
        n = next((int(m.group(1)) for p in reversed(parts) if (m := _N_DIR.match(p))), 0)
        if (etype in types or etype == "unknown") and (n in counts or n == 0):
            yield f, etype, n


def _case_list(f: Path) -> list[Any]:
    cases = read_json(f)
    if not isinstance(cases, list):
        raise DataError(f, "", "expected a JSON list of test cases (pre_mixed_testcases layout), got "
                               f"{type(cases).__name__}")
    return cases


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _item_key(ctx: Ctx, item: Any) -> tuple[str, str, str]:
    """What makes two evidence items the same QA pair: question, answer and person."""
    return (ctx.field(item, "question", str), ctx.field(item, "answer", str),
            str(ctx.field(item, "personId", str, optional=True, default="")))


def _items(file: Path, prefix: str, etype: str, n: int, items: list[Any]) -> list[Conversation]:
    return [_item(Ctx(file, f"evidence item {i}"), f"{prefix}#{i}", etype, n, item) for i, item in enumerate(items)]


def _sessions(ctx: Ctx, convs: list[Any]) -> tuple[list[Session], list[tuple[str, str]]]:
    """Upstream conversations -> sessions (id as given unless missing or repeated: ``c<j>``), and
    (turn id, normalised text) of every turn for evidence matching."""
    sessions: list[Session] = []
    texts: list[tuple[str, str]] = []
    used: set[str] = set()
    for j, conv in enumerate(convs):
        sctx = ctx.sub(f"conversation {j}")
        given = sctx.field(conv, "id", str, optional=True)
        sid = given if given and given not in used else f"c{j}"
        used.add(sid)
        turns = []
        for k, msg in enumerate(sctx.field(conv, "messages", list)):
            mctx = sctx.sub(f"message {k}")
            t = Turn(id=f"{sid}:{k}", speaker=mctx.field(msg, "speaker", str), text=mctx.field(msg, "text", str))
            turns.append(t)
            texts.append((t.id, _norm(t.text)))
        sessions.append(Session(id=sid, date=None, turns=turns))
    return sessions, texts


def _question(ctx: Ctx, qid: str, cid: str, etype: str, n: int, item: Any,
              texts: list[tuple[str, str]]) -> Question:
    """One evidence item as a question over the turns `texts` (its gold evidence matched by text)."""
    question = ctx.field(item, "question", str)
    answer = ctx.field(item, "answer", str)
    evidence: dict[str, None] = {}
    ev_sessions: dict[str, None] = {}
    unmatched: list[str] = []
    raw_ev = ctx.field(item, "message_evidences", list, optional=True, default=[])
    for k, ev in enumerate(raw_ev):
        ectx = ctx.sub(f"message_evidences {k}")
        etext = _norm(ectx.field(ev, "text", str))
        hits = [tid for tid, t in texts if t == etext] or \
               [tid for tid, t in texts if etext and t and (etext in t or t in etext)]
        if not hits:
            unmatched.append(ev["text"])
        for tid in hits:
            evidence.setdefault(tid, None)
            ev_sessions.setdefault(tid.rsplit(":", 1)[0], None)
    meta = {"abstention": etype.startswith("abstention"), "evidence_count": n,
            "usecase_category": item.get("category"), "scenario_description": item.get("scenario_description"),
            "person_id": item.get("personId"), "message_evidences": raw_ev}
    return Question(id=qid, text=question, answers=[answer], category=etype, evidence=list(evidence),
                    evidence_sessions=list(ev_sessions), conversation_id=cid, unmatched_evidence=unmatched, meta=meta)


def _item(ctx: Ctx, cid: str, etype: str, n: int, item: Any) -> Conversation:
    ctx.field(item, "question", str)
    ctx.field(item, "answer", str)
    sessions, texts = _sessions(ctx, ctx.field(item, "conversations", list))
    q = _question(ctx, f"{cid}:q0", cid, etype, n, item, texts)
    return Conversation(id=cid, sessions=sessions, questions=[q], speakers=["User", "Assistant"],
                        meta={"evidence_type": etype, "evidence_count": n})


def _case(ctx: Ctx, cid: str, etype: str, n: int, size: int | None, case: Any) -> Conversation:
    """One test case: its shared conversations as sessions, one question per evidence item."""
    sessions, texts = _sessions(ctx, ctx.field(case, "conversations", list))
    items = ctx.field(case, "evidenceItems", list)
    qs = [_question(ctx.sub(f"evidence item {k}"), f"{cid}:q{k}", cid, etype, n, it, texts)
          for k, it in enumerate(items)]
    return Conversation(id=cid, sessions=sessions, questions=qs, speakers=["User", "Assistant"],
                        meta={"evidence_type": etype, "evidence_count": n, "context_size": size,
                              "layout": "pre_mixed_testcases"})
