import json

import pytest

from qgmem.io import append_jsonl, atomic_write_json, read_jsonl


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "a" / "s.json"
    atomic_write_json(p, {"x": 1})
    atomic_write_json(p, {"x": 2})
    assert json.loads(p.read_text()) == {"x": 2}
    assert [f.name for f in p.parent.iterdir()] == ["s.json"]  # no temp files left


def test_jsonl_tolerates_only_a_torn_last_line(tmp_path):
    p = tmp_path / "r.jsonl"
    append_jsonl(p, [{"i": 0}, {"i": 1}])
    with open(p, "a") as f:
        f.write('{"i": 2')  # a kill mid-write
    assert [r["i"] for r in read_jsonl(p)] == [0, 1]
    p.write_text('{"i": 0}\n{bad\n{"i": 2}\n')
    with pytest.raises(ValueError, match="line 2"):
        list(read_jsonl(p))


def test_atomic_writes_follow_the_umask(tmp_path) -> None:
    import os

    from qgmem.io import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        os.umask(0o077)
        atomic_write_text(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o600
