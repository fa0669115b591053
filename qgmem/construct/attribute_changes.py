"""Changes of an attribute English names directly (for construct/turn_changes.py): partner status, home, job and the
shift worked.

A turn that tells a person's status (single, seeing someone, engaged, married), home or workplace other than the one
that person last told in an earlier session links that turn, whatever words the two share: "I'm single" -> "we've
been together since March", "I rent a bedsit on Quayle Road" -> "we've moved into a flat in Hollerby", "I fix buses
at the Stanway depot" -> "I've started an apprenticeship with Pendry and Daughters", "I'm on nights" -> "the ward
put me on days" (construct/work_shift.py). The same holds for a third
person's ("My dad's still at the boatyard in Tolverne" -> "How's your dad?" "He retired at the end of May."): who
they are comes from the words of the dialogue (construct/holders.py), keyed across sessions by "<speaker>'s dad" or
a name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from qgmem.construct.change_targets import Turn, best_unit, change_link
from qgmem.construct.holders import Persons
from qgmem.construct.named_state import merge
from qgmem.construct.occupation import job, jobs_of_others
from qgmem.construct.partner_status import partner_status, statuses_of_others
from qgmem.construct.residence import home, homes_of_others
from qgmem.construct.work_shift import shifts_of_others, work_shift
from qgmem.types import AtomicUnit


class _Value(Protocol):
    def differs(self, earlier: Any) -> bool: ...


Others = Callable[[str], "tuple[tuple[tuple[str, ...], int, Any], ...]"]
# attributes whose values English names directly, read from a whole turn: a change needs no shared word. Each
# is read of the speaker or the one spoken to, and of third persons (construct/holders.py says who they are). A
# change of partner or home outranks a link by shared words ("I moved out in March. I'm in Lynwater now" does not
# change what "March" names); a job does not: a rota told with one ("I work dinners now, three till eleven") is a
# change of the schedule its words name
_ATTRIBUTES: tuple[tuple[Callable[[str], _Value | None], Others, Callable[[list[Any]], Any], bool], ...] = (
    (partner_status, statuses_of_others, lambda values: values[-1], True),
    (home, homes_of_others, merge, True),
    (job, jobs_of_others, merge, False),
    (work_shift, shifts_of_others, lambda values: values[-1], False),
)


def attribute_links(units: list[AtomicUnit], order: list[Turn], person: Mapping[str, str],
                    turn_texts: Mapping[str, str], updates: Mapping[int, set[int]],
                    said: Mapping[int, frozenset[str]]) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """Changes of partner status, home, job and shift (module docstring): a turn whose value for a person differs from
    the latest value of that person told in an earlier session links that turn's unit, whatever words the two share
    ("I'm single" -> "we've been together since March"; "My dad's at the boatyard" -> "How's your dad?" "He retired
    in May."). Also the units whose link outranks one by shared words."""
    out: dict[int, tuple[int, str]] = {}
    strong: set[int] = set()
    persons = Persons(turn_texts, {t.id: t.speaker for t in order})
    for read, read_others, combine, outranks in _ATTRIBUTES:
        told: dict[str, list[tuple[str, int, _Value]]] = {}  # person key -> (session, turn position, value), in order
        for k, t in enumerate(order):
            values: dict[frozenset[str], list[Any]] = {}
            own = read(turn_texts[t.id])
            if own is not None:
                values[frozenset({person[t.id]})] = [own]
            for words, at, value in read_others(turn_texts[t.id]):
                who = persons.resolve(t.id, words, at)
                if who is not None:
                    values.setdefault(who, []).append(value)
            for who, got in values.items():
                value = combine(got)
                said_before = sorted((x for key in who for x in told.get(key, [])), key=lambda x: x[1])
                # a speaker tells a change once a session ("we relocated to Melbourne" ... "our new house has a
                # lemon tree"); the person's own word after a friend's report ("you're going out with ...") counts
                again = any(x[0] == t.session and order[x[1]].speaker == t.speaker for x in said_before)
                # the latest of another session that a change can be of (a weak job without a name is none)
                earlier = next((x for x in reversed(said_before)
                                if x[0] != t.session and getattr(x[2], "changeable", True)), None)
                for key in who:
                    told.setdefault(key, []).append((t.session, k, value))
                free = [r for r in t.units if r not in updates]
                if earlier is not None and not again and free and value.differs(earlier[2]):
                    target = best_unit(units, order[earlier[1]].units, t.words)
                    for i, got_link in change_link(units, t, free, target, updates, said).items():
                        if i not in out:
                            out[i] = got_link
                            strong |= {i} if outranks else set()
    return out, strong
