"""`qgmem serve`: the memory store behind an HTTP API and an MCP server, for agents outside this process.

Layers inside: `config.py` (ServeConfig), `tenants.py` (API keys and the namespaces each may touch),
`locks.py` (readers in parallel, one writer per namespace, admission under load), `requests.py` (what a
request may hold and what it adds), `service.py` (the
operations, over one `MemoryPipeline`, shared by both front ends), `schemas.py` (request and reply
models), `http.py` (FastAPI routes), `mcp_tools.py` (MCP tools), `cli.py` (the command).
"""
