"""Windows: 6 turns, 2 context turns, step 4; every turn is new in exactly one window."""

from __future__ import annotations

import pytest

from qgmem.construct.windows import make_windows
from qgmem.types import Session, Turn


def _session(n: int) -> Session:
    return Session("S", "2023-05-08", [Turn(f"D1:{i + 1}", "A" if i % 2 else "B", f"turn {i}") for i in range(n)])


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7, 10, 11, 23])
def test_every_turn_is_new_exactly_once(n: int) -> None:
    ws = make_windows(_session(n))
    new = [t.id for w in ws for t in w.new_turns]
    assert new == [t.id for t in _session(n).turns]
    for w in ws:
        assert len(w.turns) <= 6
        assert w.turns == w.context_turns + w.new_turns
        assert w.new_turns, "a window without new turns would extract nothing"


def test_step_four_with_two_context_turns() -> None:
    ws = make_windows(_session(14))
    assert [[t.id for t in w.turns] for w in ws][:2] == [
        [f"D1:{i}" for i in range(1, 7)], [f"D1:{i}" for i in range(5, 11)]]
    assert [t.id for t in ws[1].context_turns] == ["D1:5", "D1:6"]
    assert [t.id for t in ws[0].context_turns] == []
    assert [w.key for w in ws] == ["S#w0", "S#w1", "S#w2"]


def test_short_session_gives_one_window() -> None:
    ws = make_windows(_session(4))
    assert len(ws) == 1 and len(ws[0].new_turns) == 4


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="overlap"):
        make_windows(_session(3), size=4, overlap=4)
    with pytest.raises(ValueError, match="size"):
        make_windows(_session(3), size=0, overlap=0)
