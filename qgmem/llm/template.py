"""Prompts built around a slot in the tokenizer's own chat template.

Several prompts (the graph-token answer prompt, the yes/no reranker prompt) need the template's
rendering of a conversation with one variable part: the text is rendered once with a reserved
sentinel string in that part, split at the sentinel, and both halves are tokenised separately
(``add_special_tokens=False``, since the template already writes any BOS it wants). A tokenizer whose
encode adds a BOS the template does not write gets one BOS prepended, never two. Lives in the llm
layer so that both the model and the retrieval layers can use it (they may not import each other).
Imports neither torch nor transformers: the tokenizer is passed in.
"""

from __future__ import annotations

from typing import Any

# Qwen3's template writes an empty <think></think> block with this, so the model answers without
# reasoning; templates that do not use a keyword ignore it.
DEFAULT_TEMPLATE_KWARGS: dict[str, Any] = {"enable_thinking": False}


def encode_adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer's plain encode puts a BOS in front (Llama does, Qwen and SmolLM2 do not)."""
    bos = tokenizer.bos_token_id
    probe = tokenizer("a", add_special_tokens=True)["input_ids"]
    return bos is not None and len(probe) > 0 and probe[0] == bos


def render_prompt(tokenizer: Any, messages: list[dict[str, Any]], template_kwargs: dict[str, Any]) -> str:
    """The template's text for ``messages`` up to and including the assistant generation prompt."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **template_kwargs)


def split_prompt(tokenizer: Any, messages: list[dict[str, Any]], sentinel: str, *,
                 template_kwargs: dict[str, Any], add_bos: bool) -> tuple[list[int], list[int]]:
    """Token ids before and after ``sentinel`` (which must occur exactly once in ``messages``) in the
    rendered prompt. ``add_bos``: `encode_adds_bos` of the tokenizer, computed once by the caller."""
    text = render_prompt(tokenizer, messages, template_kwargs)
    if text.count(sentinel) != 1:
        raise ValueError(f"chat template dropped or repeated the sentinel {sentinel!r}; "
                         "cannot split the prompt around it")
    pre, post = text.split(sentinel)
    pre_ids = tokenizer(pre, add_special_tokens=False)["input_ids"]
    post_ids = tokenizer(post, add_special_tokens=False)["input_ids"]
    if add_bos and (not pre_ids or pre_ids[0] != tokenizer.bos_token_id):
        pre_ids = [tokenizer.bos_token_id] + pre_ids
    return pre_ids, post_ids
