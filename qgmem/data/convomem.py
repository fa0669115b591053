"""ConvoMem (Salesforce, arXiv 2511.10523): evidence items -> one Conversation each.

Upstream data: HF ``Salesforce/ConvoMem``, files
``core_benchmark/evidence_questions/<evidence type>/<n>_evidence/<batch>.json``. Each file is an
``EvidencePayload`` (``src/main/scala/com/salesforce/crmmembench/questions/evidence/EvidenceSchema.scala``
in ``SalesforceAIResearch/ConvoMem``)::

    {"evidence_items": [
        {"question": str, "answer": str,
         "message_evidences": [{"speaker": "User"|"Assistant", "text": str}, ...],
         "conversations": [{"messages": [{"speaker": str, "text": str}, ...],
                            "id": str?, "containsEvidence": bool?, "model_name": str?}, ...],
         "category": str,                      # the use case's topical category
         "scenario_description": str?, "personId": str?,
         "use_case_model_name": str?, "core_model_name": str?}, ...],
     "checkpoint": str?}

Confirmed from the Scala case classes and the HF viewer's error message (which prints this struct);
the folder names of the evidence types are those of the Scala ``*EvidenceConfig.resourcePath``s
(`EVIDENCE_TYPES`). The HF file tree itself could not be listed from here, so which ``<n>_evidence``
folders exist per type is not confirmed (reportedly ``changing_evidence`` has no ``1_evidence``);
missing ones are skipped. The HF repo also holds pre-mixed test cases (``question``/``answer``/
``messages`` rows); those are not read here.

Mapping: each item's conversations become sessions (no dates: ConvoMem has none), messages become
turns ``<session id>:<i>``; gold evidence = the turns whose text equals a ``message_evidences`` text
(whitespace/case-insensitive; failing that, containment either way); evidence texts found in no turn
go to ``unmatched_evidence``. Category = evidence type; ``meta['abstention']`` for abstention items.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..types import Conversation, Question, Session, Turn
from .errors import Ctx, DataError
from .jsonfile import read_json

HF_REPO = "Salesforce/ConvoMem"
HF_ROOT = "core_benchmark/evidence_questions"
EVIDENCE_TYPES = ("user_evidence", "assistant_facts_evidence", "changing_evidence", "abstention_evidence",
                  "preference_evidence", "implicit_connection_evidence")
_N_DIR = re.compile(r"^(\d+)_evidence$")
_WS = re.compile(r"\s+")


def load_convomem(path: str | Path | None = None, evidence_types: Sequence[str] | None = None,
                  evidence_counts: Sequence[int] | None = None, limit: int | None = None) -> list[Conversation]:
    """ConvoMem evidence items from a local file/folder (upstream layout) or, with no path, from the HF hub."""
    types = tuple(evidence_types or EVIDENCE_TYPES)
    counts = tuple(evidence_counts or range(1, 7))
    out: list[Conversation] = []
    if path is not None:
        for f, etype, n in _local_files(Path(path), types, counts):
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


def hub_rows(repo: str, data_files: str | list[str]) -> list[dict[str, Any]] | None:
    """Evidence items of the matching files through `datasets` (each item one row); None if no file matches.

    ``repo`` may also be ``"json"`` with local ``data_files``: the same code path without a network.
    """
    import datasets  # heavy import, only when the hub is used

    try:
        ds = datasets.load_dataset(repo, data_files=data_files, field="evidence_items", split="train")
    except (FileNotFoundError, StopIteration):  # no file matches (hub: FileNotFoundError; local: StopIteration)
        return None
    except ConnectionError as e:
        raise DataError(Path(repo), "", f"cannot reach the HF hub ({e}); download {HF_ROOT}/ from "
                                        f"https://huggingface.co/datasets/{HF_REPO} and put it under "
                                        f"<data dir>/convomem/ (or pass path=)") from None
    return list(ds)


def _local_files(root: Path, types: tuple[str, ...], counts: tuple[int, ...]) -> Iterable[tuple[Path, str, int]]:
    if not root.exists():
        raise DataError(root, "", f"file or folder not found: {root}")
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    if not files:
        raise DataError(root, "", "no .json evidence files in this folder")
    for f in files:
        parts = f.parts
        etype = next((p for p in reversed(parts) if p in EVIDENCE_TYPES), "unknown")
        n = next((int(m.group(1)) for p in reversed(parts) if (m := _N_DIR.match(p))), 0)
        if (etype in types or etype == "unknown") and (n in counts or n == 0):
            yield f, etype, n


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _items(file: Path, prefix: str, etype: str, n: int, items: list[Any]) -> list[Conversation]:
    return [_item(Ctx(file, f"evidence item {i}"), f"{prefix}#{i}", etype, n, item) for i, item in enumerate(items)]


def _item(ctx: Ctx, cid: str, etype: str, n: int, item: Any) -> Conversation:
    question = ctx.field(item, "question", str)
    answer = ctx.field(item, "answer", str)
    sessions: list[Session] = []
    texts: list[tuple[str, str, str]] = []  # (turn id, speaker, normalised text)
    used: set[str] = set()
    for j, conv in enumerate(ctx.field(item, "conversations", list)):
        sctx = ctx.sub(f"conversation {j}")
        given = sctx.field(conv, "id", str, optional=True)
        sid = given if given and given not in used else f"c{j}"
        used.add(sid)
        turns = []
        for k, msg in enumerate(sctx.field(conv, "messages", list)):
            mctx = sctx.sub(f"message {k}")
            t = Turn(id=f"{sid}:{k}", speaker=mctx.field(msg, "speaker", str), text=mctx.field(msg, "text", str))
            turns.append(t)
            texts.append((t.id, t.speaker, _norm(t.text)))
        sessions.append(Session(id=sid, date=None, turns=turns))
    evidence: dict[str, None] = {}
    ev_sessions: dict[str, None] = {}
    unmatched: list[str] = []
    raw_ev = ctx.field(item, "message_evidences", list, optional=True, default=[])
    for k, ev in enumerate(raw_ev):
        ectx = ctx.sub(f"message_evidences {k}")
        etext = _norm(ectx.field(ev, "text", str))
        hits = [tid for tid, _, t in texts if t == etext] or \
               [tid for tid, _, t in texts if etext and t and (etext in t or t in etext)]
        if not hits:
            unmatched.append(ev["text"])
        for tid in hits:
            evidence.setdefault(tid, None)
            ev_sessions.setdefault(tid.rsplit(":", 1)[0], None)
    meta = {"abstention": etype.startswith("abstention"), "evidence_count": n,
            "usecase_category": item.get("category"), "scenario_description": item.get("scenario_description"),
            "person_id": item.get("personId"), "message_evidences": raw_ev}
    q = Question(id=f"{cid}:q0", text=question, answers=[answer], category=etype, evidence=list(evidence),
                 evidence_sessions=list(ev_sessions), conversation_id=cid, unmatched_evidence=unmatched, meta=meta)
    return Conversation(id=cid, sessions=sessions, questions=[q], speakers=["User", "Assistant"],
                        meta={"evidence_type": etype, "evidence_count": n})
