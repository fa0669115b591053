"""Text in the frozen LLM's own input-embedding space: what a node name or a question looks like to the LLM.

The sentence embedder's vectors (the paper's node features) are a space the LLM has never read, so a
projector must learn to map every value name into the LLM's embeddings from the training data alone
(a 135M model trained on a few hundred questions does not: bench/RESULTS.md). Here a text is read
through the LLM's own tokenizer and input embeddings instead: its tokens' embedding rows (``token_sets``)
and their mean (``means``), the text written as it reads inside a sentence (after a space), so the
one-token name " Oslo" is exactly the row the LLM reads for that word. Nothing here trains; the
embedding matrix is the LLM's, held by reference (never registered as a module or cast).

`nearest_tokens` reads any vector back as the vocabulary tokens nearest to it (cosine), the
diagnostic of what a graph token says to the LLM.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

CACHE_LIMIT = 200_000  # token ids of this many distinct texts are kept (names repeat across graphs)


class LLMTextEmbedder:
    """Texts -> the LLM's input embeddings of their tokens (float32, on the embedding's device)."""

    def __init__(self, tokenizer: Any, weight: Tensor):
        self.tokenizer = tokenizer
        self._weight = [weight]  # a list, so a module holding this never registers or casts the LLM's matrix
        self._ids: dict[str, list[int]] = {}
        self._center: Tensor | None = None

    @property
    def weight(self) -> Tensor:
        return self._weight[0]

    @property
    def dim(self) -> int:
        return int(self.weight.size(-1))

    def center(self) -> Tensor:
        """``[H]``: the mean of the vocabulary's input embeddings. Input embeddings share a large common
        direction (in SmolLM2 two unrelated words have cosine ~0.5), so similarities are taken after
        subtracting it: unrelated words then score ~0, a word and itself 1."""
        if self._center is None:
            self._center = self.weight.detach().float().mean(0)
        return self._center

    def ids(self, text: str) -> list[int]:
        """Token ids of `text` as it reads after a space inside a sentence (no special tokens)."""
        got = self._ids.get(text)
        if got is None:
            got = list(self.tokenizer(" " + text.strip(), add_special_tokens=False)["input_ids"])
            if not got:  # an empty text reads as the space itself, never as nothing
                got = list(self.tokenizer(" ", add_special_tokens=False)["input_ids"])[:1] or [0]
            if len(self._ids) >= CACHE_LIMIT:
                self._ids.clear()
            self._ids[text] = got
        return got

    def token_sets(self, texts: list[str], device: torch.device | None = None) -> tuple[Tensor, Tensor]:
        """(``[N, L, H]`` token embeddings, ``[N, L]`` bool mask) of `texts`, padded to the longest."""
        w = self.weight
        dev = device or w.device
        ids = [self.ids(t) for t in texts]
        n, length = len(ids), max((len(i) for i in ids), default=1)
        flat = torch.zeros((n, length), dtype=torch.long)
        mask = torch.zeros((n, length), dtype=torch.bool)
        for r, row in enumerate(ids):
            flat[r, :len(row)] = torch.tensor(row, dtype=torch.long)
            mask[r, :len(row)] = True
        emb = torch.nn.functional.embedding(flat.to(w.device), w.detach()).float()
        return emb.to(dev), mask.to(dev)

    def means(self, texts: list[str], device: torch.device | None = None) -> Tensor:
        """``[N, H]``: the mean of each text's token embeddings."""
        return masked_mean(*self.token_sets(texts, device))


def masked_mean(tokens: Tensor, mask: Tensor) -> Tensor:
    """``[N, L, H]`` token embeddings, ``[N, L]`` mask -> ``[N, H]`` mean over each row's real tokens."""
    m = mask.unsqueeze(-1).float()
    return (tokens * m).sum(1) / m.sum(1).clamp_min(1.0)


def nearest_tokens(vectors: Tensor, weight: Tensor, tokenizer: Any, k: int = 3) -> list[list[tuple[str, float]]]:
    """For each row of `vectors` ``[N, H]``, the `k` vocabulary tokens whose input embeddings are nearest
    by cosine, as (decoded token, cosine)."""
    w = torch.nn.functional.normalize(weight.detach().float(), dim=-1)
    v = torch.nn.functional.normalize(vectors.detach().float().to(w.device), dim=-1)
    sims, idx = (v @ w.T).topk(k, dim=-1)
    return [[(tokenizer.decode([int(i)]), round(float(s), 3)) for i, s in zip(ri, rs)] for ri, rs in zip(idx, sims)]
