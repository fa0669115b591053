#!/usr/bin/env python
"""LongMemEval-oracle questions written as ConvoMem pre-mixed test cases, the data of the CPU rehearsal of the
paper recipe (bench/rehearsal.py), where ConvoMem itself is not available.

    python bench/rehearsal_data.py --out runs/rehearsal_cpu/data [--context-size 2] [--max-chars 400]

The output is ``<out>/convomem/core_benchmark/pre_mixed_testcases/<evidence type>/<n>_evidence/batched_000.json``,
the upstream layout that `qgmem.data.convomem.load_convomem_cases` reads (``dataset: convomem-cases``), so the
rehearsal prepares through the very loader and prepare config keys the paper run uses. How a question becomes a
case, as ConvoMem's BatchedTestCasesGenerator packs evidence items:

- an evidence item is one question: its oracle sessions are its evidence conversations (User/Assistant turns,
  cut to ``--max-chars`` at a word boundary: the data itself is cut, so every reader sees the same turns), its
  ``has_answer`` turns the ``message_evidences``, its ``question_type`` the evidence type (below);
- items of one type are shuffled (seeded) and packed into cases of exactly ``--context-size`` conversations:
  with size 2, two one-session items share a case, a two-session item has one alone; an item left over, or with
  more sessions than the size, is not written (counted in the summary). ConvoMem has no dates: none are written.

Questions scored anywhere in this repository are left out: the val and test splits of the LongMemEval prepare
configs (`SCORED_PREPARES`, computed with prepare's own selection and split rule over the question ids of the
LongMemEval-S file). Every LongMemEval answer-run config scores all questions of its file, so a checkpoint trained
here must not be scored on LongMemEval; the demo scores it on LoCoMo.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# LongMemEval question type -> the ConvoMem evidence type folder it is filed under (a layout mapping: the types
# only roughly correspond)
EVIDENCE_TYPE = {"single-session-user": "user_evidence", "single-session-assistant": "assistant_facts_evidence",
                 "single-session-preference": "preference_evidence", "knowledge-update": "changing_evidence",
                 "multi-session": "implicit_connection_evidence",
                 "temporal-reasoning": "implicit_connection_evidence"}
SCORED_PREPARES = ("configs/prepare/longmemeval_s_graph_experiment.yaml", "configs/prepare/longmemeval_s_cpu.yaml")


def scored_question_ids(data_dir: Path) -> set[str]:
    """Question ids in the val or test split of any `SCORED_PREPARES` config (each question its own conversation)."""
    from types import SimpleNamespace

    from qgmem.data.jsonfile import iter_json_array
    from qgmem.data.longmemeval import default_path
    from qgmem.training.prepare import assign_splits, config_from_file, select_conversations

    ids = [str(inst["question_id"]) for inst in iter_json_array(default_path("s", data_dir))]
    scored: set[str] = set()
    for rel in SCORED_PREPARES:
        cfg, _ = config_from_file(str(ROOT / rel), [])
        chosen = [c.id for c in select_conversations([SimpleNamespace(id=i) for i in ids], cfg)]
        scored.update(i for i, split in assign_splits(chosen, cfg.split, cfg.seed).items() if split != "train")
    return scored


def cut(text: str, max_chars: int | None) -> str:
    """`text` cut to `max_chars` at a word boundary, marked with "..." (prepare's `cut_turns` rule)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    head = text[:max_chars].rsplit(" ", 1)[0]
    return (head or text[:max_chars]) + " ..."


def evidence_item(conv: Any, max_chars: int | None) -> dict[str, Any]:
    """One LongMemEval question (a Conversation of its oracle sessions) as a ConvoMem evidence item."""
    q = conv.questions[0]
    gold = set(q.evidence)
    speaker = {"user": "User", "assistant": "Assistant"}
    convs, evidences = [], []
    for s in conv.sessions:
        messages = []
        for t in s.turns:
            m = {"speaker": speaker.get(t.speaker.lower(), t.speaker), "text": cut(t.text, max_chars)}
            messages.append(m)
            if t.id in gold:
                evidences.append(dict(m))
        convs.append({"id": f"{conv.id}-{s.id}", "messages": messages, "containsEvidence": True})
    return {"question": q.text, "answer": str(q.answers[0]), "message_evidences": evidences, "conversations": convs,
            "category": str(q.category), "personId": f"lme-{conv.id}", "scenario_description": None}


def pack(items: list[dict[str, Any]], size: int, seed: int) -> tuple[list[dict[str, Any]], int]:
    """Cases of exactly `size` conversations from `items` of one type (seeded); returns (cases, items left out)."""
    order = list(items)
    random.Random(seed).shuffle(order)
    cases, open_items, left = [], [], 0
    for it in order:
        n = len(it["conversations"])
        if n > size:
            left += 1
            continue
        if n == size:
            cases.append([it])
            continue
        open_items.append(it)
        if sum(len(x["conversations"]) for x in open_items) == size:
            cases.append(open_items)
            open_items = []
        elif sum(len(x["conversations"]) for x in open_items) > size:
            left += 1
            open_items.pop()
    left += len(open_items)
    out = []
    for group in cases:
        mixed = [c for it in group for c in it["conversations"]]
        random.Random(f"{seed}:{group[0]['personId']}").shuffle(mixed)
        out.append({"evidenceItems": group, "conversations": mixed, "contextSize": size})
    return out, left


def write_cases(data_dir: Path, out: Path, size: int = 2, max_chars: int | None = 400, seed: int = 0) -> dict[str, Any]:
    """Write the case files under `out`; returns a summary (also written to ``<out>/rehearsal_data.json``)."""
    from qgmem.data.longmemeval import load_longmemeval, default_path

    scored = scored_question_ids(data_dir)
    convs = [c for c in load_longmemeval("oracle", default_path("oracle", data_dir)) if c.id not in scored]
    by_key: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for c in convs:
        q = c.questions[0]
        etype = "abstention_evidence" if q.meta.get("abstention") else EVIDENCE_TYPE[str(q.category)]
        by_key.setdefault((etype, len(c.sessions)), []).append(evidence_item(c, max_chars))
    root = out / "convomem" / "core_benchmark" / "pre_mixed_testcases"
    summary: dict[str, Any] = {"source": str(default_path("oracle", data_dir)), "questions_scored_elsewhere": len(scored),
                               "questions_available": len(convs), "context_size": size, "max_chars": max_chars,
                               "seed": seed, "files": {}, "cases": 0, "qa_pairs": 0, "left_out": 0}
    for (etype, n), items in sorted(by_key.items()):
        cases, left = pack(items, size, seed)
        summary["left_out"] += left
        if not cases:
            continue
        path = root / etype / f"{n}_evidence" / "batched_000.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
        summary["files"][str(path.relative_to(out))] = {"cases": len(cases),
                                                        "qa_pairs": sum(len(c["evidenceItems"]) for c in cases)}
        summary["cases"] += len(cases)
        summary["qa_pairs"] += summary["files"][str(path.relative_to(out))]["qa_pairs"]
    (out / "rehearsal_data.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    from qgmem.paths import data_dir as default_data_dir

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder to write (its convomem/ is the dataset's data_dir layout)")
    p.add_argument("--data-dir", default=None, help="LongMemEval files (default: $QGMEM_DATA_DIR)")
    p.add_argument("--context-size", type=int, default=2, help="conversations per case (the paper config's size)")
    p.add_argument("--max-chars", type=int, default=400, help="cut every turn to this many characters (0: keep)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    s = write_cases(Path(a.data_dir) if a.data_dir else default_data_dir(), Path(a.out), a.context_size,
                    a.max_chars or None, a.seed)
    print(f"{s['cases']} cases, {s['qa_pairs']} QA pairs ({s['questions_available']} questions outside the scored "
          f"splits, {s['left_out']} left out by the packing) -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
