"""The server's settings: one dataclass per section, loaded from YAML like every other qgmem config.

The defaults are the library's: retrieval is `RetrievalConfig()` (what the pipeline and the benchmarks
run), answers come from `LLMConfig()` (the local SmolLM2 backend) unless a checkpoint is named. The
limits are sized so that a normal chat message or question never meets them and a runaway client
cannot fill the server's memory or its queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgmem.llm.config import LLMConfig
from qgmem.retrieve.config import RetrievalConfig

LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass
class Limits:
    max_body_bytes: int = 2_000_000  # a request body larger than this is refused with 413 before it is parsed
    max_message_chars: int = 20_000  # one message's text (a long pasted document belongs in several)
    max_messages: int = 500  # messages (or turns over all sessions) in one request
    max_sessions: int = 50  # sessions in one request
    max_question_chars: int = 2_000  # the retriever cuts longer questions anyway (RetrievalConfig.max_query_chars)
    max_id_chars: int = 128  # namespace, session and message ids
    max_in_flight: int = 32  # requests served at once; one more is answered 503 with Retry-After
    lock_timeout_s: float = 60.0  # a request that waited this long for its namespace is answered 503
    retry_after_s: int = 2  # the Retry-After a 503 carries

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_message_chars", "max_messages", "max_sessions", "max_question_chars",
                     "max_id_chars", "max_in_flight", "retry_after_s"):
            if getattr(self, name) < 1:
                raise ValueError(f"limits.{name} must be >= 1, got {getattr(self, name)}")
        if self.lock_timeout_s <= 0:
            raise ValueError(f"limits.lock_timeout_s must be > 0, got {self.lock_timeout_s}")


@dataclass
class ServeConfig:
    store_dir: str = ""  # the store to serve (`--store`)
    host: str = "127.0.0.1"  # without API keys only a loopback address is accepted
    port: int = 8765
    keys_file: str | None = None  # API keys (YAML), see qgmem/serve/tenants.py; or $QGMEM_API_KEYS
    checkpoint: str | None = None  # a graph-token checkpoint answers instead of the chat backend
    k: int | None = None  # working-memory size (None: the checkpoint's, else 10)
    max_new_tokens: int = 64  # answer length
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)  # with a checkpoint: the checkpoint's
    llm: LLMConfig = field(default_factory=LLMConfig)  # the answer backend (any OpenAI-compatible server, or hf)
    limits: Limits = field(default_factory=Limits)
    log_level: str = "warning"  # uvicorn's access log and server messages

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be in 1..65535, got {self.port}")
        if self.k is not None and self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
