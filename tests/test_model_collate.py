"""GraphTokenCollator: chat template, BOS handling, graph positions, labels, padding, truncation."""

from __future__ import annotations

import pytest
import torch
from test_model_graph_token_lm import example
from qgmem.testing.tiny_models import make_tokenizer

from qgmem.answer import answer_messages
from qgmem.model import GRAPH_SENTINEL, GraphExample, GraphTokenCollator


def full_prompt_ids(tok, ex: GraphExample) -> list[int]:
    """What the chat template gives for the prompt without any graph placeholder."""
    text = tok.apply_chat_template(answer_messages(ex.question, "\n" + ex.memory_text), tokenize=False,
                                   add_generation_prompt=True)
    return tok(text, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("style", ["qwen", "llama"])
def test_prompt_is_the_chat_template_with_graph_positions_before_memory(style: str) -> None:
    tok = make_tokenizer(style)
    ex = example(0, 2)
    enc = GraphTokenCollator(tok, 3, 512).encode(ex)
    ids, gmask, labels = enc["input_ids"], enc["graph_mask"], enc["labels"]
    assert sum(gmask) == 3
    first = gmask.index(True)
    assert tok.convert_ids_to_tokens(ids[first - 2:first]) == ["memory", ":"]
    assert tok.convert_ids_to_tokens(ids[first + 3:first + 6]) == ["[", "m1", "]"]  # then the memory text
    n_answer = sum(lab != -100 for lab in labels)
    prompt = [t for t, m in zip(ids, gmask) if not m][: len(ids) - 3 - n_answer]
    assert prompt == full_prompt_ids(tok, ex)
    # BOS exactly once for the tokenizer that has one, never for the one that does not
    n_bos = ids.count(tok.bos_token_id) if tok.bos_token_id is not None else 0
    assert n_bos == (1 if style == "llama" else 0)
    if style == "llama":
        assert ids[0] == tok.bos_token_id


@pytest.mark.parametrize("style", ["qwen", "llama"])
def test_labels_are_answer_and_eos_only(style: str) -> None:
    tok = make_tokenizer(style)
    enc = GraphTokenCollator(tok, 1, 512).encode(example(0, 1, answer="blue"))
    sup = [lab for lab in enc["labels"] if lab != -100]
    assert sup == tok("Answer: blue", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert enc["input_ids"][-len(sup):] == sup
    raw = GraphTokenCollator(tok, 1, 512, answer_template="{answer}").encode(example(0, 1, answer="blue"))
    assert [lab for lab in raw["labels"] if lab != -100] == [tok.convert_tokens_to_ids("blue"), tok.eos_token_id]


def test_padding_sides_and_masks() -> None:
    tok = make_tokenizer("llama")
    exs = [example(0, 0), example(1, 3)]
    train = GraphTokenCollator(tok, 2, 512)(exs)
    gen = GraphTokenCollator(tok, 2, 512, mode="generate")(exs)
    for b in (train, gen):
        assert b["input_ids"].shape == b["attention_mask"].shape == b["graph_mask"].shape
        assert b["graph_mask"].sum(1).tolist() == [2, 2]
        assert b["graph"].num_graphs == 2 and b["ids"] == ["ex0", "ex1"]
        assert not (b["graph_mask"] & (b["attention_mask"] == 0)).any()
    assert train["attention_mask"][0, 0] == 1 and train["attention_mask"][0, -1] == 0  # right padded
    assert (train["labels"][train["attention_mask"] == 0] == -100).all()
    assert gen["attention_mask"][0, 0] == 0 and (gen["attention_mask"][:, -1] == 1).all()  # left padded
    assert "labels" not in gen
    # generation prompts are the training prompts without the answer
    n = int(gen["attention_mask"][0].sum())
    row = train["input_ids"][0][train["labels"][0] == -100][: n]
    assert torch.equal(gen["input_ids"][0, -n:], row[:n])
    assert torch.equal(GraphTokenCollator(tok, 2, 512).for_generation()(exs)["input_ids"], gen["input_ids"])


def test_long_memory_is_truncated_to_max_length_and_counted() -> None:
    tok = make_tokenizer("qwen")
    ex = example(0, 2)
    ex.memory_text = " ".join(["red blue green"] * 200)
    col = GraphTokenCollator(tok, 2, 160)
    enc = col.encode(ex)
    assert len(enc["input_ids"]) <= 160 and enc["truncated"]
    assert col.stats.truncated == 1 and col.stats.truncated_ids == ["ex0"]
    assert [lab for lab in enc["labels"] if lab != -100][-1] == tok.eos_token_id  # answer kept whole
    with pytest.raises(ValueError, match="max_length=20"):
        GraphTokenCollator(tok, 2, 20).encode(example(0, 1))


def test_fits_tells_which_examples_can_be_scored_at_all() -> None:
    """Memory text is cut to fit; the question and answer are not, so `fits` (used by the trainer to leave
    such examples out, counted) is exactly "encode does not raise"."""
    tok = make_tokenizer("qwen")
    short, long_answer = example(0, 2), example(1, 2, answer=" ".join(["red"] * 150))
    long_answer.memory_text = " ".join(["red blue green"] * 200)
    col = GraphTokenCollator(tok, 2, 160)
    assert col.fits(short) and not col.fits(long_answer)
    col.encode(short)
    with pytest.raises(ValueError, match="max_length=160"):
        col.encode(long_answer)
    assert col.for_generation().fits(long_answer)  # a prompt without the answer fits
    assert GraphTokenCollator(tok, 2, 1000).fits(long_answer)


def test_bad_input_errors_name_the_example() -> None:
    tok = make_tokenizer("qwen")
    with pytest.raises(ValueError, match="'ex0'.*answer"):
        GraphTokenCollator(tok, 1, 512).encode(example(0, 1, answer=None))
    ex = example(0, 1)
    ex.graph = {"x": 1}
    with pytest.raises(TypeError, match="'ex0'"):
        GraphTokenCollator(tok, 1, 512).encode(ex)
    ex = example(0, 1)
    ex.question = f"what {GRAPH_SENTINEL} ?"
    with pytest.raises(ValueError, match="sentinel"):
        GraphTokenCollator(tok, 1, 512).encode(ex)
