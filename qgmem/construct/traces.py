"""Dynamic memory traces (QGMem §III-A2): units of one evolving state of one subject, in memory-time order.

Grouping keys units by (subject, state class): "Priya works at Larkspur Books", "Priya quit Larkspur Books" and
"Priya works at Brightwater Bakery now" form one employment trace. The class comes from the word table
(construct/state_table.py): the object's head word, else the relation, else, for a relation that only ends or
changes a state ("quit Acme", "switched it"), the subject's latest earlier unit whose object names the same thing;
then from the claim's structure (`refine`, cues of construct/state_cues.py): a role at an organisation ("a line cook
at Saffron Row") is an employment, "X's <noun> is <Name>" a role held by that person, a recurring time told by a
light verb a schedule, a classless claim about a time after the utterance that replaces something ("instead") a
plan; "no longer" ends the relation's own state and a marker ("now", "instead") makes a value a change. Relations
outside the table form event traces keyed by (subject, lemma), split into groups whose objects share a word (a
trajectory is about one thing: "went camping" twice, not every "went"). Units whose relation is "say", whose subject
is an unresolved pronoun or not a named subject (a name, a speaker, a speaker's "user's therapist"), and light verbs
("be", "have") without a state class join no trace of their own.

A change told across subjects or classes joins the trace of the state it changes instead (construct/state_links.py,
in dialogue order): the thing a change verb acts on ("the centre moved the class to Thursdays"), a role holder who
left ("Mrs. X retired"), a new holder told by the counterpart ("I see a new therapist now"), an end that names an
earlier claim ("I sold the Fiat", "I gave my goldfish to my nephew"), a classless claim with a marker that shares
the value's words ("I'm the museum's head of collections now"). A change that no triple of its turn carries ("I
handed in my notice at the ferry terminal" read as (X | do | it)) is read from the turn's words, or from the partner
status it tells ("I'm single" -> "we've been together since March"; construct/turn_changes.py). Such a link
supersedes its target (and, where the target tells the state again, "We're still above the bakery", its first
telling), and the change is kept after it in the trace whatever time it is about.

Roles (rule path), in memory time (fact time, else utterance time, else dialogue order; a fact time after the
utterance, a plan, counts from when it was said). An *end* ("quit", "cancel", a negated relation) or a *change*
("promote", "reschedule", "move") is an update of the states whose object it names (else of the current state). A
plain value of a one-value class (employment, residence, relationship, schedule) whose object shares too little with
the current state (overlap coefficient of object words < `update_threshold`; for a schedule, of its time words) is
an update and supersedes it; a compatible one is a supplement, and so is a remark: a relation outside the table
whose object names the state ("I love my job"), or a state without a value ("I'm working hard"). In many-value
classes (membership, ownership, plans) new values coexist: supplements, unless they take up something that had ended
or replace ("instead"). Event traces only accumulate, except that a negation supersedes the earlier units it names
("not going to the concert any more"). The latest member that states a value (not a remark) is the latest supported
state. Groups and traces do not depend on the order units are listed in, beyond dialogue order for units of the same
time (the store keeps units in conversation order).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from qgmem.construct.change_probe import ProbeReadings, probe_links
from qgmem.construct.state_cues import Cues, read_cues
from qgmem.construct.state_links import (SCHEDULE, Facts, Linker, ends_ownership, named_subject, read_facts,
                                         speakers_of, told_ahead)
from qgmem.construct.state_table import Reading, StateTable, overlap
from qgmem.construct.turn_changes import turn_links
from qgmem.types import AtomicUnit, MemoryTrace
from qgmem.words import load_words

Role = Literal["origin", "update", "supplement"]
RolesFn = Callable[[int, list[int]], "tuple[list[Role], set[int]] | None"]
TraceFields = tuple["str | None", "Role | None", bool]  # (trace_id, trace_role, superseded)
# rule roles of the groups of one grouping, by (subject, key, members, kinds, links)
RolesMemo = dict[tuple[str, str, tuple[int, ...], tuple[str, ...], tuple[tuple[int, int], ...]],
                 tuple[list[Role], set[int]]]
NO_TRACE: TraceFields = (None, None, False)

# a unit whose subject is an unresolved pronoun cannot be placed in anyone's trajectory
UNRESOLVED_SUBJECTS = load_words("unresolved_subjects")
EVENT = "event:"  # prefix of an event group's key (the relation lemma follows)


@dataclass
class TraceConfig:
    min_size: int = 2
    update_threshold: float = 0.5  # object-word overlap below this = another value = an update
    max_size: int = 50  # a larger group is split into chronological chunks (keeps trajectories readable)
    turn_links: bool = True  # a turn that tells a change no triple of it carries links the state it names
    # the learned reading of turns (construct/change_probe.py) links changes the rules left; None or "" = rules only
    change_probe: str | None = "checkpoints/change-probe"


@dataclass(frozen=True)
class Group:
    """One trace to be: members in memory-time order, and how their roles are decided."""

    subject: str  # the subject key
    key: str  # state class, or EVENT + relation lemma
    members: list[int]
    kinds: list[str]  # per member: "state" | "end" | "change" | "note"
    links: tuple[tuple[int, int], ...] = ()  # (member, the earlier member whose state it changes)

    @property
    def is_event(self) -> bool:
        return self.key.startswith(EVENT)


def memory_time(u: AtomicUnit) -> str:
    """Fact time if known and not after the utterance (a plan counts from when it was said), else
    utterance time; "9999" when neither is known (dialogue order decides)."""
    fact, said = (u.fact_time_start or "")[:10], (u.utterance_time or "")[:10]
    if fact and (not said or fact <= said):
        return fact
    return said or fact or "9999"


def memory_time_key(u: AtomicUnit, position: int) -> tuple[str, int]:
    return (memory_time(u), position)


def traceable(u: AtomicUnit, table: StateTable, speakers: frozenset[str] = frozenset()) -> bool:
    """A named subject (a name, a speaker or a speaker's "user's therapist"; not a pronoun, not an
    activity) and a relation other than "say"."""
    subj = table.subject_key(u.subject)
    rel = u.relation.strip().lower()
    named = named_subject(u.subject, subj, speakers)
    return bool(subj) and subj not in UNRESOLVED_SUBJECTS and named and rel not in ("", "say")


def refine(r: Reading, u: AtomicUnit, c: Cues, values: frozenset[str], table: StateTable) -> Reading:
    """A reading with what the claim's structure adds (construct/state_cues.py): a role at an
    organisation is an employment, "X's <noun> is <Name>" a role held by that person; a recurring time
    told by a light verb, or a job without a value ("I work weekends"), is a schedule; a classless claim
    about a time after the utterance that replaces something ("instead") is a plan; "no longer" ends the
    relation's state; a marker ("now", "instead") makes a value of its class a change."""
    cls, kind = r.cls, r.kind
    if (cls is None or kind == "note" or cls == "ownership") and (c.role_at or (c.works_at and not r.light)):
        cls, kind = "employment", "state"  # "I drive a van for <a firm>", "I sell cars at <a firm>": a job
    if cls is None and u.relation.strip().lower() == "be" and "'s " in u.subject and _is_name(u.object):
        cls, kind = "relationship", "state"
    if c.recurring and ((cls is None and r.light) or (cls == "employment" and not values and kind != "end")):
        cls, kind = "schedule", ("state" if kind == "note" and c.times else kind)
    if cls is None and kind == "state" and c.replaces and told_ahead(u):  # "we're going to Sicily in May instead"
        cls = "plans"
    if cls is not None and c.ends:
        kind = "end"
    if cls is not None and kind == "state" and (c.replaces or (c.now and table.is_single(cls))):
        kind = "change"
    if (cls, kind) == (r.cls, r.kind):
        return r
    return dataclasses.replace(r, cls=cls, kind=kind, light=r.light and cls is None, from_object=r.from_object
                               and cls is None)


