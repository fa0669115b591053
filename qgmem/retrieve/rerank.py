"""Rerankers behind one interface: `score(query, documents) -> list[float]`, higher is better.

- `CrossEncoderReranker`: a sentence-transformers CrossEncoder (e.g. one trained by
  `qgmem train-cross-encoder`).
- `CausalYesNoReranker`: the Qwen3-Reranker question with any local causal LM; the score is
  P("yes") from the next-token logits of "yes" and "no" (Qwen3-Reranker-8B on GPU; SmolLM2 in tests).
  The prompt is the model's own chat template (system = `SYSTEM`, user = `qwen3_pair`, then the
  assistant generation prompt; ``enable_thinking=False`` by default, so Qwen3 templates write the
  empty think block the Qwen3-Reranker format has), so Llama-3-style models get their own headers.
- `ChatYesNoReranker`: the same question through any ChatBackend (HTTP servers give no logits):
  a "yes" reply scores 1, "no" 0; failed or unreadable replies score 0.5 and are counted.
- `PoolRanker`: the learned ranker (`ranker.LearnedRanker`) over the pool's features
  (`features.pool_features`) rather than texts; `QGMemRetriever` feeds it the whole pool.
- `NoReranker`: keeps the fusion order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from qgmem.llm.base import ChatBackend, ChatRequest, LLMError
from qgmem.llm.template import DEFAULT_TEMPLATE_KWARGS, encode_adds_bos, render_prompt, split_prompt

from .config import RerankConfig

SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
          'Note that the answer can only be "yes" or "no".')


USER_SENTINEL = "\u27e6qgmem-rerank-user\u27e7"  # stands for the user message when the template is split


def qwen3_pair(instruction: str, query: str, doc: str) -> str:
    return f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"


def yes_no_messages(user: str) -> list[dict[str, Any]]:
    """The yes/no relevance question as chat messages (one place for the local and the chat reranker)."""
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


class Reranker(ABC):
    name = "reranker"

    @abstractmethod
    def score(self, query: str, docs: list[str]) -> list[float]:
        """One relevance score per document."""


class NoReranker(Reranker):
    name = "none"

    def score(self, query: str, docs: list[str]) -> list[float]:
        return [0.0] * len(docs)


class PoolRanker(Reranker):
    """Scores a pool from its feature matrix; the retriever calls `score_features`, never `score`."""

    name = "learned"

    def __init__(self, model: str):
        from qgmem.paths import repo_checkpoint

        from .ranker import LearnedRanker

        if not model:
            raise ValueError("rerank.kind='learned' needs rerank.model (a folder from `qgmem train-reranker`)")
        self.ranker = LearnedRanker.load(repo_checkpoint(model))

    def score(self, query: str, docs: list[str]) -> list[float]:
        raise TypeError("the learned ranker scores pool features (QGMemRetriever), not (query, document) texts")

    def score_features(self, x: np.ndarray) -> np.ndarray:
        return self.ranker.score(x)


class CrossEncoderReranker(Reranker):
    name = "cross-encoder"

    def __init__(self, model: str, max_length: int = 512, batch_size: int = 16, device: str | None = None):
        from sentence_transformers import CrossEncoder

        if not model:
            raise ValueError("rerank.kind='cross-encoder' needs rerank.model (a path from `qgmem train-cross-encoder`)")
        self.model = CrossEncoder(model, max_length=max_length, device=device or "cpu")
        self.batch_size = batch_size

    def score(self, query: str, docs: list[str]) -> list[float]:
        if not docs:
            return []
        s = self.model.predict([(query, d) for d in docs], batch_size=self.batch_size, show_progress_bar=False)
        return [float(x) for x in np.asarray(s).reshape(-1)]


class YesNoPrompt:
    """Token ids of the reranker prompt for one (query, document) pair.

    The chat template is rendered once with `USER_SENTINEL` as the user message and split there, so
    each pair tokenises only its own user text, which is cut at the end (the document's end) to fit
    ``max_length`` between the fixed prefix and the fixed suffix: the generation prompt, where the
    yes/no logits are read, is never cut.
    """

    def __init__(self, tokenizer: Any, instruction: str, max_length: int = 512,
                 template_kwargs: dict[str, Any] | None = None, model: str = ""):
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"reranker model {model or tokenizer.name_or_path!r} has no chat template; the LLM "
                             "reranker builds its prompt with it (use an instruct/chat model or set "
                             "tokenizer.chat_template)")
        self.tok = tokenizer
        self.instruction = instruction
        self.max_length = max_length
        self.template_kwargs = {**DEFAULT_TEMPLATE_KWARGS, **(template_kwargs or {})}
        self.prefix, self.suffix = split_prompt(tokenizer, yes_no_messages(USER_SENTINEL), USER_SENTINEL,
                                                template_kwargs=self.template_kwargs,
                                                add_bos=encode_adds_bos(tokenizer))
        # Llama-3 templates `trim` message content: do the same here, so the prompt is what the
        # template would render for the whole pair
        padded = f" {USER_SENTINEL} "
        self.trims = padded not in render_prompt(tokenizer, yes_no_messages(padded), self.template_kwargs)

    def user_text(self, query: str, doc: str) -> str:
        text = qwen3_pair(self.instruction, query, doc)
        return text.strip() if self.trims else text

    def encode(self, query: str, doc: str) -> list[int]:
        body = self.tok(self.user_text(query, doc), add_special_tokens=False)["input_ids"]
        room = max(8, self.max_length - len(self.prefix) - len(self.suffix))
        return self.prefix + body[:room] + self.suffix  # the document end is cut, never the answer slot


class CausalYesNoReranker(Reranker):
    """Yes/no question in the model's chat template on a local causal LM; left-padded batches,
    last-position logits."""

    name = "llm"

    def __init__(self, model: str, instruction: str, max_length: int = 512, batch_size: int = 8,
                 device: str | None = None, template_kwargs: dict[str, Any] | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from qgmem.llm.hf import local_model_path

        path = local_model_path(model)  # "smollm2" -> the converted local copy; other names unchanged
        self.tok = AutoTokenizer.from_pretrained(path, padding_side="left")
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        # before the weights: a model without a template fails fast
        self.prompt = YesNoPrompt(self.tok, instruction, max_length, template_kwargs, model=model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.lm = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype).to(self.device).eval()
        self.yes = self._token_id("yes")
        self.no = self._token_id("no")
        self.instruction = instruction
        self.max_length = max_length
        self.batch_size = batch_size

    def _token_id(self, word: str) -> int:
        tid = self.tok.convert_tokens_to_ids(word)
        if tid is None or tid == self.tok.unk_token_id:
            tid = self.tok.encode(word, add_special_tokens=False)[0]
        return int(tid)

    def _encode(self, query: str, doc: str) -> list[int]:
        return self.prompt.encode(query, doc)

    def score(self, query: str, docs: list[str]) -> list[float]:
        import torch

        out: list[float] = []
        for i in range(0, len(docs), self.batch_size):
            ids = [self._encode(query, d) for d in docs[i:i + self.batch_size]]
            batch = self.tok.pad({"input_ids": ids}, return_tensors="pt").to(self.device)
            with torch.no_grad():
                logits = self.lm(**batch).logits[:, -1, :]
            pair = torch.stack([logits[:, self.no], logits[:, self.yes]], dim=1).float()
            out.extend(torch.softmax(pair, dim=1)[:, 1].tolist())
        return out


class ChatYesNoReranker(Reranker):
    name = "chat"

    def __init__(self, backend: ChatBackend, instruction: str):
        self.backend = backend
        self.instruction = instruction
        self.failures = 0

    def score(self, query: str, docs: list[str]) -> list[float]:
        reqs = [ChatRequest(messages=yes_no_messages(qwen3_pair(self.instruction, query, d)),
                            temperature=0.0, max_tokens=3) for d in docs]
        out: list[float] = []
        for r in self.backend.complete_many(reqs, phase="retrieval"):
            if isinstance(r, LLMError):
                self.failures += 1
                out.append(0.5)
                continue
            word = r.text.strip().lower().lstrip("\"'").split()[:1]
            if word and word[0].startswith("yes"):
                out.append(1.0)
            elif word and word[0].startswith("no"):
                out.append(0.0)
            else:
                self.failures += 1
                out.append(0.5)
        return out


def make_reranker(cfg: RerankConfig, llm: ChatBackend | None = None) -> Reranker:
    if cfg.kind == "none":
        return NoReranker()
    if cfg.kind == "learned":
        return PoolRanker(cfg.model)
    if cfg.kind == "cross-encoder":
        return CrossEncoderReranker(cfg.model, cfg.max_length, cfg.batch_size, cfg.device)
    if cfg.kind == "llm":
        if not cfg.model:
            raise ValueError("rerank.kind='llm' needs rerank.model (a causal LM name/path, or 'smollm2')")
        return CausalYesNoReranker(cfg.model, cfg.instruction, cfg.max_length, cfg.batch_size, cfg.device)
    if cfg.kind == "chat":
        if llm is None:
            raise ValueError("rerank.kind='chat' needs an LLM backend (retrieval llm section)")
        return ChatYesNoReranker(llm, cfg.instruction)
    raise ValueError(f"rerank.kind must be none | learned | cross-encoder | llm | chat, got {cfg.kind!r}")
