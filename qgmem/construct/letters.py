"""Letter classes for the readers' regular expressions, in every Latin, Greek and Cyrillic alphabet.

Why: Python's `re` has no `\\p{Lu}`, and the readers' `[A-Z]` and `[a-z]+` missed the capitals of most of the
world's names ("Łucja", "Ōtaki", "Émile") and the rest of many more ("Sigrún and I", "Zoë"): a partner, a home or
a firm named in another alphabet than English's went unread. The classes are built once from `str.isupper` and
`str.islower`, so no list of letters is kept by hand.
"""

from __future__ import annotations

from collections.abc import Callable

# Basic Latin to Cyrillic Supplement, and Latin Extended Additional (Vietnamese, Welsh ŵ, ...)
_BLOCKS = (range(0x0000, 0x0530), range(0x1E00, 0x1F00))


def _class_body(keep: Callable[[str], bool]) -> str:
    """The body of a character class holding every character of the blocks that `keep` accepts, as ranges."""
    codes = [c for block in _BLOCKS for c in block if keep(chr(c))]
    parts, start = [], codes[0]
    for prev, cur in zip(codes, codes[1:] + [-1]):
        if cur != prev + 1:
            parts.append(chr(start) if start == prev else f"{chr(start)}-{chr(prev)}")
            start = cur
    return "".join(parts)


UPPER = _class_body(str.isupper)  # inside brackets: rf"[{UPPER}]" is any capital letter
LOWER = _class_body(str.islower)  # rf"[{LOWER}]+" is the rest of a name
CAP = f"[{UPPER}]"  # a capital letter
NAME = f"[{UPPER}][{LOWER}]+"  # a capitalised word: "Sigrún", "Łucja"
LETTER = r"[^\W\d_]"  # a letter of any script
ALNUM = r"[^\W_]"  # a letter or digit of any script
