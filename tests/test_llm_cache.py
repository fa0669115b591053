"""Response cache: hits skip the backend, misses on any changed parameter, honest accounting."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from qgmem.testing.openai_server import OpenAIServer

from qgmem.llm import ChatRequest, LLMConfig, LLMError, ScriptedBackend, make_backend
from qgmem.llm.cache import CachedBackend

MSG = [{"role": "user", "content": "What is Bob reading?"}]


def _http(srv: OpenAIServer, tmp_path: Path) -> CachedBackend:
    cfg = LLMConfig(backend="openai", model="test-model", base_url=srv.base_url, cache_dir=str(tmp_path),
                    backoff_base_s=0.01, max_retries=1)
    be = make_backend(cfg)
    assert isinstance(be, CachedBackend)
    return be


def test_second_identical_call_hits_cache_without_request(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: "Bob is reading Foundation") as srv:
        be = _http(srv, tmp_path)
        a = be.chat(MSG, phase="generation")
        b = be.chat(MSG, phase="generation")
    assert len(srv.requests) == 1
    assert (a.cached, b.cached) == (False, True)
    assert b.text == a.text and (b.prompt_tokens, b.completion_tokens) == (a.prompt_tokens, a.completion_tokens)
    u = be.usage.phases["generation"]
    assert (u.calls, u.cached, u.failed) == (2, 1, 0)
    # real spend counts the first call only; the hit's tokens are reported as saved
    assert (u.prompt_tokens, u.completion_tokens) == (a.prompt_tokens, a.completion_tokens)
    assert (u.cached_prompt_tokens, u.cached_completion_tokens) == (a.prompt_tokens, a.completion_tokens)
    assert be.inner.usage.phases["generation"].calls == 1


def test_any_changed_parameter_is_a_miss(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: "x") as srv:
        be = _http(srv, tmp_path)
        be.chat(MSG)
        be.chat(MSG, max_tokens=64)
        be.chat(MSG, json_mode=True)
        be.chat(MSG, stop=["\n"])
        be.chat([{"role": "system", "content": "Be brief."}] + MSG)
        be.chat(MSG)  # the only repeat
    assert len(srv.requests) == 5 and be.hits == 1 and be.misses == 5


def test_other_model_does_not_share_entries(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: req["model"]) as srv:
        a = _http(srv, tmp_path)
        cfg = LLMConfig(backend="openai", model="other-model", base_url=srv.base_url, cache_dir=str(tmp_path))
        b = make_backend(cfg)
        assert a.chat(MSG).text == "test-model"
        assert b.chat(MSG).text == "other-model"
    assert len(srv.requests) == 2


def test_same_model_behind_another_server_does_not_share_entries(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: "first server") as one, OpenAIServer(lambda req: "second server") as two:
        a, b = _http(one, tmp_path), _http(two, tmp_path)
        assert a.chat(MSG).text == "first server"
        assert b.chat(MSG).text == "second server"
        assert a.chat(MSG).cached
    assert len(one.requests) == len(two.requests) == 1


def test_sampled_requests_not_cached_by_default(tmp_path: Path) -> None:
    with OpenAIServer(lambda req: "sampled") as srv:
        be = _http(srv, tmp_path)
        be.chat(MSG, temperature=0.7)
        r = be.chat(MSG, temperature=0.7)
    assert len(srv.requests) == 2 and not r.cached
    inner = ScriptedBackend(lambda req: "s")
    keep = CachedBackend(inner, tmp_path / "sampled", cache_sampled=True)
    keep.chat(MSG, temperature=0.7)
    assert keep.chat(MSG, temperature=0.7).cached and len(inner.requests) == 1


def test_failures_are_not_cached_and_are_counted(tmp_path: Path) -> None:
    with OpenAIServer([(500, "down"), (500, "down"), "back"]) as srv:
        be = _http(srv, tmp_path)
        try:
            be.chat(MSG, phase="judge")
            raise AssertionError("expected LLMError")
        except LLMError:
            pass
        assert be.chat(MSG, phase="judge").text == "back"
    u = be.usage.phases["judge"]
    assert (u.calls, u.failed, u.cached) == (2, 1, 0)


def test_cache_persists_across_runs(tmp_path: Path) -> None:
    first = CachedBackend(ScriptedBackend(["remembered"]), tmp_path)
    first.chat(MSG)
    first.close()
    second_inner = ScriptedBackend([])  # would raise if called
    second = CachedBackend(second_inner, tmp_path)
    assert second.chat(MSG).text == "remembered" and second_inner.requests == []
    assert len(second) == 1


def test_complete_many_mixes_hits_misses_and_duplicates(tmp_path: Path) -> None:
    inner = ScriptedBackend(lambda req: "ans " + req.messages[0]["content"])
    be = CachedBackend(inner, tmp_path)
    be.chat([{"role": "user", "content": "a"}])
    reqs = [ChatRequest([{"role": "user", "content": c}]) for c in ["a", "b", "b", "c"]]
    out = be.complete_many(reqs, phase="retrieval")
    assert [r.text for r in out] == ["ans a", "ans b", "ans b", "ans c"]
    assert [r.cached for r in out] == [True, False, True, False]
    assert [r.messages[0]["content"] for r in inner.requests] == ["a", "b", "c"]
    u = be.usage.phases["retrieval"]
    assert (u.calls, u.cached) == (4, 2)


def test_concurrent_threads_share_the_cache_safely(tmp_path: Path) -> None:
    inner = ScriptedBackend(lambda req: req.messages[0]["content"].upper())
    be = CachedBackend(inner, tmp_path)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(20):
                r = be.chat([{"role": "user", "content": f"q{i % 10}"}])
                assert r.text == f"Q{i % 10}"
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    assert len(be) == 10 and be.hits + be.misses == 120
    assert be.usage.phases["default"].calls == 120


def test_corrupt_cache_file_is_named_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "responses.sqlite").write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(RuntimeError, match=r"responses\.sqlite.*delete it"):
        CachedBackend(ScriptedBackend(["x"]), tmp_path)
