"""Tiny config-built causal LMs (Qwen3-like and Llama-like) and fixture tokenizers made in code.

No downloads: weights are random from a fixed seed, the tokenizers are word-level over a fixed
vocabulary with their own Jinja chat templates. The Llama-style tokenizer has a BOS that both its
template and its encode add (the duplicated-BOS trap); the Qwen-style one has no BOS at all.
"""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
)

WORDS = """
a an the of to in on at for with and or but is are was were be been it its this that these those
what which who where when why how does did do not no yes if then than as by from about into after before
i you he she we they me my your his her our their him them us
you answer questions conversation between people use only memory given retrieved from it entries labelled
like m1 m2 m3 m4 m5 fact later updated trust latest state unless question asks past reason briefly citing
labels rely give final line short contain write mentioned asked
secret colour color item items graph x y z key value has_colour has colour relations subject relation object
red green blue yellow purple orange black white pink brown grey gold
alice bob carol dina eve rex acme globex seattle paris dune foundation
work works job lives live visited read reading dog city sister mom
one two three four five six seven eight nine ten 0 1 2 3 4 5 6 7 8 9
time said source trajectory superseded update relations between
system user assistant
""".split()  # noqa: SIM905 - a word list reads best as text
PUNCT = list(".,:;!?()[]<>-_'\"/+*=#@%&|{}~^`$\\")


def _vocab(specials: list[str]) -> dict[str, int]:
    vocab: dict[str, int] = {}
    for w in specials + ["[UNK]"] + PUNCT + WORDS:
        vocab.setdefault(w, len(vocab))
    for i in range(64):  # item names for synthetic tasks: item0 .. item63
        vocab.setdefault(f"item{i}", len(vocab))
    return vocab


def make_tokenizer(style: str) -> PreTrainedTokenizerFast:
    """Word-level tokenizer with a chat template. style: "llama" (BOS) or "qwen" (no BOS)."""
    if style == "llama":
        specials = ["<pad>", "<s>", "</s>", "<|start|>", "<|end|>"]
        bos, eos, pad = "<s>", "</s>", "<pad>"
        template = ("{{ bos_token }}{% for m in messages %}<|start|>{{ m['role'] }}\n{{ m['content'] }}<|end|>\n"
                    "{% endfor %}{% if add_generation_prompt %}<|start|>assistant\n{% endif %}")
    elif style == "qwen":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        bos, eos, pad = None, "<|im_end|>", "<|endoftext|>"
        template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    else:
        raise ValueError(f"unknown tokenizer style {style!r}")
    vocab = _vocab(specials)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    if bos is not None:
        tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                          special_tokens=[(bos, vocab[bos])])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=bos, eos_token=eos, pad_token=pad,
                                  unk_token="[UNK]", additional_special_tokens=[s for s in specials
                                                                                if s not in (bos, eos, pad)])
    tok.chat_template = template
    return tok


def make_model(arch: str, vocab_size: int, seed: int = 0, hidden: int = 48, init_std: float = 0.02) -> torch.nn.Module:
    """A 2-layer causal LM with random weights from ``seed``. arch: "qwen3" or "llama".

    ``init_std`` is the weight init scale; a larger one gives a random model logits with enough
    range to become confident (the default 0.02 keeps every prediction near uniform).
    """
    torch.manual_seed(seed)
    common = {"vocab_size": vocab_size, "hidden_size": hidden, "intermediate_size": hidden * 2,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 512, "attention_dropout": 0.0, "tie_word_embeddings": False,
              "initializer_range": init_std}
    if arch == "qwen3":
        cfg = Qwen3Config(head_dim=hidden // 4, **common)
        model = Qwen3ForCausalLM(cfg)
    elif arch == "llama":
        cfg = LlamaConfig(**common)
        model = LlamaForCausalLM(cfg)
    else:
        raise ValueError(f"unknown arch {arch!r}")
    return model.eval()


def make_tiny(arch: str, seed: int = 0, hidden: int = 48, init_std: float = 0.02
              ) -> tuple[torch.nn.Module, PreTrainedTokenizerFast]:
    """(model, tokenizer): Qwen3 with the BOS-less tokenizer, Llama with the BOS tokenizer."""
    tok = make_tokenizer("qwen" if arch == "qwen3" else "llama")
    return make_model(arch, len(tok), seed=seed, hidden=hidden, init_std=init_std), tok
