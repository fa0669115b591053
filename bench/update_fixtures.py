"""Knowledge-update figures of the in-sample and held-out fixture sets, side by side.

    python bench/update_fixtures.py [--set both|in-sample|heldout|heldout2..34|dev|develop] [--failures] [--json PATH]

in-sample: tests/fixtures/updates/ (the word lists were iterated on it); dev: tests/fixtures/updates_dev/
(written before the structural trace rules, developed on); held-out: tests/fixtures/updates_heldout/
(written before any tuning on it, measured twice, then its misses read and the turn-level rules of
construct/turn_changes.py developed on it: a development set since 2026-12-02); held-out 2:
tests/fixtures/updates_heldout2/ (written blind to the method, measured once at f0bf482, then developed
on: a development set since a7d90fd); held-out 3: tests/fixtures/updates_heldout3/ (written blind to the
method, measured once at 383c151, then developed on: a development set since 7e67086); held-out 4:
tests/fixtures/updates_heldout4/ (written blind to the method, measured once at 3906322, its misses read
since: a development set); held-out 5: tests/fixtures/updates_heldout5/ (written blind to the method,
f2757be, measured once at e3cb10b: a development set since); held-out 6: tests/fixtures/updates_heldout6/
(written blind to the method, efaa42f, measured once at cc48cb8: a development set since); held-out 7:
tests/fixtures/updates_heldout7/ (written blind to the method, 30ad6d5, measured once at ff57d4b: a development
set since); held-out 8: tests/fixtures/updates_heldout8/ (written blind to the method, 0be1088, measured once
at 68a97dd: a development set since); held-out 9: tests/fixtures/updates_heldout9/ (written blind to the method,
1d3d488, measured once at 0858b72: a development set since); held-out 10: tests/fixtures/updates_heldout10/
(written blind to the method, 4441005, measured once at 2654cc1: a development set since); held-out 11:
tests/fixtures/updates_heldout11/ (written blind to the method, 1796040, measured once at e5311ef: a development
set since); held-out 12: tests/fixtures/updates_heldout12/ (written blind to the method, 57c6ffe, measured once
at 68d57ea: a development set since); held-out 13: tests/fixtures/updates_heldout13/ (written blind to the
method, ad3f426, measured once at 7e3257c: a development set since); held-out 14: tests/fixtures/updates_heldout14/
(written blind to the method, 6dcc851/ef1c09c, measured once at 8fca853: a development set since). `develop` =
in-sample, dev and held-out 1-34, the sets a change may be looked at on; held-out 15:
tests/fixtures/updates_heldout15/ (written blind to the method, fba6b27, measured once there: a development set
since); held-out 16: tests/fixtures/updates_heldout16/ (written blind to the method, 896b4bd, measured once at
c56b98d: a development set since); held-out 17: tests/fixtures/updates_heldout17/ (written blind to the method,
7df9244, measured once there: a development set since). Held-out 18: tests/fixtures/updates_heldout18/ (written
blind to the method, 4a28fb0, measured once at 349b609: a development set since). Held-out 19:
tests/fixtures/updates_heldout19/ (written blind to the method, f5c2280, measured once at a7ab4e3: a development
set since). Held-out 20: tests/fixtures/updates_heldout20/ (written blind to the method, eba2306, measured
once there: a development set since). Held-out 21: tests/fixtures/updates_heldout21/ (written blind to the method,
afa5f3c, measured once there: a development set since). Held-out 22: tests/fixtures/updates_heldout22/ (written blind
to the method, d95ecc8, measured once there: a development set since). Held-out 23: tests/fixtures/updates_heldout23/
(written blind to the method, db831ad, measured once there: a development set since). Held-out 24:
tests/fixtures/updates_heldout24/ (written blind to the method, 1421de1, measured once at 3f192c1: a development set
since). Held-out 25: tests/fixtures/updates_heldout25/ (written blind to the method, 966e12a, measured once at
299f3ea: a development set since). Held-out 26: tests/fixtures/updates_heldout26/ (written blind to the method,
0b93913, measured once at 4bdec47: a development set since). Held-out 27: tests/fixtures/updates_heldout27/ (written
blind to the method, c42b257, measured once at e403835: a development set since). Held-out 28:
tests/fixtures/updates_heldout28/ (written blind to the method, 53be2d1, measured once there: a development set since).
Held-out 29: tests/fixtures/updates_heldout29/ (written blind to the method, 171e687, measured once there: a
development set since). Held-out 30:
tests/fixtures/updates_heldout30/ (written blind to the method, 311831d, measured once there: a development set since).
Held-out 31: tests/fixtures/updates_heldout31/ (written blind to the method, 0f8ad92, measured once at 2f33eb0: a
development set since). Held-out 32: tests/fixtures/updates_heldout32/ (written blind to the method, e5e621f,
measured once at dfafeaa: a development set since). Held-out 33: tests/fixtures/updates_heldout33/ (written blind
to the method, 0d8ff6a, measured once there: a development set since). Held-out 34:
tests/fixtures/updates_heldout34/ (written blind to the method, f168cee, measured once there: a development set since).
Each set is built with the real rule extractor into a fresh temporary store and measured by
`qgmem.testing.update_report` (what each figure means is in its docstring). Prints a Markdown table with counts
and percentages; `--failures` adds every labelled update that formed no trace, with the units the extractor
made of its two turns. Needs the spaCy pipeline and the packaged MiniLM (no network).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

from qgmem.testing.update_fixtures import HELD_OUT_LATER, HELD_OUT_UNMEASURED
from qgmem.testing.update_report import UpdateReport, measure, misses_text, rows, table

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SETS = {"in-sample": FIXTURES / "updates" / "conversations.json",
        "held-out": FIXTURES / "updates_heldout" / "conversations.json",
        "dev": FIXTURES / "updates_dev" / "conversations.json",
        **{f"held-out {n}": FIXTURES / f"updates_heldout{n}" / "conversations.json" for n in HELD_OUT_LATER}}
MEASURED = tuple(f"held-out {n}" for n in HELD_OUT_LATER if n not in HELD_OUT_UNMEASURED)  # `both`, `develop`
CHOICES = {"both": ("in-sample", MEASURED[-1]), "in-sample": ("in-sample",), "heldout": ("held-out",),
           **{f"heldout{n}": (f"held-out {n}",) for n in HELD_OUT_LATER}, "dev": ("dev",),
           "develop": ("in-sample", "dev", "held-out", *MEASURED)}


def run(names: tuple[str, ...]) -> list[UpdateReport]:
    """Measure each named set in its own fresh store."""
    out = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"updates-{name}-") as tmp:
            out.append(measure(name, SETS[name], tmp))
    return out


def as_json(reports: list[UpdateReport]) -> dict:
    """Counts per set and measure, plus the untraced updates by turn id."""
    return {r.name: {"conversations": r.conversations, "units": r.units, "traces": r.traces,
                     "measures": {label.strip(): dataclasses.asdict(rate) for label, rate in rows(r)},
                     "untraced": [{"conversation": m.conversation, **dataclasses.asdict(m.update)} for m in r.misses]}
            for r in reports}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=sorted(CHOICES), default="both")
    ap.add_argument("--failures", action="store_true", help="list the labelled updates that formed no trace")
    ap.add_argument("--json", type=Path, help="also write the counts to this file")
    args = ap.parse_args(argv)
    reports = run(CHOICES[args.set])
    print(table(reports))
    if args.failures:
        for r in reports:
            print()
            print(misses_text(r))
    if args.json:
        args.json.write_text(json.dumps(as_json(reports), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
