"""The LLM reranker's prompt is the model's own chat template: the real Qwen3-8B and Llama-3.1-8B-Instruct
templates (tests/fixtures/templates) set on copies of the local SmolLM2 tokenizer, the prompt checked
against `apply_chat_template` of the whole pair, truncation that keeps the generation prompt, and (slow)
scores from the SmolLM2 weights end to end (CPU, tiny inputs).

The prompt is compared as text: SmolLM2's byte-level BPE has no special tokens for Llama's headers, so
tokenising the prompt in pieces can split "\n\n" differently from tokenising it whole; with Qwen3's
template (special tokens at every cut) the ids agree too."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from qgmem.retrieve.rerank import SYSTEM, CausalYesNoReranker, YesNoPrompt, qwen3_pair, yes_no_messages

TEMPLATES = Path(__file__).parent / "fixtures" / "templates"
FILES = {"qwen3": "qwen3_8b.jinja", "llama31": "llama31_8b_instruct.jinja"}
INSTRUCTION = "Judge whether the memory answers the question"
QUERY = "Where does Alice work now?"
DOC = "Fact: Alice now works at Globex as a manager.\n"  # the trailing newline: Llama's template trims it
LONG_DOC = "Fact: " + "very long memory " * 300


@pytest.fixture(scope="module")
def smol_dir() -> Path:
    from qgmem.llm.hf import local_model_path

    try:
        return Path(local_model_path("smollm2"))
    except FileNotFoundError as e:  # the packaged GGUF is not installed
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def model_dirs(smol_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, Path]:
    """SmolLM2 folders (weights linked, not copied) whose tokenizer carries each template; None: no template."""
    from transformers import AutoTokenizer

    out: dict[str | None, Path] = {}
    for name in [*FILES, None]:
        d = tmp_path_factory.mktemp(f"smol-{name or 'none'}")
        for f in ("config.json", "generation_config.json", "model.safetensors"):
            if (smol_dir / f).exists():
                os.symlink(smol_dir / f, d / f)
        tok = AutoTokenizer.from_pretrained(smol_dir)
        tok.chat_template = (TEMPLATES / FILES[name]).read_text(encoding="utf-8") if name else None
        tok.save_pretrained(d)
        out[name] = d
    return out


def tokenizer(model_dirs: dict[str | None, Path], name: str | None):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dirs[name])


def full_prompt(tok, doc: str, **kwargs) -> str:
    """What the template renders for the whole pair, no splitting."""
    kw = {"enable_thinking": False, **kwargs}
    return tok.apply_chat_template(yes_no_messages(qwen3_pair(INSTRUCTION, QUERY, doc)), tokenize=False,
                                   add_generation_prompt=True, **kw)


@pytest.mark.parametrize("name", list(FILES))
def test_prompt_is_the_template_rendering_of_the_whole_pair(model_dirs, name: str) -> None:
    tok = tokenizer(model_dirs, name)
    p = YesNoPrompt(tok, INSTRUCTION, 512)
    ids = p.encode(QUERY, DOC)
    text = tok.decode(ids)
    assert text == full_prompt(tok, DOC)
    assert p.trims == (name == "llama31")
    if name == "qwen3":  # exactly the Qwen3-Reranker format the reranker used to hard-code
        pair = qwen3_pair(INSTRUCTION, QUERY, DOC)
        assert text == (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{pair}<|im_end|>\n"
                        "<|im_start|>assistant\n<think>\n\n</think>\n\n")
        assert ids == tok(text, add_special_tokens=False)["input_ids"]
        thinking = YesNoPrompt(tok, INSTRUCTION, 512, template_kwargs={"enable_thinking": True})
        assert tok.decode(thinking.encode(QUERY, DOC)) == full_prompt(tok, DOC, enable_thinking=True)
        assert "<think>" not in tok.decode(thinking.suffix)
    else:
        assert text.endswith("<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n") and "<think>" not in text
        assert "Globex as a manager.<|eot_id|>" in text  # the user message trimmed as the template does


@pytest.mark.parametrize("name", list(FILES))
def test_long_document_is_cut_but_the_generation_prompt_is_kept(model_dirs, name: str) -> None:
    tok = tokenizer(model_dirs, name)
    short = len(YesNoPrompt(tok, INSTRUCTION, 512).encode(QUERY, DOC))
    max_length = short  # the short pair fits exactly, the long one must be cut
    p = YesNoPrompt(tok, INSTRUCTION, max_length)
    ids = p.encode(QUERY, LONG_DOC)
    assert len(ids) == max_length
    assert ids[:len(p.prefix)] == p.prefix and ids[-len(p.suffix):] == p.suffix
    text = tok.decode(ids)
    assert "<Query>: " + QUERY in text and 0 < text.count("very long memory") < 30
    assert full_prompt(tok, "x").endswith(tok.decode(p.suffix))  # the suffix is the template's generation prompt
    assert tok.decode(p.encode(QUERY, DOC)) == full_prompt(tok, DOC)  # a short pair is not cut


def test_tokenizer_without_a_chat_template_is_refused_by_name(model_dirs) -> None:
    tok = tokenizer(model_dirs, None)
    assert tok.chat_template is None
    with pytest.raises(ValueError, match="'my-model' has no chat template"):
        YesNoPrompt(tok, INSTRUCTION, model="my-model")
    with pytest.raises(ValueError, match=str(model_dirs[None].name)):
        CausalYesNoReranker(str(model_dirs[None]), INSTRUCTION, device="cpu")


@pytest.mark.slow  # loads the SmolLM2 weights, like the project's other real-model tests
@pytest.mark.parametrize("name", list(FILES))
def test_scores_end_to_end_with_smollm2_weights(model_dirs, name: str) -> None:
    import torch

    torch.set_num_threads(1)
    r = CausalYesNoReranker(str(model_dirs[name]), INSTRUCTION, max_length=256, batch_size=2, device="cpu")
    docs = [DOC, "Fact: Bob is learning to play the guitar.", LONG_DOC]
    scores = r.score(QUERY, docs)
    assert len(scores) == 3 and all(0.0 < s < 1.0 for s in scores)
    ids = r._encode(QUERY, DOC)
    assert r.tok.decode(ids) == full_prompt(r.tok, DOC) and len(r._encode(QUERY, LONG_DOC)) == 256
    with torch.no_grad():
        logits = r.lm(input_ids=torch.tensor([ids])).logits[0, -1]
    p_yes = 1 / (1 + math.exp(float(logits[r.no] - logits[r.yes])))
    assert scores[0] == pytest.approx(p_yes, abs=1e-4)  # left padding in the batch changes nothing
