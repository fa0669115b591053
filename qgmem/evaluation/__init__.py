"""Evaluation: answer metrics, LLM judge, coverage, bootstrap CIs, resumable runs and reports."""
