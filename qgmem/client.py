"""`MemoryClient`: a `qgmem serve` server used from Python with the verbs of `MemoryPipeline`.

    mem = MemoryClient("http://127.0.0.1:8765", api_key="...")
    mem.add([{"speaker": "Alice", "text": "I moved to Lisbon."}], namespace="alice")   # or a Conversation
    mem.working_memory("Where does Alice live?", namespace="alice")["items"]
    mem.answer("Where does Alice live?", namespace="alice")["answer"]
    mem.forget("alice", turn_ids=[...]); mem.history(unit_id); mem.namespaces()

Replies are the server's JSON (dicts); a refusal raises `MemoryServerError` with its status, one-line
message and field. A 503 (server busy) is retried after its Retry-After, up to `retries` times.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import httpx

from qgmem.types import Conversation, Session


class MemoryServerError(RuntimeError):
    def __init__(self, status: int, message: str, field: str | None = None, retry_after: float | None = None):
        super().__init__(f"{status}: {message}")
        self.status, self.message, self.field, self.retry_after = status, message, field, retry_after


def _session(s: Session) -> dict[str, Any]:
    return {"id": s.id, "date": s.date, "turns": [{"id": t.id, "speaker": t.speaker, "text": t.text} for t in s.turns]}


class MemoryClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 120.0, retries: int = 3,
                 transport: httpx.BaseTransport | None = None):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout,
                                  transport=transport)
        self.retries = retries

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        for attempt in range(self.retries + 1):
            r = self._http.request(method, path, json=body, params=params)
            if r.status_code == 503 and attempt < self.retries:
                time.sleep(float(r.headers.get("Retry-After", "1")))
                continue
            if r.status_code >= 400:
                try:
                    data = r.json()
                except ValueError:
                    data = {"detail": r.text[:300]}
                ra = r.headers.get("Retry-After")
                raise MemoryServerError(r.status_code, str(data.get("detail")), data.get("field"),
                                        float(ra) if ra else None)
            return r.json()
        raise AssertionError("unreachable")

    # ---- the pipeline's verbs
    def add(self, conversation: Conversation | list[Session] | list[dict[str, Any]], namespace: str | None = None,
            session_id: str | None = None) -> dict[str, Any]:
        """Store a Conversation (namespace: its id by default), Sessions, or message dicts
        (speaker, text, optional time and id; appended to `session_id`, default a new session)."""
        if isinstance(conversation, Conversation):
            ns, body = namespace or conversation.id, {"sessions": [_session(s) for s in conversation.sessions]}
        elif conversation and all(isinstance(s, Session) for s in conversation):
            ns, body = namespace or "default", {"sessions": [_session(s) for s in conversation]}  # type: ignore[arg-type]
        else:
            msgs = [m if isinstance(m, dict) else asdict(m) for m in conversation]  # type: ignore[call-overload]
            ns, body = namespace or "default", {"messages": msgs, "session_id": session_id}
        return self._call("POST", f"/v1/memories/{ns}/messages", body)

    def working_memory(self, question: str, namespace: str, question_time: str | None = None) -> dict[str, Any]:
        return self._call("POST", f"/v1/memories/{namespace}/search",
                          {"question": question, "question_time": question_time})

    search = working_memory

    def answer(self, question: str, namespace: str, question_time: str | None = None) -> dict[str, Any]:
        return self._call("POST", f"/v1/memories/{namespace}/answer",
                          {"question": question, "question_time": question_time})

    def forget(self, namespace: str, session_id: str | None = None, turn_ids: list[str] | None = None
               ) -> dict[str, Any]:
        if session_id is not None:
            return self._call("DELETE", f"/v1/memories/{namespace}/sessions/{session_id}")
        if turn_ids is not None:
            return self._call("DELETE", f"/v1/memories/{namespace}/turns", {"turn_ids": list(turn_ids)})
        return self._call("DELETE", f"/v1/memories/{namespace}")

    def history(self, unit_id: str, namespace: str | None = None) -> list[dict[str, Any]]:
        ns = namespace or unit_id.rsplit("/", 2)[0]
        return self._call("GET", f"/v1/memories/{ns}/history", params={"unit_id": unit_id})["states"]

    def namespaces(self) -> list[str]:
        return self._call("GET", "/v1/namespaces")["namespaces"]

    # ---- the server's own
    def messages(self, namespace: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/v1/memories/{namespace}/messages")["sessions"]

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def version(self) -> dict[str, Any]:
        return self._call("GET", "/v1/version")
