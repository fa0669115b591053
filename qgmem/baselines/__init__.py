"""Baseline memory methods: raw-turn retrieval (BM25, dense) and the full-context reader."""
