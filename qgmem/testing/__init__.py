"""Test helpers shared by `tests/` and `bench/`: tiny models, a hashed embedder, a local OpenAI-compatible server,
the knowledge-update fixture loader."""
