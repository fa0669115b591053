"""Get JSON out of LLM replies: repair the usual damage, validate, and re-ask with the error.

Small and mid-size models wrap JSON in prose or code fences, leave trailing commas, use single
quotes or Python literals (True/None) and unquoted keys. `parse_json_lenient` repairs those;
it never invents content (a truncated reply is an error, not a guess). `chat_json` turns a
still-invalid reply into a follow-up turn that quotes the error, and raises JSONReplyError
(both an LLMError and a ValueError) when every attempt failed, so callers can count it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .base import ChatBackend, LLMError, Message

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL)
_CLOSER = {"{": "}", "[": "]"}
_LITERALS = {"True": "true", "False": "false", "None": "null", "true": "true", "false": "false", "null": "null"}
_SMART = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


class JSONReplyError(LLMError, ValueError):
    """No attempt produced valid JSON. Carries the last raw reply and the error per attempt."""

    def __init__(self, message: str, raw: str, errors: list[str]):
        super().__init__(message)
        self.raw = raw
        self.errors = errors


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket matching text[start], skipping quoted strings; None if unclosed."""
    stack = [_CLOSER[text[start]]]
    i, n = start + 1, len(text)
    quote: str | None = None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            # an apostrophe inside a bare word (don't) is not a quote
            if c == "'" and i > 0 and text[i - 1].isalnum():
                pass
            else:
                quote = c
        elif c in _CLOSER:
            stack.append(_CLOSER[c])
        elif c in "}]":
            if c != stack[-1]:
                return None
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return None


def _normalise(src: str) -> str:
    """Rewrite JSON-ish text as JSON: quotes, literals, bare keys, trailing commas, comments."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            s = src[i : j + 1]
            out.append(s.replace("\n", "\\n").replace("\t", "\\t"))
            i = j + 1
        elif c == "'":
            j = i + 1
            buf: list[str] = []
            while j < n and src[j] != "'":
                if src[j] == "\\" and j + 1 < n:
                    buf.append(src[j + 1] if src[j + 1] == "'" else src[j : j + 2])
                    j += 2
                    continue
                buf.append('\\"' if src[j] == '"' else src[j])
                j += 1
            out.append('"' + "".join(buf).replace("\n", "\\n") + '"')
            i = j + 1
        elif c == "/" and i + 1 < n and src[i + 1] == "/":  # // comment to end of line
            while i < n and src[i] != "\n":
                i += 1
        elif c == ",":
            j = i + 1
            while j < n and src[j].isspace():
                j += 1
            if j < n and src[j] in "}]":
                i += 1  # trailing comma
                continue
            out.append(c)
            i += 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (src[j].isalnum() or src[j] in "_-"):
                j += 1
            word = src[i:j]
            k = j
            while k < n and src[k] in " \t":
                k += 1
            if k < n and src[k] == ":":
                out.append(json.dumps(word))  # unquoted key
            else:
                out.append(_LITERALS.get(word, word))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _try(candidate: str) -> tuple[bool, Any, str]:
    try:
        return True, json.loads(candidate), ""
    except json.JSONDecodeError as e:
        first = str(e)
    try:
        return True, json.loads(_normalise(candidate)), ""
    except json.JSONDecodeError:
        return False, None, first


def parse_json_lenient(text: str) -> Any:
    """Parse the first JSON object/array in an LLM reply, repairing common damage.

    Raises ValueError naming what was wrong (empty, no JSON, unbalanced/truncated, unparsable).
    """
    if text is None or not str(text).strip():
        raise ValueError("empty reply: expected JSON")
    text = str(text).strip().lstrip("\ufeff")
    ok, value, err = _try(text)
    if ok:
        return value
    sources = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text]
    saw_open = False
    last_err = err
    for src in sources:
        ok, value, _ = _try(src)
        if ok and isinstance(value, (dict, list)):
            return value
        for variant in (src, src.translate(_SMART)):
            for start, ch in enumerate(variant):
                if ch not in _CLOSER:
                    continue
                saw_open = True
                end = _balanced_end(variant, start)
                if end is None:
                    continue
                ok, value, e = _try(variant[start:end])
                if ok:
                    return value
                last_err = e
    if not saw_open:
        raise ValueError(f"no JSON object or array in reply: {text[:120]!r}")
    raise ValueError(f"could not parse JSON from reply ({last_err or 'unbalanced or truncated brackets'}): {text[:160]!r}")


def chat_json(
    backend: ChatBackend,
    messages: list[Message],
    *,
    validate: Callable[[Any], Any] | None = None,
    retries: int = 2,
    phase: str = "default",
    temperature: float = 0.0,
    max_tokens: int = 512,
    json_mode: bool = True,
) -> Any:
    """Ask for JSON; repair, validate, and re-ask (quoting the error) up to `retries` more times.

    `validate(value)` raises ValueError with a message the model can act on; if it returns a
    non-None value, that value is returned instead (so it can also convert). LLMError from the
    backend propagates unchanged; invalid replies end in JSONReplyError after the last attempt.
    """
    convo = list(messages)
    errors: list[str] = []
    raw = ""
    for _attempt in range(retries + 1):
        res = backend.chat(convo, temperature=temperature, max_tokens=max_tokens, json_mode=json_mode, phase=phase)
        raw = res.text
        try:
            value = parse_json_lenient(raw)
            if validate is not None:
                checked = validate(value)
                if checked is not None:
                    value = checked
            return value
        except ValueError as e:
            errors.append(str(e))
            convo = convo + [
                {"role": "assistant", "content": raw},
                {
                    "role": "user",
                    "content": f"That reply could not be used: {e}\nReply again with only the corrected JSON, nothing else.",
                },
            ]
    raise JSONReplyError(
        f"no valid JSON after {retries + 1} attempt(s); last error: {errors[-1]}", raw=raw, errors=errors
    )
