"""Benchmark date spellings -> ISO-8601 strings (``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``).

Each parser returns None for text it cannot read rather than guessing; the loaders decide whether
that is an error (a LoCoMo session must have a date) or simply "no date" (BEAM batches often have none).
"""

from __future__ import annotations

import re
from datetime import datetime

from qgmem.timex import MONTHS as _MONTHS  # month names and abbreviations -> 1..12

_LOCOMO = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
_LME = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$")
_BEAM = re.compile(r"^\s*([A-Za-z]+)[-\s](\d{1,2})[-,\s]+(\d{4})\s*$")


def _iso(y: int, mo: int, d: int, hh: int | None = None, mm: int | None = None) -> str | None:
    try:
        dt = datetime(y, mo, d, hh or 0, mm or 0)
    except ValueError:
        return None
    return dt.strftime("%Y-%m-%dT%H:%M") if hh is not None else dt.strftime("%Y-%m-%d")


def parse_locomo_date(text: str) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56'."""
    m = _LOCOMO.match(text or "")
    if not m:
        return None
    hh, mm, ap, d, mon, y = m.groups()
    mo = _MONTHS.get(mon.lower())
    h = int(hh) % 12 + (12 if ap.lower() == "p" else 0)
    return _iso(int(y), mo, int(d), h, int(mm)) if mo else None


def parse_longmemeval_date(text: str) -> str | None:
    """'2023/05/28 (Sun) 19:47' -> '2023-05-28T19:47'."""
    m = _LME.match(text or "")
    if not m:
        return None
    y, mo, d, hh, mm = m.groups()
    return _iso(int(y), int(mo), int(d), int(hh) if hh else None, int(mm) if mm else None)


def parse_beam_date(text: str) -> str | None:
    """'March-15-2024' -> '2024-03-15'."""
    m = _BEAM.match(text or "")
    if not m:
        return None
    mon, d, y = m.groups()
    mo = _MONTHS.get(mon.lower())
    return _iso(int(y), mo, int(d)) if mo else None
