"""The real Qwen3-8B and Llama-3.1-8B-Instruct chat templates through `GraphTokenCollator` and `GraphTokenLM`:
graph-token position, one BOS, label masking, stop tokens, Qwen3 with thinking off."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_model_graph_token_lm import enc_cfg, example
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
import torch
from transformers import LogitsProcessorList, PreTrainedTokenizerFast

from qgmem.model import GraphTokenCollator, GraphTokenLM
from qgmem.testing.tiny_models import PUNCT, WORDS, make_model

TEMPLATES = Path(__file__).parent / "fixtures" / "templates"
# (template file, special tokens, bos, eos, pad, non-special added tokens) as in each model's tokenizer config
SPECS = {
    "qwen3": ("qwen3_8b.jinja", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None, "<|im_end|>",
              "<|endoftext|>", ["<think>", "</think>"]),
    "llama31": ("llama31_8b_instruct.jinja", ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"], "<|begin_of_text|>", "<|eot_id|>", None, []),
}
END_OF_TURN = {"qwen3": "<|im_end|>", "llama31": "<|eot_id|>"}


def real_tokenizer(name: str, eos: str | None = None) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the tiny-model vocabulary with the real template and its special tokens;
    Llama's encoder adds BOS like the real one. `eos` overrides the config's EOS."""
    file, specials, bos, eos0, pad, added = SPECS[name]
    vocab: dict[str, int] = {}
    for w in specials + added + ["[UNK]"] + PUNCT + WORDS + [f"item{i}" for i in range(64)]:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    if bos is not None:
        tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, vocab[bos])])
    eos = eos or eos0
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=bos, eos_token=eos, pad_token=pad, unk_token="[UNK]",
                                  additional_special_tokens=[s for s in specials if s not in (bos, eos, pad)])
    tok.add_tokens(added)  # <think>, </think>: added but not special, as in Qwen3's config
    tok.chat_template = (TEMPLATES / file).read_text(encoding="utf-8")
    return tok


def tokens(tok, ids) -> list[str]:
    return tok.convert_ids_to_tokens(list(ids))


@pytest.mark.parametrize("name", ["qwen3", "llama31"])
def test_graph_tokens_sit_right_before_the_memory_text(name: str) -> None:
    tok = real_tokenizer(name)
    enc = GraphTokenCollator(tok, 2, 1024).encode(example(0, 2))
    ids, gmask = enc["input_ids"], enc["graph_mask"]
    first = gmask.index(True)
    assert sum(gmask) == 2 and gmask[first:first + 2] == [True, True]
    assert tokens(tok, ids[first - 2:first]) == ["memory", ":"]
    assert tokens(tok, ids[first + 2:first + 5]) == ["[", "m1", "]"]
    # the prompt around them is the template's own rendering of the same messages
    text = tok.decode([i for i, m in zip(ids, gmask) if not m], skip_special_tokens=False)
    assert ("<|im_start|>user" if name == "qwen3" else "<|start_header_id|>user<|end_header_id|>") in text.replace(" ", "")


@pytest.mark.parametrize("name", ["qwen3", "llama31"])
def test_exactly_one_bos(name: str) -> None:
    """Llama's template writes <|begin_of_text|> and its encoder adds one too: the prompt has it once, first.
    Qwen3 has no BOS at all."""
    tok = real_tokenizer(name)
    for mode in ("train", "generate"):
        ids = GraphTokenCollator(tok, 1, 1024, mode=mode).encode(example(0, 1))["input_ids"]
        if name == "llama31":
            assert ids.count(tok.bos_token_id) == 1 and ids[0] == tok.bos_token_id
        else:
            assert tok.bos_token_id is None


