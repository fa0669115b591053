"""OpenAI-compatible HTTP backend against a local server: replies, errors, retries, concurrency."""

from __future__ import annotations

import json
import threading
import time

import pytest
from qgmem.testing.openai_server import Fault, OpenAIServer

from qgmem.llm import ChatRequest, LLMConfig, LLMError, chat_json, make_backend
from qgmem.llm.http import OpenAIChatBackend

MSG = [{"role": "user", "content": "Where does Alice work now?"}]


def _backend(srv: OpenAIServer, **kw) -> OpenAIChatBackend:
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("timeout_s", 5.0)
    return OpenAIChatBackend(srv.base_url, "test-model", **kw)


def test_normal_reply_and_token_usage() -> None:
    with OpenAIServer(lambda req: "Alice works at Globex.") as srv:
        be = _backend(srv, api_key="sk-test")
        res = be.chat(MSG, max_tokens=32, stop=["\n"], phase="generation")
    assert res.text == "Alice works at Globex."
    assert (res.prompt_tokens, res.completion_tokens) == (5, 4)  # server counts words
    assert res.finish_reason == "stop" and not res.cached
    req = srv.requests[0]
    assert req["model"] == "test-model" and req["messages"] == MSG
    assert req["temperature"] == 0.0 and req["max_tokens"] == 32 and req["stop"] == ["\n"]
    assert "response_format" not in req
    assert srv.headers[0]["Authorization"] == "Bearer sk-test"
    u = be.usage.phases["generation"]
    assert (u.calls, u.failed, u.prompt_tokens, u.completion_tokens) == (1, 0, 5, 4)


def test_json_mode_flag_sent() -> None:
    with OpenAIServer(['{"answer": "Globex"}']) as srv:
        res = _backend(srv).chat(MSG, json_mode=True)
    assert srv.requests[0]["response_format"] == {"type": "json_object"}
    assert json.loads(res.text) == {"answer": "Globex"}


def test_malformed_json_repaired_by_chat_json() -> None:
    replies = ["Here you go:\n```json\n{'facts': ['Alice works at Globex',], 'ok': True}\n```"]
    with OpenAIServer(replies) as srv:
        out = chat_json(_backend(srv), MSG, phase="construction")
    assert out == {"facts": ["Alice works at Globex"], "ok": True}
    assert len(srv.requests) == 1


def test_429_with_retry_after_then_success() -> None:
    replies = [(429, '{"error": {"message": "rate limited"}}', {"Retry-After": "0.3"}), "ok"]
    with OpenAIServer(replies) as srv:
        be = _backend(srv, backoff_base_s=5.0)  # Retry-After (0.3 s) must win over the 5 s backoff
        waits: list[float] = []
        be.sleep = waits.append
        res = be.chat(MSG)
    assert res.text == "ok" and len(srv.requests) == 2 and be.retries == 1
    assert waits == [0.3]


def test_backoff_grows_exponentially_with_jitter_and_cap() -> None:
    with OpenAIServer(lambda req: (502, "bad gateway")) as srv:
        be = _backend(srv, max_retries=5, backoff_base_s=1.0, backoff_max_s=6.0)
        waits: list[float] = []
        be.sleep = waits.append
        with pytest.raises(LLMError, match="after 6 attempt"):
            be.chat(MSG)
    assert len(waits) == 5
    for i, w in enumerate(waits):
        nominal = min(6.0, 2.0**i)
        assert 0.5 * nominal <= w <= 1.5 * nominal


def test_500_then_success() -> None:
    with OpenAIServer([(500, "internal error"), (503, "overloaded"), "recovered"]) as srv:
        be = _backend(srv)
        assert be.chat(MSG).text == "recovered"
    assert len(srv.requests) == 3 and be.retries == 2
    assert be.usage.phases["default"].failed == 0


def test_persistent_500_raises_and_is_counted() -> None:
    with OpenAIServer(lambda req: (500, '{"error": "model crashed: CUDA OOM"}')) as srv:
        be = _backend(srv, max_retries=2)
        with pytest.raises(LLMError) as ei:
            be.chat(MSG, phase="judge")
    assert len(srv.requests) == 3
    assert "HTTP 500" in str(ei.value) and "CUDA OOM" in str(ei.value)
    u = be.usage.phases["judge"]
    assert (u.calls, u.failed, u.prompt_tokens) == (1, 1, 0)


def test_client_error_is_not_retried() -> None:
    with OpenAIServer(lambda req: (401, '{"error": "invalid api key"}')) as srv:
        be = _backend(srv, max_retries=3)
        with pytest.raises(LLMError, match="HTTP 401.*invalid api key.*not retried"):
            be.chat(MSG)
    assert len(srv.requests) == 1


def test_timeout_retried_then_error() -> None:
    def slow(req: dict) -> str:
        time.sleep(1.0)
        return "too late"

    with OpenAIServer(slow) as srv:
        be = _backend(srv, timeout_s=0.2, max_retries=1)
        with pytest.raises(LLMError, match="timeout"):
            be.chat(MSG)
    assert len(srv.requests) == 2 and be.retries == 1


def test_timeout_then_success() -> None:
    calls = {"n": 0}

    def first_slow(req: dict) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            time.sleep(1.0)
        return "fast now"

    with OpenAIServer(first_slow) as srv:
        assert _backend(srv, timeout_s=0.3).chat(MSG).text == "fast now"