def _is_name(obj: str) -> bool:
    """A person's name as a copula's value ("Mr. Brandt, a former player", "Dr. Weiland"): its words up to
    a comma all capitalised."""
    head = obj.split(",", 1)[0].split()
    return bool(head) and len(head) <= 4 and all(w[:1].isupper() for w in head)


def object_text(u: AtomicUnit) -> str:
    return u.object.strip()


def _borrowed_key(i: int, earlier: list[tuple[int, str]], words: list[frozenset[str]], thr: float) -> str | None:
    """The group key of the latest earlier unit of the subject whose object names the same thing."""
    return next((key for j, key in reversed(earlier) if overlap(words[i], words[j]) >= thr), None)


def said_key(u: AtomicUnit, position: int) -> tuple[str, int]:
    """Dialogue order: a change is told after the state it changes, whatever times the two are about."""
    return ((u.utterance_time or "9999")[:10], position)


def group_traces(units: list[AtomicUnit], cfg: TraceConfig, table: StateTable | None = None,
                 turn_texts: Mapping[str, str] | None = None, roles: RolesMemo | None = None,
                 words: list[frozenset[str]] | None = None, turn_speakers: Mapping[str, str] | None = None,
                 probe: ProbeReadings | None = None) -> list[Group]:
    """Groups of >= `min_size` units (members in memory-time order), in a canonical order.

    A unit that names the earlier state it changes across subjects or classes (construct/state_links.py, in
    dialogue order) joins that state's trace; every other unit is placed by its subject and class. With
    `turn_texts` (turn id -> text), a turn that tells a change its updates so far do not cover then links the
    earlier-session state its words name (construct/turn_changes.py; an update of only the other speaker's words is
    moved there), and the units are placed again. `roles` keeps the rule roles this computes of each group, for
    `build_traces` to reuse; `words`: each unit's object words, when the caller has them."""
    table = table or StateTable.default()
    speakers = speakers_of(units)
    facts = [read_facts(u, table, speakers) for u in units]
    words = words if words is not None else [table.object_words(object_text(u)) for u in units]
    readings: list[Reading | None] = [
        refine(table.read(u.relation, object_text(u), u.subject), u, f.cues, w, table)
        if traceable(u, table, speakers) else None for u, f, w in zip(units, facts, words)]
    linker = Linker(units, facts, readings, table, cfg.update_threshold)
    links: dict[int, tuple[int, str]] = {}  # unit -> (the earlier unit whose state it changes, its kind)
    for i in sorted(range(len(units)), key=lambda i: said_key(units[i], i)):
        got = linker.link(i)
        if got is not None:
            links[i] = got
        linker.add(i)
    groups = _place(units, cfg, facts, words, readings, links)
    if turn_texts and cfg.turn_links:
        updates: dict[int, set[int]] = {}  # update -> the members of its trace it supersedes
        for g in groups:
            got, sup = _rule_roles_of(units, g, words, table, cfg, roles)
            updates.update({m: sup & set(g.members) for m, role in zip(g.members, got) if role == "update"})
        extra = {i: got for i, got in turn_links(units, turn_texts, updates, table=table,
                                                 speakers=turn_speakers).items()
                 if i not in links or i in updates or links[i] == (got[0], "note")}  # a turn telling a change of
                # the state a remark names makes it a change ("I dance salsa on Tuesdays now" of the Thursday class)
        if probe is not None:  # a state the rules already saw change is not the probe's: its successor is
            changed = {j for j, _ in [*links.values(), *extra.values()]}.union(*updates.values())
            extra.update(probe_links(units, probe, set(links) | set(extra) | set(updates), changed))
        if extra:
            groups = _place(units, cfg, facts, words, readings, {**links, **extra})
    return groups


