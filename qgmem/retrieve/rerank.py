"""Rerankers behind one interface: `score(query, documents) -> list[float]`, higher is better.

- `CrossEncoderReranker`: a sentence-transformers CrossEncoder (e.g. one trained by
  `qgmem train-reranker`).
- `CausalYesNoReranker`: the Qwen3-Reranker format with any local causal LM; the score is
  P("yes") from the next-token logits of "yes" and "no" (Qwen3-Reranker-8B on GPU; SmolLM2 in tests).
- `ChatYesNoReranker`: the same question through any ChatBackend (HTTP servers give no logits):
  a "yes" reply scores 1, "no" 0; failed or unreadable replies score 0.5 and are counted.
- `NoReranker`: keeps the fusion order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from qgmem.llm.base import ChatBackend, ChatRequest, LLMError

from .config import RerankConfig

SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
          'Note that the answer can only be "yes" or "no".')


def qwen3_pair(instruction: str, query: str, doc: str) -> str:
    return f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"


class Reranker(ABC):
    name = "reranker"

    @abstractmethod
    def score(self, query: str, docs: list[str]) -> list[float]:
        """One relevance score per document."""


class NoReranker(Reranker):
    name = "none"

    def score(self, query: str, docs: list[str]) -> list[float]:
        return [0.0] * len(docs)


class CrossEncoderReranker(Reranker):
    name = "cross-encoder"

    def __init__(self, model: str, max_length: int = 512, batch_size: int = 16, device: str | None = None):
        from sentence_transformers import CrossEncoder

        if not model:
            raise ValueError("rerank.kind='cross-encoder' needs rerank.model (a path from `qgmem train-reranker`)")
        self.model = CrossEncoder(model, max_length=max_length, device=device or "cpu")
        self.batch_size = batch_size

    def score(self, query: str, docs: list[str]) -> list[float]:
        if not docs:
            return []
        s = self.model.predict([(query, d) for d in docs], batch_size=self.batch_size, show_progress_bar=False)
        return [float(x) for x in np.asarray(s).reshape(-1)]


class CausalYesNoReranker(Reranker):
    """Qwen3-Reranker prompt on a local causal LM; left-padded batches, last-position logits."""

    name = "llm"

    def __init__(self, model: str, instruction: str, max_length: int = 512, batch_size: int = 8,
                 device: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from qgmem.llm.hf import local_model_path

        path = local_model_path(model)  # "smollm2" -> the converted local copy; other names unchanged
        self.tok = AutoTokenizer.from_pretrained(path, padding_side="left")
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.lm = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype).to(self.device).eval()
        self.yes = self._token_id("yes")
        self.no = self._token_id("no")
        self.instruction = instruction
        self.max_length = max_length
        self.batch_size = batch_size
        self.prefix = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
        self.suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"

    def _token_id(self, word: str) -> int:
        tid = self.tok.convert_tokens_to_ids(word)
        if tid is None or tid == self.tok.unk_token_id:
            tid = self.tok.encode(word, add_special_tokens=False)[0]
        return int(tid)

    def _encode(self, query: str, doc: str) -> list[int]:
        pre = self.tok.encode(self.prefix, add_special_tokens=False)
        suf = self.tok.encode(self.suffix, add_special_tokens=False)
        body = self.tok.encode(qwen3_pair(self.instruction, query, doc), add_special_tokens=False)
        room = max(8, self.max_length - len(pre) - len(suf))
        return pre + body[:room] + suf  # the document end is cut, never the answer slot

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
        reqs = [ChatRequest(messages=[{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": qwen3_pair(self.instruction, query, d)}],
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
    raise ValueError(f"rerank.kind must be none | cross-encoder | llm | chat, got {cfg.kind!r}")
