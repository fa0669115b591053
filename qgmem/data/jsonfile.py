"""Read benchmark JSON files, plain or xz-compressed, whole or as a stream of array elements.

LongMemEval-S unpacks to 257 MB; `iter_json_array` decodes one top-level element at a time from a
rolling buffer so that the raw text and the full list of raw dicts never exist at the same time.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import IO, Any, Iterator

from .errors import DataError

_CHUNK = 1 << 20


def open_text(path: str | Path) -> IO[str]:
    """Open ``.json`` or ``.json.xz`` as text (utf-8)."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "", f"file not found: {path}")
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8")
    return open(path, "r", encoding="utf-8")


def read_json(path: str | Path) -> Any:
    """Parse a whole JSON file; a syntax error becomes a DataError with line and column."""
    with open_text(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise DataError(path, f"line {e.lineno} column {e.colno}", f"invalid JSON: {e.msg}") from None
        except (lzma.LZMAError, EOFError) as e:
            raise DataError(path, "", f"corrupt xz stream: {e}") from None
        except UnicodeDecodeError as e:
            raise DataError(path, f"byte {e.start}", f"not UTF-8 text ({e.reason})") from None


def iter_jsonl(path: str | Path, label: str = "") -> Iterator[tuple[str, Any]]:
    """(where, record) for each non-blank line of a JSON Lines file; where = "[label ]line N", the place a
    DataError about that record names. A line that is not JSON is a DataError naming it."""
    with open_text(path) as f:
        for n, line in enumerate(f, start=1):
            where = f"{label} line {n}" if label else f"line {n}"
            if not line.strip():
                continue
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(path, where, f"invalid JSON: {e.msg}") from None


def iter_json_array(path: str | Path) -> Iterator[Any]:
    """Yield the elements of a top-level JSON array one by one, reading the file in 1 MiB chunks."""
    dec = json.JSONDecoder()
    with open_text(path) as f:
        buf = ""
        pos = 0
        consumed = 0  # characters dropped from the front of buf, for error positions
        eof = False

        def fill() -> bool:
            nonlocal buf, pos, consumed, eof
            if eof:
                return False
            try:
                chunk = f.read(_CHUNK)
            except UnicodeDecodeError as e:
                raise DataError(path, "", f"not UTF-8 text ({e.reason})") from None
            except (lzma.LZMAError, EOFError) as e:
                raise DataError(path, "", f"corrupt xz stream: {e}") from None
            if not chunk:
                eof = True
                return False
            consumed += pos
            buf = buf[pos:] + chunk
            pos = 0
            return True

        def skip_ws() -> None:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                if pos < len(buf) or not fill():
                    return

        skip_ws()
        if pos >= len(buf) or buf[pos] != "[":
            raise DataError(path, "", "expected a JSON array at the top level")
        pos += 1
        index = 0
        while True:
            skip_ws()
            if pos >= len(buf):
                raise DataError(path, f"element {index}", "file ends inside the top-level array")
            if buf[pos] == "]":
                return
            if index > 0:
                if buf[pos] != ",":
                    raise DataError(path, f"element {index}", f"expected ',' at character {consumed + pos}")
                pos += 1
                skip_ws()
            while True:
                try:
                    obj, end = dec.raw_decode(buf, pos)
                    # a number at the buffer's end may continue in the next chunk
                    if end >= len(buf) and not eof and fill():
                        continue
                    break
                except json.JSONDecodeError as e:
                    if fill():
                        continue
                    raise DataError(path, f"element {index}",
                                    f"invalid JSON: {e.msg} at character {consumed + e.pos}") from None
            pos = end
            yield obj
            index += 1
