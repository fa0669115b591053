"""`qgmem serve --store DIR [--config FILE] [--host H] [--port P] [--keys FILE] [--mcp stdio] [key=value ...]`

Starts the HTTP API (and the MCP endpoint at /mcp) with uvicorn, or, with `--mcp stdio`, the MCP server
alone on standard input/output for a client that starts it. The pipeline (embedder, spaCy, chat backend or
checkpoint) is loaded once, before the first request. Without API keys the server refuses any host
but loopback and warns that every namespace is open to local clients.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from qgmem.config import ConfigError, load_config
from qgmem.serve.config import LOOPBACK, ServeConfig

log = logging.getLogger("qgmem.serve")


def add_arguments(p: Any) -> None:
    p.add_argument("--store", required=True, help="store directory (created when missing)")
    p.add_argument("--config", default=None, help="a ServeConfig YAML (retrieval, llm, limits, ...)")
    p.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; others need API keys)")
    p.add_argument("--port", type=int, default=None, help="port (default 8765)")
    p.add_argument("--keys", default=None, help="API keys file (YAML); default $QGMEM_API_KEYS, else none")
    p.add_argument("--checkpoint", default=None, help="a graph-token checkpoint answers instead of the chat backend")
    p.add_argument("--mcp", choices=["stdio"], default=None, help="serve MCP over stdio instead of HTTP")
    p.add_argument("overrides", nargs="*", help="config overrides, e.g. llm.backend=openai llm.base_url=...")


def load(args: Any) -> ServeConfig:
    cfg = load_config(ServeConfig, args.config, args.overrides)
    cfg.store_dir = args.store
    for name, flag in (("host", args.host), ("port", args.port), ("keys_file", args.keys),
                       ("checkpoint", args.checkpoint)):
        if flag is not None:
            setattr(cfg, name, flag)
    if not 0 < cfg.port < 65536:
        raise ConfigError(f"--port must be in 1..65535, got {cfg.port}")
    return cfg


def make_pipeline(cfg: ServeConfig, llm: Any = None) -> Any:
    """The one pipeline of the process; `llm` (a ChatBackend) replaces the configured backend (tests)."""
    from qgmem.pipeline import MemoryPipeline

    if cfg.checkpoint:  # retrieval and k as the checkpoint's encoder was trained with
        return MemoryPipeline.from_pretrained(cfg.checkpoint, store_dir=cfg.store_dir, k=cfg.k,
                                              max_new_tokens=cfg.max_new_tokens)
    return MemoryPipeline.from_pretrained(None, llm=llm if llm is not None else cfg.llm, store_dir=cfg.store_dir,
                                          retrieval=cfg.retrieval, k=cfg.k, max_new_tokens=cfg.max_new_tokens)


def _warm(pipe: Any) -> None:
    """Load what the first add would load (spaCy for the rule extractor), so no request pays for it."""
    if pipe.retrieval.extractor == "rule":
        from qgmem.construct.nlp import load_nlp

        load_nlp()


def run(args: Any, llm: Any = None) -> int:
    from qgmem.serve.tenants import Tenants

    cfg = load(args)
    tenants = Tenants.load(cfg.keys_file)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="qgmem serve: %(message)s")
    if args.mcp is None and tenants.open and cfg.host not in LOOPBACK:
        raise ConfigError(f"--host {cfg.host}: without API keys (--keys or $QGMEM_API_KEYS) the server binds "
                          "only to loopback (127.0.0.1, ::1, localhost)")
    if tenants.open and args.mcp is None:
        log.warning("no API keys configured: every namespace is open to clients on this machine; serving "
                    "loopback only (give --keys FILE or $QGMEM_API_KEYS to require keys)")
    from qgmem.serve.service import MemoryService  # the pipeline's imports (torch, ...) only once the checks passed

    pipe = make_pipeline(cfg, llm)
    _warm(pipe)
    service = MemoryService(pipe, tenants, cfg.limits)
    try:
        if args.mcp == "stdio":
            from qgmem.serve.mcp_tools import make_mcp

            make_mcp(service, stdio=True).run("stdio")
            return 0
        return _serve_http(service, cfg)
    finally:
        pipe.close()


def _serve_http(service: Any, cfg: ServeConfig) -> int:
    import uvicorn

    from qgmem.serve.http import create_app
    from qgmem.serve.mcp_tools import make_mcp

    app = create_app(service, make_mcp(service), host=cfg.host)
    print(f"qgmem serve: {cfg.store_dir} on http://{cfg.host}:{cfg.port} (API docs /docs, MCP /mcp)",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level, timeout_graceful_shutdown=5)
    return 0