@pytest.mark.parametrize("name", ["qwen3", "llama31"])
def test_only_the_answer_and_the_end_of_turn_token_are_supervised(name: str) -> None:
    tok = real_tokenizer(name)
    enc = GraphTokenCollator(tok, 1, 1024).encode(example(0, 1, answer="blue"))
    sup = [lab for lab in enc["labels"] if lab != -100]
    assert tokens(tok, sup) == ["answer", ":", "blue", END_OF_TURN[name]]
    assert enc["input_ids"][-len(sup):] == sup
    prompt = tokens(tok, enc["input_ids"][: len(enc["input_ids"]) - len(sup)])
    assert prompt[-4:] == (["<|im_start|>", "assistant", "<think>", "</think>"] if name == "qwen3"
                           else ["<|eot_id|>", "<|start_header_id|>", "assistant", "<|end_header_id|>"])


def test_llama_base_eos_still_stops_generation_on_the_templates_end_of_turn() -> None:
    """With the base model's EOS (<|end_of_text|>) the template still closes assistant turns with
    <|eot_id|>: generation stops on both."""
    tok = real_tokenizer("llama31", eos="<|end_of_text|>")
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    lm = GraphTokenLM(make_model("llama", len(tok)), tok, enc_cfg(1))
    assert eot in lm._eos_ids() and tok.eos_token_id in lm._eos_ids()


def test_qwen3_thinking_off_puts_the_empty_think_block_in_the_prompt_only() -> None:
    tok = real_tokenizer("qwen3")
    enc = GraphTokenCollator(tok, 1, 1024).encode(example(0, 1, answer="blue"))
    n_sup = sum(lab != -100 for lab in enc["labels"])
    prompt = tokens(tok, enc["input_ids"][:-n_sup])
    assert prompt[-4:] == ["<|im_start|>", "assistant", "<think>", "</think>"]  # "<think>\n\n</think>\n\n"
    assert prompt.count("<think>") == 1
    assert "<think>" not in tokens(tok, [lab for lab in enc["labels"] if lab != -100])
    # thinking on (the template's default): no think block, the model would open one itself
    on = GraphTokenCollator(tok, 1, 1024, mode="generate", template_kwargs={"enable_thinking": True})
    assert tokens(tok, on.encode(example(0, 1))["input_ids"])[-2:] == ["<|im_start|>", "assistant"]


@pytest.mark.parametrize("name", ["qwen3", "llama31"])
def test_generation_stops_on_the_templates_end_of_turn(name: str) -> None:
    tok = real_tokenizer(name)
    lm = GraphTokenLM(make_model("qwen3" if name == "qwen3" else "llama", len(tok)), tok,
                      enc_cfg(1))
    eot = tok.convert_tokens_to_ids(END_OF_TURN[name])
    assert eot in lm._eos_ids()
    blue = tok.convert_tokens_to_ids("blue")

    def script(input_ids, scores):  # the model "says" <end-of-turn>, then "blue" if it was not stopped
        forced = torch.full_like(scores, -1e9)
        forced[:, eot if script.step == 0 else blue] = 0.0
        script.step += 1
        return forced

    script.step = 0
    batch = lm.make_collator(1024, mode="generate")([example(0, 1, answer=None)])
    assert lm.generate(batch, max_new_tokens=4, logits_processor=LogitsProcessorList([script])) == [""]
    assert script.step == 1  # stopped after the end-of-turn token


def test_template_kwargs_are_saved_with_the_checkpoint_and_used_at_inference(tmp_path) -> None:
    tok = real_tokenizer("qwen3")
    llm = make_model("qwen3", len(tok))
    lm = GraphTokenLM(llm, tok, enc_cfg(1))
    assert lm.template_kwargs == {"enable_thinking": False}
    lm.template_kwargs = {"enable_thinking": True}
    lm.save_pretrained(tmp_path / "ck")
    back = GraphTokenLM.from_pretrained(tmp_path / "ck", llm=llm, tokenizer=tok)
    assert back.template_kwargs == {"enable_thinking": True}
    ids = back.make_collator(1024, mode="generate").encode(example(0, 1))["input_ids"]
    assert "<think>" not in tokens(tok, ids)  # thinking on, as the checkpoint says
    default = GraphTokenLM(llm, tok, enc_cfg(1))
    assert tokens(tok, default.make_collator(1024, mode="generate").encode(example(0, 1))["input_ids"])[-2:] \
        == ["<think>", "</think>"]