def _place(units: list[AtomicUnit], cfg: TraceConfig, facts: list[Facts], words: list[frozenset[str]],
           readings: list[Reading | None], links: dict[int, tuple[int, str]]) -> list[Group]:
    """Groups from the units' readings and the links of changes to the states they change."""
    group_of: dict[int, tuple[str, str]] = {}
    kinds = {i: r.kind for i, r in enumerate(readings) if r is not None}
    earlier: dict[str, list[tuple[int, str]]] = {}  # subject -> (unit, group key) so far, in memory time
    for i in sorted(range(len(units)), key=lambda i: memory_time_key(units[i], i)):
        r = readings[i]
        if r is None or i in links:
            continue
        subj = facts[i].subject
        key = r.cls
        if key is None and r.from_object and r.kind != "state":
            key = _borrowed_key(i, earlier.get(subj, []), words, cfg.update_threshold)
        if key is None and r.light:
            continue
        group_of[i] = (subj, key or EVENT + r.lemma)
        earlier.setdefault(subj, []).append((i, group_of[i][1]))
    for i in sorted(links, key=lambda i: said_key(units[i], i)):  # a target is said first: placed first
        j, kinds[i] = links[i]
        if j not in group_of:
            group_of[j] = (facts[j].subject, _linked_key(readings[j], facts[j].cues, readings[i], facts[i].cues))
            kinds.setdefault(j, "state")
        group_of[i] = group_of[j]
    order = {i: memory_time_key(units[i], i) for i in group_of}
    for i in sorted(links, key=lambda i: said_key(units[i], i)):  # a change comes after what it changes
        j = links[i][0]
        if order[i] < order[j]:
            order[i] = (order[j][0], i)
    buckets: dict[tuple[str, str], list[int]] = {}
    for i in sorted(group_of, key=order.__getitem__):
        buckets.setdefault(group_of[i], []).append(i)
    targets = {i: j for i, (j, _) in links.items()}
    groups: list[Group] = []
    for (subj, key), members in buckets.items():
        parts = _word_components(members, words, targets) if key.startswith(EVENT) else [members]
        for part in parts:
            for s in range(0, len(part), cfg.max_size):
                chunk = part[s:s + cfg.max_size]
                if len(chunk) >= cfg.min_size:
                    groups.append(Group(subj, key, chunk, [kinds[m] for m in chunk],
                                        tuple((m, targets[m]) for m in chunk if targets.get(m) in chunk)))
    groups.sort(key=lambda g: (memory_time(units[g.members[0]]), g.subject, g.key, units[g.members[0]].id))
    return groups


