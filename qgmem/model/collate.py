"""Examples -> token batches for `GraphTokenLM`, built with the tokenizer's own chat template.

Where the graph tokens go: the user message is `answer_messages(question, memory)` with a
reserved sentinel string put immediately before the memory text. The rendered template is split
at the sentinel (`qgmem.llm.template.split_prompt`, shared with the LLM reranker), both halves
are tokenised separately (``add_special_tokens=False``, since the template already writes any BOS
it wants), and ``num_graph_tokens`` placeholder positions are put between them; ``graph_mask``
marks those positions and the model overwrites their embeddings with the graph tokens. A tokenizer
whose encode adds a BOS the template does not write gets one BOS prepended — never two
(G-Retriever omits it for some models and doubles it for others).

Training batches (``mode="train"``): prompt + answer + EOS, right padded, ``labels`` = -100
everywhere but the answer and EOS (``<|im_end|>`` for Qwen3, ``<|eot_id|>`` for Llama-3.1-Instruct:
the token their templates close an assistant turn with). `end_of_turn_id` finds that token by
rendering an assistant turn; generation stops on it as well as on EOS. Generation batches
(``mode="generate"``): prompt only, left padded, so every row's next token is at the last position.

Template keyword arguments (``template_kwargs``, default `DEFAULT_TEMPLATE_KWARGS`) go to every
``apply_chat_template`` call: ``enable_thinking=False`` makes Qwen3's template write an empty
``<think></think>`` block into the prompt, so the model answers without reasoning and the block is
never supervised. Templates that do not use a keyword ignore it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch_geometric.data import Batch, Data

from qgmem.answer import answer_messages
from qgmem.llm.template import DEFAULT_TEMPLATE_KWARGS, encode_adds_bos, split_prompt

GRAPH_SENTINEL = "\u27e6qgmem-graph\u27e7"  # never produced by a tokenizer or a user
ANSWER_SENTINEL = "\u27e6qgmem-answer\u27e7"
IGNORE_INDEX = -100


def end_of_turn_id(tokenizer: Any, template_kwargs: dict[str, Any] | None = None) -> int | None:
    """The special token the chat template writes right after an assistant message, or the
    tokenizer's EOS when it writes none (or cannot render an assistant turn)."""
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": ANSWER_SENTINEL}]
    try:
        text = tokenizer.apply_chat_template(msgs, tokenize=False, **(template_kwargs or {}))
    except Exception:  # noqa: BLE001 - a template that refuses this conversation: fall back to EOS
        return tokenizer.eos_token_id
    after = text.split(ANSWER_SENTINEL, 1)[1] if text.count(ANSWER_SENTINEL) == 1 else ""
    ids = tokenizer(after.lstrip(" "), add_special_tokens=False)["input_ids"] if after.strip() else []
    if ids and ids[0] in set(tokenizer.all_special_ids):
        return int(ids[0])
    return tokenizer.eos_token_id


@dataclass
class GraphExample:
    question: str
    memory_text: str
    answer: str | None
    graph: Data
    id: str = ""


@dataclass
class CollatorStats:
    examples: int = 0
    truncated: int = 0  # memory text shortened to fit max_length
    truncated_ids: list[str] = field(default_factory=list)


