"""How many state changes the traces claim, where no label says there is one: a guard against over-linking.

    python bench/trace_links.py [--locomo conv-26,conv-30] [--fixtures dev,in-sample] [--show N] [--json PATH]

LoCoMo conversations have no update labels: for each one built with the rule extractor it prints the units,
the traces, the units in traces, the *update links* (a unit with role "update" in a trace) and the units
superseded; `--show N` prints the first N links of each conversation (old unit -> new unit) to read them.
Fixture sets (tests/fixtures/updates*/) have labels: a link whose new unit lies on no labelled `new` turn,
and a superseded unit on no labelled `old` (or later replaced `new`) turn, count as unlabelled. The held-out
set is not offered here: it is measured only by `bench/update_fixtures.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from qgmem.construct.build import build_memory
from qgmem.data.registry import load_dataset_by_name
from qgmem.store import MemoryStore
from qgmem.testing.update_fixtures import load_update_fixtures
from qgmem.types import AtomicUnit, MemoryTrace

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = {"in-sample": ROOT / "tests" / "fixtures" / "updates" / "conversations.json",
            "dev": ROOT / "tests" / "fixtures" / "updates_dev" / "conversations.json"}


def links(units: list[AtomicUnit], traces: list[MemoryTrace]) -> list[tuple[AtomicUnit, AtomicUnit]]:
    """(latest superseded member before it, update unit) for every update of every trace."""
    by_id = {u.id: u for u in units}
    out = []
    for t in traces:
        members = [by_id[i] for i in t.unit_ids]
        for k, (u, role) in enumerate(zip(members, t.roles)):
            if role == "update":
                before = [m for m in members[:k] if m.superseded] or members[:k]
                out.append((before[-1], u))
    return out


def counts(units: list[AtomicUnit], traces: list[MemoryTrace]) -> dict[str, int]:
    return {"units": len(units), "traces": len(traces), "in_traces": sum(len(t.unit_ids) for t in traces),
            "updates": sum(r == "update" for t in traces for r in t.roles),
            "superseded": sum(u.superseded for u in units)}


def show(pairs: list[tuple[AtomicUnit, AtomicUnit]], n: int) -> None:
    for old, new in pairs[:n]:
        print(f"    {old.first_turn} {old.text[:110]!r}\n      -> {new.first_turn} {new.text[:110]!r}")


def locomo(ids: list[str], n_show: int) -> dict[str, dict[str, int]]:
    convs = {c.id: c for c in load_dataset_by_name("locomo", download=False)}
    out = {}
    with tempfile.TemporaryDirectory(prefix="trace-links-") as tmp, MemoryStore(tmp) as store:
        for cid in ids:
            units, traces = build_memory(convs[cid], "rule", store=store)
            out[cid] = counts(units, traces)
            print(f"{cid}: " + ", ".join(f"{k} {v}" for k, v in out[cid].items()), flush=True)
            show(links(units, traces), n_show)
    return out


def fixtures(name: str, n_show: int) -> dict[str, int]:
    cases = load_update_fixtures(FIXTURES[name])
    total = {"units": 0, "traces": 0, "in_traces": 0, "updates": 0, "superseded": 0,
             "unlabelled_updates": 0, "unlabelled_superseded": 0, "traces_without_labels": 0}
    with tempfile.TemporaryDirectory(prefix="trace-links-") as tmp, MemoryStore(tmp) as store:
        for c in cases:
            units, traces = build_memory(c.conversation, "rule", store=store)
            for k, v in counts(units, traces).items():
                total[k] += v
            news = {u.new for u in c.updates}
            olds = {u.old for u in c.updates} | news
            bad = [(o, n) for o, n in links(units, traces) if not set(n.turn_ids) & news]
            total["unlabelled_updates"] += len(bad)
            total["unlabelled_superseded"] += sum(u.superseded and not set(u.turn_ids) & olds for u in units)
            if not c.updates:
                total["traces_without_labels"] += len(traces)
            if bad and n_show:
                print(f"  {c.conversation.id}: unlabelled update links")
                show(bad, n_show)
    print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in total.items()), flush=True)
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", default="", help="comma-separated LoCoMo conversation ids")
    ap.add_argument("--fixtures", default="", help=f"comma-separated fixture sets: {', '.join(FIXTURES)}")
    ap.add_argument("--show", type=int, default=0, help="print this many links per conversation")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    result: dict[str, object] = {}
    if args.locomo:
        result["locomo"] = locomo([c for c in args.locomo.split(",") if c], args.show)
    for name in [f for f in args.fixtures.split(",") if f]:
        if name not in FIXTURES:
            print(f"--fixtures: unknown set {name!r} (known: {', '.join(FIXTURES)})", file=sys.stderr)
            return 2
        result[name] = fixtures(name, args.show)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
