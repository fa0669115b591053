"""One error type for bad benchmark data, whose message says exactly where the problem is.

A user with a corrupted or hand-edited file should learn the file, the record and the field from the
message alone, e.g. ``locomo10.json: sample 3 (conv-43), qa 17: field 'question' missing``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qgmem.errors import UserError


class DataError(ValueError, UserError):
    """A benchmark file is missing, unreadable or does not follow its documented schema."""

    def __init__(self, file: str | Path, where: str, problem: str):
        self.file = Path(file).name if str(file) else "<data>"
        self.where = where
        self.problem = problem
        loc = f"{self.file}: {where}: " if where else f"{self.file}: "
        super().__init__(loc + problem)


class Ctx:
    """Where we are inside a file (``sample 3 (conv-43), qa 17``); builds DataErrors and checks fields."""

    def __init__(self, file: str | Path, *parts: str):
        self.file = file
        self.parts = [p for p in parts if p]

    def sub(self, part: str) -> "Ctx":
        return Ctx(self.file, *self.parts, part)

    @property
    def where(self) -> str:
        return ", ".join(self.parts)

    def error(self, problem: str) -> DataError:
        return DataError(self.file, self.where, problem)

    def field(self, obj: Any, key: str, types: type | tuple[type, ...] | None = None, *,
              optional: bool = False, default: Any = None) -> Any:
        """``obj[key]`` checked for presence and type; raises DataError naming file, record and field."""
        if not isinstance(obj, dict):
            raise self.error(f"expected an object with field {key!r}, got {type(obj).__name__}")
        if key not in obj:
            if optional:
                return default
            raise self.error(f"field {key!r} missing")
        if obj[key] is None and not optional:
            raise self.error(f"field {key!r} is null")
        val = obj[key]
        if val is None:
            return default
        bad_bool = isinstance(val, bool) and types is not None and bool not in _as_tuple(types)
        if types is not None and (not isinstance(val, types) or bad_bool):
            want = types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
            raise self.error(f"field {key!r} should be {want}, got {type(val).__name__}")
        return val


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)