class GraphTokenCollator:
    """Callable ``list[GraphExample] -> dict`` (input_ids, attention_mask, graph_mask, labels?, graph, ids,
    questions)."""

    def __init__(self, tokenizer: Any, num_graph_tokens: int, max_length: int = 2048, *,
                 system: str | None = None, mode: Literal["train", "generate"] = "train",
                 answer_template: str = "Answer: {answer}", template_kwargs: dict[str, Any] | None = None):
        if mode not in ("train", "generate"):
            raise ValueError(f"GraphTokenCollator mode must be 'train' or 'generate', got {mode!r}")
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("tokenizer has no chat_template; GraphTokenCollator builds prompts with it")
        self.tok = tokenizer
        self.num_graph_tokens = int(num_graph_tokens)
        self.max_length = int(max_length)
        self.system = system
        self.mode = mode
        self.answer_template = answer_template
        self.template_kwargs = {**DEFAULT_TEMPLATE_KWARGS, **(template_kwargs or {})}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if self.pad_id is None:
            raise ValueError("tokenizer has neither a pad nor an eos token")
        if mode == "train" and tokenizer.eos_token_id is None:
            raise ValueError("tokenizer has no eos token; training labels end with EOS")
        self.encode_adds_bos = encode_adds_bos(tokenizer)
        self.stats = CollatorStats()

    def for_generation(self) -> GraphTokenCollator:
        """The same prompts, left padded, without answers."""
        new = GraphTokenCollator.__new__(GraphTokenCollator)
        new.__dict__.update(self.__dict__)
        new.mode, new.stats = "generate", CollatorStats()
        return new

    # -- one example ------------------------------------------------------------------------
    def _render(self, question: str, memory_text: str) -> tuple[list[int], list[int]]:
        msgs = answer_messages(question, GRAPH_SENTINEL + "\n" + memory_text, system=self.system)
        return split_prompt(self.tok, msgs, GRAPH_SENTINEL, template_kwargs=self.template_kwargs,
                            add_bos=self.encode_adds_bos)  # ValueError when the template drops the sentinel

    def _answer_ids(self, answer: str) -> list[int]:
        text = self.answer_template.format(answer=answer.strip())
        return self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]

    def fits(self, ex: GraphExample) -> bool:
        """Whether `ex` fits ``max_length`` once its memory text is cut away entirely (the question and,
        in train mode, the answer are never cut): an example that does not cannot be scored at all."""
        pre, post = self._render(ex.question, "...")
        ans = self._answer_ids(ex.answer) if self.mode == "train" and ex.answer is not None else []
        return len(pre) + self.num_graph_tokens + len(post) + len(ans) <= self.max_length

    def encode(self, ex: GraphExample) -> dict[str, Any]:
        """Token ids, graph-position mask and labels of one example (unpadded)."""
        if not isinstance(ex.graph, Data):
            raise TypeError(f"example {ex.id!r}: graph must be a torch_geometric Data, got {type(ex.graph).__name__}")
        ans = []
        if self.mode == "train":
            if ex.answer is None:
                raise ValueError(f"example {ex.id!r}: field 'answer' is None but the collator is in train mode")
            ans = self._answer_ids(ex.answer)
        memory = ex.memory_text
        pre, post = self._render(ex.question, memory)
        total = len(pre) + self.num_graph_tokens + len(post) + len(ans)
        truncated = False
        for attempt in range(5):
            if total <= self.max_length:
                break
            truncated = True
            mem_ids = self.tok(memory, add_special_tokens=False)["input_ids"]
            # decode -> re-encode can change the count slightly; the last attempt drops the memory text
            keep = max(len(mem_ids) - (total - self.max_length) - 8 * (attempt + 1), 0) if attempt < 4 else 0
            memory = (self.tok.decode(mem_ids[:keep], skip_special_tokens=True) + " ...") if keep else "..."
            pre, post = self._render(ex.question, memory)
            total = len(pre) + self.num_graph_tokens + len(post) + len(ans)
        if total > self.max_length:
            raise ValueError(f"example {ex.id!r}: prompt without memory text needs {total} tokens "
                             f"> max_length={self.max_length}")
        ids = pre + [self.pad_id] * self.num_graph_tokens + post + ans
        gmask = [False] * len(pre) + [True] * self.num_graph_tokens + [False] * (len(post) + len(ans))
        labels = [IGNORE_INDEX] * (len(ids) - len(ans)) + ans
        self.stats.examples += 1
        if truncated:
            self.stats.truncated += 1
            self.stats.truncated_ids.append(ex.id)
        return {"input_ids": ids, "graph_mask": gmask, "labels": labels, "truncated": truncated}

    # -- batch ------------------------------------------------------------------------------
    def __call__(self, examples: Sequence[GraphExample]) -> dict[str, Any]:
        if not examples:
            raise ValueError("GraphTokenCollator got an empty list of examples")
        enc = [self.encode(ex) for ex in examples]
        n = max(len(e["input_ids"]) for e in enc)
        left = self.mode == "generate"
        input_ids = torch.full((len(enc), n), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(enc), n), dtype=torch.long)
        gmask = torch.zeros((len(enc), n), dtype=torch.bool)
        labels = torch.full((len(enc), n), IGNORE_INDEX, dtype=torch.long)
        for i, e in enumerate(enc):
            m = len(e["input_ids"])
            sl = slice(n - m, n) if left else slice(0, m)
            input_ids[i, sl] = torch.tensor(e["input_ids"])
            attn[i, sl] = 1
            gmask[i, sl] = torch.tensor(e["graph_mask"])
            labels[i, sl] = torch.tensor(e["labels"])
        out: dict[str, Any] = {
            "input_ids": input_ids, "attention_mask": attn, "graph_mask": gmask,
            "graph": Batch.from_data_list([ex.graph for ex in examples]),
            "ids": [ex.id for ex in examples], "truncated": [e["truncated"] for e in enc],
            # the question of each row, for encoders that pool with the question as the query
            "questions": [ex.question for ex in examples],
        }
        if self.mode == "train":
            out["labels"] = labels
        return out
