"""Local transformers backend on a tiny config-built Llama with a tokenizer made here.

The tiny model has random weights, so tests check what users rely on regardless of content:
chat-template prompts, exact token counts, greedy determinism, EOS/stop handling, batching.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from qgmem.llm import ChatRequest, LLMConfig, LLMError, local_model_path, make_backend
from qgmem.llm.hf import HFChatBackend

SPECIALS = ["<unk>", "<|im_end|>", "<|im_start|>", "<pad>"]  # <unk> = id 0
CORPUS = [
    "alice works at globex as a manager",
    "bob is reading foundation after dune",
    "alice visited paris with her mom last month",
    "what is the capital of france ? paris is the capital",
    "user assistant system where does alice work now",
]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }}<|im_end|>{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{% endif %}"
)


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", eos_token="<|im_end|>", pad_token="<pad>", chat_template=TEMPLATE
    )


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    d = tmp_path_factory.mktemp("tiny-llama")
    tok = _tokenizer()
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, bos_token_id=None,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def backend(tiny_dir: Path) -> HFChatBackend:
    return HFChatBackend(str(tiny_dir), device="cpu", max_new_tokens=12, batch_size=4)


MSG = [{"role": "user", "content": "where does alice work now"}]


def test_prompt_uses_chat_template_and_counts_are_exact(backend: HFChatBackend, tiny_dir: Path) -> None:
    tok = _tokenizer()
    expected = tok("<|im_start|>user where does alice work now<|im_end|><|im_start|>assistant")["input_ids"]
    assert backend.encode(ChatRequest(MSG)) == expected
    res = backend.chat(MSG, max_tokens=8, phase="generation")
    assert res.prompt_tokens == len(expected) == 10
    assert 1 <= res.completion_tokens <= 8
    if res.finish_reason == "length":
        assert res.completion_tokens == 8
    u = backend.usage.phases["generation"]
    assert (u.calls, u.prompt_tokens, u.completion_tokens) == (1, 10, res.completion_tokens)


def test_greedy_is_deterministic(backend: HFChatBackend) -> None:
    a = backend.chat(MSG, max_tokens=10)
    b = backend.chat(MSG, max_tokens=10)
    assert (a.text, a.completion_tokens) == (b.text, b.completion_tokens)
    assert a.text  # random weights over real words: some text comes out


def test_max_new_tokens_caps_request(backend: HFChatBackend) -> None:
    res = backend.chat(MSG, max_tokens=500)  # backend cap is 12
    assert res.completion_tokens <= 12


def test_stop_string_truncates_and_counts(backend: HFChatBackend) -> None:
    full = backend.chat(MSG, max_tokens=12)
    words = full.text.split()
    stop_word = next((w for w in words[1:] if w != words[0]), None)
    if stop_word is None:
        pytest.skip("random model produced a single repeated word")
    cut = backend.chat(MSG, max_tokens=12, stop=[stop_word])
    assert stop_word not in cut.text
    assert full.text.startswith(cut.text)
    assert cut.completion_tokens < full.completion_tokens and cut.finish_reason == "stop"


def _always(be: HFChatBackend, token: str) -> None:
    """Rewire the output layer so greedy decoding always emits `token`."""
    lm = be.lm
    head = torch.nn.Linear(lm.config.hidden_size, lm.config.vocab_size, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        head.bias[be.tokenizer.convert_tokens_to_ids(token)] = 10.0
    lm.lm_head = head


def test_eos_ends_generation_and_counts_it(tiny_dir: Path) -> None:
    be = HFChatBackend(str(tiny_dir), device="cpu", max_new_tokens=12)
    _always(be, "<|im_end|>")
    res = be.chat(MSG, max_tokens=5)
    assert (res.text, res.completion_tokens, res.finish_reason) == ("", 1, "stop")


def test_length_limit_gives_exact_text(tiny_dir: Path) -> None:
    be = HFChatBackend(str(tiny_dir), device="cpu", max_new_tokens=12)
    _always(be, "paris")
    res = be.chat(MSG, max_tokens=4)
    assert (res.text, res.completion_tokens, res.finish_reason) == ("paris paris paris paris", 4, "length")
    res = be.chat(MSG, max_tokens=4, json_mode=True)  # json_mode adds an instruction to the prompt
    assert res.prompt_tokens > be.chat(MSG, max_tokens=4).prompt_tokens


def test_batched_matches_one_by_one(backend: HFChatBackend) -> None:
    qs = ["where does alice work now", "bob is reading", "what is the capital of france ?", "alice visited paris"]
    reqs = [ChatRequest([{"role": "user", "content": q}], max_tokens=6) for q in qs]
    single = [backend.complete(r) for r in reqs]
    batched = backend.complete_many(reqs + [ChatRequest(MSG, max_tokens=3)], phase="retrieval")
    assert [(r.text, r.prompt_tokens, r.completion_tokens) for r in batched[:4]] == [
        (r.text, r.prompt_tokens, r.completion_tokens) for r in single
    ]
    assert batched[4].completion_tokens <= 3
    assert backend.usage.phases["retrieval"].calls == 5


def test_too_long_prompt_is_an_llm_error(backend: HFChatBackend) -> None:
    long = [{"role": "user", "content": "alice " * 80}]
    with pytest.raises(LLMError, match="context is 64"):
        backend.chat(long, phase="construction")
    assert backend.usage.phases["construction"].failed == 1
    out = backend.complete_many([ChatRequest(long), ChatRequest(MSG, max_tokens=2)])
    assert isinstance(out[0], LLMError) and not isinstance(out[1], LLMError)


def test_make_backend_hf_with_cache(tiny_dir: Path, tmp_path: Path) -> None:
    be = make_backend(LLMConfig(backend="hf", model=str(tiny_dir), device="cpu", max_new_tokens=4,
                                cache_dir=str(tmp_path)))
    a = be.chat(MSG)
    b = be.chat(MSG)
    assert b.cached and b.text == a.text and b.completion_tokens == a.completion_tokens


def test_local_model_path_passes_other_names_through(tmp_path: Path) -> None:
    assert local_model_path(str(tmp_path)) == str(tmp_path)
    assert local_model_path("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


def test_missing_chat_template_is_rejected(tiny_dir: Path, tmp_path: Path) -> None:
    import shutil

    d = tmp_path / "no-template"
    shutil.copytree(tiny_dir, d)
    tok = _tokenizer()
    tok.chat_template = None
    for f in d.glob("chat_template*"):
        f.unlink()
    tok.save_pretrained(d)
    with pytest.raises(ValueError, match="no chat template"):
        HFChatBackend(str(d), device="cpu")


def test_sampling_follows_the_seed_and_varies_across_seeds(backend: HFChatBackend) -> None:
    def sample(seed: int) -> str:
        torch.manual_seed(seed)
        return backend.chat(MSG, temperature=1.5, max_tokens=10).text

    assert sample(7) == sample(7)  # sampling draws from torch's generator: reproducible with a seed
    assert len({sample(s) for s in range(5)}) > 1  # and it really samples (greedy would repeat)
