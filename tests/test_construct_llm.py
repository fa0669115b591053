"""LLM extraction/consolidation: validation, JSON repair, re-asks, failures recorded and counted,
the HTTP backend against the local test server (malformed JSON, 429, 500, timeout) through `qgmem build`."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from qgmem.testing.hash_embedder import HashEmbedder
from qgmem.testing.openai_server import OpenAIServer

from qgmem.construct.build import BuildConfig, BuildReport, build_memory
from qgmem.construct.consolidate import parse_roles
from qgmem.construct.llm_extract import validate_unit
from qgmem.construct.windows import make_windows
from qgmem.llm import ScriptedBackend
from qgmem.store import MemoryStore


def _unit(claim, first, last=None, **kw):
    d = {"claim": claim, "first_turn": first, "last_turn": last or first, "speaker": "Alice", "subject": "Alice",
         "relation": "work at", "object": "x", "entities": [], "location": None,
         "fact_time_start": None, "fact_time_end": None}
    d.update(kw)
    return d


def _window_of(req_text: str) -> str:
    """Which tiny-conversation window a prompt shows: the first [NEW] turn id."""
    return re.search(r"\[(D\d+:\d+)\] \[NEW\]", req_text).group(1)


GOOD = {
    "D1:1": "```json\n" + json.dumps({"units": [
        _unit("Alice started a job at Acme Corp as a data analyst.", "D1:1", object="Acme Corp",
              fact_time_start="2023-05-01", fact_time_end="2023-05-07", entities=["Acme Corp"]),
        _unit("Bob went hiking in Yosemite with his sister Carol on 7 May 2023.", "D1:2", speaker="Bob",
              subject="Bob", relation="went hiking", object="Yosemite", location="Yosemite",
              fact_time_start="2023-05-07", fact_time_end="2023-05-07"),
    ]}).replace("]}", ",]}") + "\n```",  # fenced, trailing comma: repaired, not re-asked
    "D1:7": json.dumps({"units": [
        _unit("Alice lives in Seattle.", "D1:5", "D1:6"),  # context turns only: rejected
        _unit("Alice wished Bob luck with learning the guitar.", "D1:6", "D1:7"),  # spans into a new turn: kept
    ]}),
    "D2:1": json.dumps({"units": [_unit("Alice now works at Globex as a manager.", "D2:1", object="Globex"),
                                  _unit("Alice visited Paris with her mom in July 2023.", "D2:3", relation="visited",
                                        object="Paris", fact_time_start="2023-07", fact_time_end="2023-07")]}),
}


def test_extraction_repairs_rejects_and_reasks(tmp_path, tiny_conversation) -> None:
    seen: dict[str, int] = {}

    def reply(req):
        text = req.messages[0]["content"]
        w = _window_of(text)
        seen[w] = seen.get(w, 0) + 1
        if w == "D2:1" and len(req.messages) == 1:
            return "Sure! Here are the memories: Alice works at Globex."  # not JSON -> re-asked
        return GOOD[w]

    backend = ScriptedBackend(reply)
    store = MemoryStore(tmp_path)
    report = BuildReport()
    cfg = BuildConfig(extractor="llm", consolidation="rule")
    units, _ = build_memory(tiny_conversation, "llm", llm=backend, store=store, config=cfg,
                            embedder=HashEmbedder(dim=128), report=report)
    assert [u.text for u in units] == [
        "Alice started a job at Acme Corp as a data analyst.",
        "Bob went hiking in Yosemite with his sister Carol on 7 May 2023.",
        "Alice wished Bob luck with learning the guitar.",
        "Alice now works at Globex as a manager.",
        "Alice visited Paris with her mom in July 2023."]
    assert units[2].turn_ids == ["D1:6", "D1:7"] and units[2].first_turn == "D1:6"
    assert units[1].location == "Yosemite" and units[1].speaker == "Bob"
    assert (units[4].fact_time_start, units[4].fact_time_end) == ("2023-07-01", "2023-07-31")
    assert units[0].utterance_time == "2023-05-08T13:56" and units[0].extractor == "llm"
    assert seen == {"D1:1": 1, "D1:7": 1, "D2:1": 2}
    re_ask = backend.requests[-1].messages
    assert len(re_ask) == 3 and "could not be used" in re_ask[2]["content"]
    ex = report.phases["extraction"]
    assert (ex.windows, ex.failed_windows, ex.rejected_units, ex.llm_calls) == (3, 0, 1, 4)
    (fail,) = store.failures("c1")
    assert fail["key"] == "reject:S1#w1" and "only [CONTEXT] turns" in fail["error"]
    assert "Alice lives in Seattle." in fail["raw"]
    assert backend.requests[0].temperature == 0.0 and backend.requests[0].json_mode


def test_failed_window_is_recorded_then_retried(tmp_path, tiny_conversation) -> None:
    bad = ScriptedBackend(lambda req: "{not json at all" if _window_of(req.messages[0]["content"]) == "D2:1"
                          else GOOD[_window_of(req.messages[0]["content"])])
    store = MemoryStore(tmp_path)
    report = BuildReport()
    cfg = BuildConfig(extractor="llm", consolidation="rule")
    build_memory(tiny_conversation, "llm", llm=bad, store=store, config=cfg, embedder=HashEmbedder(dim=128), report=report)
    assert report.phases["extraction"].failed_windows == 1
    assert {f["key"] for f in report.failures} == {"extract:S2#w0", "reject:S1#w1"}
    fail = {f["key"]: f for f in store.failures("c1")}["extract:S2#w0"]
    assert fail["raw"] == "{not json at all" and "not valid JSON" in fail["error"]
    assert not any(k.startswith("extract:S2#w0@") for k in store.done_keys("c1"))
    assert all(u.session_id == "S1" for u in store.units("c1"))
    # the next run retries only that window and clears its failure
    good = ScriptedBackend(lambda req: GOOD[_window_of(req.messages[0]["content"])])
    units, _ = build_memory(tiny_conversation, "llm", llm=good, store=store, config=cfg, embedder=HashEmbedder(dim=128))
    assert len(good.requests) == 1 and [u.session_id for u in units].count("S2") == 2
    assert [f["key"] for f in store.failures("c1")] == ["reject:S1#w1"]


def test_unit_validation_names_the_field(tiny_conversation) -> None:
    w = make_windows(tiny_conversation.sessions[0])[1]  # context D1:5-6, new D1:7
    with pytest.raises(ValueError, match=r"units\[0\]: missing or empty field\(s\) \['claim'\]"):
        validate_unit(_unit("", "D1:7"), w, "c1", 0, ["Alice", "Bob"], "llm")
    with pytest.raises(ValueError, match=r"first_turn: 'D9:9' is not a turn of this window"):
        validate_unit(_unit("x", "D9:9"), w, "c1", 0, ["Alice", "Bob"], "llm")
    with pytest.raises(ValueError, match="comes after"):
        validate_unit(_unit("x", "D1:7", "D1:5"), w, "c1", 0, ["Alice", "Bob"], "llm")
    with pytest.raises(ValueError, match="fact_time_start: time 'last week' is not YYYY-MM-DD"):
        validate_unit(_unit("x", "D1:7", fact_time_start="last week"), w, "c1", 0, ["Alice", "Bob"], "llm")
    u = validate_unit(_unit("x", "[D1:7]", fact_time_start="2023", fact_time_end="unspecified"), w, "c1", 3,
                      ["Alice", "Bob"], "llm")
    assert (u.fact_time_start, u.fact_time_end, u.id) == ("2023-01-01", "2023-12-31", "c1/S1#w1/u3")


def test_llm_consolidation_roles_and_fallback(tmp_path, tiny_conversation) -> None:
    def reply(req):
        text = req.messages[0]["content"]
        if "same subject and relation" in text:
            n = len(re.findall(r"^U\d+ ", text, re.MULTILINE))
            return json.dumps({"roles": [{"unit": "U1", "role": "origin", "supersedes": []}] +
                               [{"unit": f"U{k}", "role": "update", "supersedes": [f"U{k - 1}"]} for k in range(2, n + 1)]})
        return GOOD[_window_of(text)]

    store = MemoryStore(tmp_path)
    report = BuildReport()
    units, traces = build_memory(tiny_conversation, "llm", llm=ScriptedBackend(reply), store=store,
                                 config=BuildConfig(extractor="llm"), embedder=HashEmbedder(dim=128), report=report)
    (t,) = [t for t in traces if t.subject == "Alice" and "Alice now works at Globex as a manager." in
            [u.text for u in units if u.id in t.unit_ids]]
    by = {u.id: u for u in units}
    assert t.roles[0] == "origin" and set(t.roles[1:]) == {"update"}
    assert by[t.latest_unit_id].text == "Alice visited Paris with her mom in July 2023." or \
        not by[t.latest_unit_id].superseded
    assert all(by[i].superseded for i in t.unit_ids[:-1])
    assert report.phases["consolidation"].llm_calls == len(traces)
    assert report.phases["consolidation"].failed_traces == 0


def test_parse_roles_validation() -> None:
    assert parse_roles('{"roles": [{"role": "origin"}, {"role": "supplement"}]}', 2) == (["origin", "supplement"], set())
    assert parse_roles('{"roles": [{"role": "origin"}, {"role": "update", "supersedes": ["U1"]}]}', 2)[1] == {0}
    for bad, msg in [('{"roles": [{"role": "origin"}]}', "expected 2"),
                     ('{"roles": [{"role": "update"}, {"role": "origin"}]}', "only the first"),
                     ('{"roles": [{"role": "origin"}, {"role": "update", "supersedes": ["U2"]}]}', "not an earlier"),
                     ('{"roles": [{"role": "origin"}, {"role": "maybe"}]}', "not one of")]:
        with pytest.raises(ValueError, match=msg):
            parse_roles(bad, 2)


def test_http_backend_failures_counted_in_build_table(tmp_path, tiny_conversation) -> None:
    """The OpenAI-compatible HTTP backend against the local test server: 429 then success, malformed
    JSON repaired by a re-ask, a window that always gets HTTP 500 and one that always times out."""
    import time

    from qgmem.llm import make_backend
    from qgmem.llm.config import LLMConfig

    conv = dataclasses.replace(tiny_conversation)
    conv.sessions = conv.sessions + [dataclasses.replace(conv.sessions[1], id="S3", turns=[
        dataclasses.replace(t, id=t.id.replace("D2", "D3")) for t in conv.sessions[1].turns])]
    calls: dict[str, int] = {}

    def handler(req):
        text = req["messages"][0]["content"]
        w = _window_of(text)
        calls[w] = calls.get(w, 0) + 1
        if w == "D1:1":
            return (429, '{"error": {"message": "rate limited"}}', {"Retry-After": "0"}) if calls[w] == 1 else GOOD[w]
        if w == "D1:7":
            return GOOD[w] if len(req["messages"]) > 1 else '{"units": [{"claim": "broken'  # truncated JSON
        if w == "D2:1":
            return 500, '{"error": {"message": "boom"}}'
        time.sleep(1.5)  # D3:1: longer than the client timeout
        return GOOD["D2:1"]

    store = MemoryStore(tmp_path / "s")
    report = BuildReport()
    with OpenAIServer(handler) as srv:
        cfg = BuildConfig(extractor="llm", consolidation="rule", llm=LLMConfig(
            backend="openai", model="test-model", base_url=srv.base_url, max_retries=1, timeout_s=0.5,
            backoff_base_s=0.01, backoff_max_s=0.02, cache=False, max_concurrency=4))
        build_memory(conv, "llm", llm=make_backend(cfg.llm), store=store, config=cfg, embedder=HashEmbedder(dim=128),
                     report=report)
        assert srv.max_in_flight >= 2  # windows ran concurrently
    ex = report.phases["extraction"]
    assert (ex.windows, ex.failed_windows, ex.rejected_units) == (4, 2, 1)
    # calls: D1:1 ok (after a 429 retry), D1:7 x2 (re-ask), D2:1 failed, D3:1 failed (after their HTTP retries)
    assert ex.llm_calls == 5 and ex.llm_failed == 2 and ex.prompt_tokens > 0 and ex.completion_tokens > 0
    keys = {f["key"]: f["error"] for f in report.failures}
    assert "HTTP 500" in keys["extract:S2#w0"] and "timeout" in keys["extract:S3#w0"]
    assert calls["D1:1"] == 2 and calls["D2:1"] == 2  # retried once by the backend
    assert {u.session_id for u in store.units("c1")} == {"S1"}
    assert {f["key"] for f in store.failures("c1")} == {"extract:S2#w0", "extract:S3#w0", "reject:S1#w1"}
    table = report.table().splitlines()
    assert table[2].split()[0] == "extraction" and table[2].split()[4] == "2"  # failed windows column