def test_connection_refused_is_an_llm_error() -> None:
    with OpenAIServer(["unused"]) as srv:
        url = srv.base_url
    be = OpenAIChatBackend(url, "m", max_retries=1, backoff_base_s=0.01, timeout_s=1.0)
    with pytest.raises(LLMError, match="connection error"):
        be.chat(MSG)


def test_malformed_200_body_is_retried() -> None:
    with OpenAIServer([(200, "<html>gateway</html>"), "fine"]) as srv:
        assert _backend(srv).chat(MSG).text == "fine"


def test_concurrency_bound_respected_and_order_kept() -> None:
    def echo_slow(req: dict) -> str:
        time.sleep(0.15)
        return "echo " + req["messages"][0]["content"]

    with OpenAIServer(echo_slow) as srv:
        be = _backend(srv, max_concurrency=3)
        reqs = [ChatRequest([{"role": "user", "content": f"q{i}"}]) for i in range(10)]
        out = be.complete_many(reqs, phase="generation")
        # direct chat() calls from many threads are bounded too
        threads = [threading.Thread(target=be.chat, args=(MSG,)) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
    assert [r.text for r in out] == [f"echo q{i}" for i in range(10)]
    assert srv.max_in_flight == 3
    assert be.usage.phases["generation"].calls == 10


def test_complete_many_returns_failures_in_place() -> None:
    def picky(req: dict):
        return (400, "bad request") if req["messages"][0]["content"] == "bad" else "good"

    with OpenAIServer(picky) as srv:
        be = _backend(srv, max_concurrency=2)
        out = be.complete_many([ChatRequest([{"role": "user", "content": c}]) for c in ["a", "bad", "b"]])
    assert [o.text if not isinstance(o, LLMError) else "ERR" for o in out] == ["good", "ERR", "good"]
    assert be.usage.phases["default"].failed == 1


def test_make_backend_openai_reads_key_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-env")
    with OpenAIServer(["hi"]) as srv:
        cfg = LLMConfig(backend="openai", model="served", base_url=srv.base_url, api_key_env="MY_KEY", cache=False)
        be = make_backend(cfg)
        assert be.chat(MSG).text == "hi"
    assert srv.headers[0]["Authorization"] == "Bearer sk-env"
    assert srv.requests[0]["model"] == "served"


def test_bad_base_url_is_rejected() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatBackend("localhost:8000/v1", "m")


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    import email.utils

    from qgmem.llm.http import _retry_after_s

    assert _retry_after_s("2") == 2.0
    assert _retry_after_s(None) is None and _retry_after_s("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= _retry_after_s(later) <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert _retry_after_s(past) == 0.0


@pytest.mark.parametrize("kind", ["truncate", "bad-status"])
def test_broken_http_exchange_is_retried_then_succeeds(kind: str) -> None:
    """A body cut short (IncompleteRead) or a garbage status line (BadStatusLine) is transient."""
    with OpenAIServer([Fault(kind), "recovered"]) as srv:
        be = _backend(srv, max_retries=2)
        assert be.chat(MSG).text == "recovered"
    assert be.retries == 1


def test_broken_http_exchange_every_time_is_an_llm_error_not_a_traceback() -> None:
    with OpenAIServer([Fault("truncate")] * 3) as srv:
        be = _backend(srv, max_retries=2)
        with pytest.raises(LLMError, match="broken HTTP exchange: IncompleteRead"):
            be.chat(MSG)
    assert be.usage.as_dict()["default"]["failed"] == 1


def test_timeout_is_a_deadline_for_the_whole_reply_not_per_read() -> None:
    """A reply dripped one byte every 50 ms never idles 1 s, but takes far longer than 1 s."""
    with OpenAIServer([Fault("drip", text="x" * 40, interval_s=0.05)]) as srv:
        be = _backend(srv, timeout_s=1.0, max_retries=0)
        t0 = time.perf_counter()
        with pytest.raises(LLMError, match="timeout"):
            be.chat(MSG)
        assert time.perf_counter() - t0 < 2.0


def test_long_retry_after_is_honoured() -> None:
    replies = [(503, '{"error": {"message": "overloaded"}}', {"Retry-After": "120"}), "ok"]
    with OpenAIServer(replies) as srv:
        be = _backend(srv)
        waits: list[float] = []
        be.sleep = waits.append
        assert be.chat(MSG).text == "ok"
    assert waits == [120.0]


def test_circuit_opens_after_consecutive_failures_and_stops_calling() -> None:
    with OpenAIServer([(500, "{}")] * 4) as srv:
        be = _backend(srv, max_retries=1, max_consecutive_failures=2)
        be.sleep = lambda s: None
        for _ in range(2):
            with pytest.raises(LLMError, match="HTTP 500"):
                be.chat(MSG)
        sent = len(srv.requests)
        with pytest.raises(LLMError, match="circuit open after 2 consecutive failed calls"):
            be.chat(MSG)
        assert len(srv.requests) == sent == 4


def test_chat_template_kwargs_switch_thinking_off_over_http() -> None:
    """Qwen3 served by vLLM/SGLang reads `chat_template_kwargs`; the config passes it on every request."""
    with OpenAIServer(lambda req: "ok") as srv:
        cfg = LLMConfig(backend="openai", model="Qwen/Qwen3-8B", base_url=srv.base_url, cache=False,
                        chat_template_kwargs={"enable_thinking": False}, extra_body={"top_k": 1})
        make_backend(cfg).chat(MSG)
    assert srv.requests[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert srv.requests[0]["top_k"] == 1