def _linked_key(r: Reading | None, target: Cues, by: Reading | None, change: Cues) -> str:
    """The class of a state first placed in a trace by a later change that names it: its own, else an
    ownership when the change ends one or gives the thing away ("I sold it" after "I've had the Vespa"),
    else a schedule when it states a recurring time, else a plan."""
    if r is not None and r.cls is not None:
        return r.cls
    if ends_ownership(by, change):
        return "ownership"
    return SCHEDULE if target.recurring else "plans"


def _word_components(members: list[int], words: list[frozenset[str]], links: dict[int, int] | None = None
                     ) -> list[list[int]]:
    """Members (kept in order) split into groups connected by a shared object word or a link."""
    parent = {m: m for m in members}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first_with: dict[str, int] = {}
    for m in members:
        for w in sorted(words[m]):
            o = first_with.setdefault(w, m)
            if o != m:
                parent[find(m)] = find(o)
    for m, j in (links or {}).items():
        if m in parent and j in parent:
            parent[find(m)] = find(j)
    parts: dict[int, list[int]] = {}
    for m in members:
        parts.setdefault(find(m), []).append(m)
    return list(parts.values())


def rule_roles(group: Group, words: Sequence[frozenset[str]] | Mapping[int, frozenset[str]], single: bool,
               cfg: TraceConfig) -> tuple[list[Role], set[int]]:
    """Roles per member and the members superseded by a later update (see the module docstring)."""
    members = group.members
    kinds = dict(zip(members, group.kinds))
    roles: list[Role] = ["origin"]
    active = [members[0]]
    superseded: set[int] = set()
    linked = dict(group.links)
    for m in members[1:]:
        kind = kinds[m]
        near = [a for a in active if overlap(words[m], words[a]) >= cfg.update_threshold]
        ended = [a for a in near if kinds[a] == "end"]
        if linked.get(m) in active and kind != "note":  # a change that names the state it changes
            t = linked[m]  # and what it notes, when it is the state told again (construct/turn_changes.py)
            targets = [t, *(a for a in near if a != t and kinds[a] != "end"), *(
                [linked[t]] if kinds[t] == "note" and linked.get(t) in active else [])]
        elif group.is_event:
            targets = near if kind == "end" else []
        elif kind in ("end", "change"):
            targets = near or (list(active) if single else active[-1:])
        elif kind == "note":  # a remark on the state ("I love my job") replaces nothing
            targets = []
        elif single:  # a value compatible with a current (not ended) state refines it
            targets = [] if any(kinds[a] != "end" for a in near) else list(active)
        else:
            targets = ended
        if targets:
            roles.append("update")
            superseded.update(targets)
            active = [a for a in active if a not in targets]
        else:
            roles.append("supplement")
        active.append(m)
    return roles, superseded


