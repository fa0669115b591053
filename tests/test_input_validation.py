"""Bad input gets one line naming file, record and field, exit code 2, and nothing half-written;
a build whose windows failed says so loudly and leaves the memory incomplete until a rerun fixes it."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from qgmem.cli import main
from qgmem.construct.build import build_memory, is_complete
from qgmem.data.errors import DataError
from qgmem.store import MemoryStore
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.testing.openai_server import OpenAIServer
from qgmem.types import Turn


def _build(conv, store: MemoryStore, **kw):
    return build_memory(conv, "rule", store=store, embedder=HashEmbedder(dim=64), **kw)


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c.sessions[1].turns.__setitem__(0, Turn("D1:1", "Alice", "dup")), "turn 'D1:1': duplicate turn id"),
    (lambda c: setattr(c.sessions[1], "id", "S1"), "session 'S1': duplicate session id"),
    (lambda c: setattr(c.sessions[0].turns[2], "text", None), "turn 'D1:3': field 'text' must be a string, got null"),
    (lambda c: setattr(c.sessions[0].turns[2], "text", 42), "turn 'D1:3': field 'text' must be a string, got int"),
    (lambda c: setattr(c.sessions[0].turns[0], "speaker", None), "field 'speaker' must be a string, got null"),
])
def test_malformed_conversation_is_refused_before_anything_is_written(tmp_path, tiny_conversation, mutate,
                                                                       message) -> None:
    mutate(tiny_conversation)
    tiny_conversation.meta["source"] = "chats.json"
    store = MemoryStore(tmp_path)
    with pytest.raises(DataError) as e:
        _build(tiny_conversation, store)
    assert str(e.value).startswith("chats.json: conversation 'c1', session ") and message in str(e.value)
    assert store.namespaces() == []


def test_oversized_turn_is_refused_fast_with_the_setting_to_change(tmp_path, tiny_conversation) -> None:
    tiny_conversation.sessions[0].turns[0].text = "I like tea. " * 90_000  # ~1 MB
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"text has 1,080,000 characters, over the cap of 500,000 "
                                        r"\(build\.limits\.max_turn_chars\)"):
        _build(tiny_conversation, MemoryStore(tmp_path))
    assert time.perf_counter() - t0 < 2.0


def test_dates_are_normalised_or_dropped_with_a_counted_warning(tmp_path, tiny_conversation) -> None:
    from qgmem.construct.build import BuildReport

    tiny_conversation.sessions[0].date = "1:56 pm on 8 May, 2023"
    tiny_conversation.sessions[1].date = "last week"
    report = BuildReport()
    store = MemoryStore(tmp_path)
    _build(tiny_conversation, store, report=report)
    assert len(report.warnings) == 2
    assert "normalised to '2023-05-08T13:56'" in report.warnings[0]
    assert "'last week' is not a date; the session is kept undated" in report.warnings[1]
    stored = store.get_conversation("c1")
    assert [s.date for s in stored.sessions] == ["2023-05-08T13:56", None]


def test_cli_bad_turn_exits_2_with_one_line(tmp_path, tiny_conversation, capsys) -> None:
    d = dataclasses.asdict(tiny_conversation)
    d["sessions"][0]["turns"][1]["text"] = None
    f = tmp_path / "chats.json"
    f.write_text(json.dumps([d]))
    assert main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["qgmem build: chats.json: conversation 'c1', session 'S1', turn 'D1:2': "
                   "field 'text' must be a string, got null"]


def test_cli_non_utf8_input_exits_2(tmp_path, capsys) -> None:
    f = tmp_path / "chats.json"
    f.write_bytes(b'[{"id": "c\xff"}]')
    assert main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--no-progress"]) == 2
    assert "chats.json: byte 10: not UTF-8 text" in capsys.readouterr().err


def test_failed_windows_exit_1_leave_memory_incomplete_then_a_rerun_completes(tmp_path, tiny_conversation,
                                                                              capsys) -> None:
    """The LLM server fails every window of session S2: exit 1, failure table, memory incomplete."""
    good = json.dumps({"units": []})
    state = {"down": True}

    def reply(req: dict):
        text = req["messages"][-1]["content"]
        if state["down"] and "D2:1" in text:
            return 500, '{"error": {"message": "server dying"}}'
        return good

    f = tmp_path / "chats.json"
    f.write_text(json.dumps([dataclasses.asdict(tiny_conversation)]))
    store_dir = tmp_path / "s"
    with OpenAIServer(reply) as srv:
        argv = ["build", "--input", str(f), "--store", str(store_dir), "--no-progress", "--extractor", "llm",
                "--llm-backend", "openai", "--base-url", srv.base_url, "--llm-model", "m",
                "--set", "llm.max_retries=0", "llm.cache=false"]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "extract:S2#w0" in err and "server dying" in err and "memory incomplete: 1 window(s)" in err
        with MemoryStore(store_dir) as st:
            assert not is_complete(st, "c1")
        state["down"] = False
        assert main(argv) == 0
        with MemoryStore(store_dir) as st:
            assert is_complete(st, "c1") and st.failures("c1") == []