def build_traces(units: list[AtomicUnit], cfg: TraceConfig, roles_fn: RolesFn | None = None,
                 table: StateTable | None = None, turn_texts: Mapping[str, str] | None = None,
                 turn_speakers: Mapping[str, str] | None = None, probe: ProbeReadings | None = None
                 ) -> tuple[list[AtomicUnit], list[MemoryTrace]]:
    """Traces of one namespace and the units with `trace_id`/`trace_role`/`superseded` set (a unit
    whose trace fields are already right is returned as it is, not copied).

    `roles_fn(trace_index, members) -> (roles, superseded) | None` may decide roles (the LLM path);
    None falls back to the rule. `turn_texts` (turn id -> text) lets a turn's own words link a change
    (`group_traces`); `turn_speakers` (turn id -> speaker) says who asked a question that kept no unit. Trace ids
    are `<namespace>/t<i>` in the canonical group order.
    """
    if not units:
        return [], []
    table = table or StateTable.default()
    ns = units[0].namespace
    memo: RolesMemo = {}
    words = [table.object_words(object_text(u)) for u in units]
    groups = group_traces(units, cfg, table, turn_texts, memo, words, turn_speakers, probe)
    fields: dict[int, TraceFields] = {}
    traces: list[MemoryTrace] = []
    for ti, g in enumerate(groups):
        decided = roles_fn(ti, g.members) if roles_fn is not None else None
        if decided is None:
            decided = _rule_roles_of(units, g, words, table, cfg, memo)
        roles, sup = decided
        tid = f"{ns}/t{ti}"
        for m, role in zip(g.members, roles):
            fields[m] = (tid, role, m in sup)
        head = units[g.members[0]]
        stated = [m for m, k in zip(g.members, g.kinds) if k != "note"] or g.members
        traces.append(MemoryTrace(
            id=tid, namespace=ns, subject=head.subject, relation=head.relation if g.is_event else g.key,
            unit_ids=[units[m].id for m in g.members], roles=list(roles), latest_unit_id=units[stated[-1]].id,
        ))
    return [with_trace(u, fields.get(i, NO_TRACE)) for i, u in enumerate(units)], traces


def _rule_roles_of(units: list[AtomicUnit], g: Group, words: list[frozenset[str]], table: StateTable,
                   cfg: TraceConfig, memo: RolesMemo | None = None) -> tuple[list[Role], set[int]]:
    """The rule roles of a group; with `memo`, those of a group seen before in this grouping are reused (the
    roles read only the group and its members' words, which one grouping computes once)."""
    key = (g.subject, g.key, tuple(g.members), tuple(g.kinds), g.links)
    got = memo.get(key) if memo is not None else None
    if got is None:
        got = rule_roles(g, _schedule_words(units, g) if g.key == SCHEDULE else words,
                         not g.is_event and table.is_single(g.key), cfg)
        if memo is not None:
            memo[key] = got
    return list(got[0]), set(got[1])


def _schedule_words(units: list[AtomicUnit], g: Group) -> defaultdict[int, frozenset[str]]:
    """A schedule's value is its time ("Tuesday evenings", "nine to five"), not the activity's words."""
    out: defaultdict[int, frozenset[str]] = defaultdict(frozenset)
    for m in g.members:
        u = units[m]
        out[m] = read_cues(u.text, u.speaker, u.relation, u.object).times
    return out


def with_trace(u: AtomicUnit, f: TraceFields) -> AtomicUnit:
    """`u` with its trace fields set to `f`; `u` itself when they already are. When a namespace grows,
    most units keep their trace, and copying every unit would cost more than grouping them."""
    if (u.trace_id, u.trace_role, u.superseded) == f:
        return u
    return dataclasses.replace(u, trace_id=f[0], trace_role=f[1], superseded=f[2])
