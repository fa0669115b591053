"""The graph-token positive control: a generated task whose answer is in the graph, so a working
encoder/projector must carry it into the frozen LLM.

Each conversation is about several people; each person has a home and a workplace that change once
(an origin and a later update) and a pet that does not. Every question asks one person's current home
or workplace. Names of people and values of the test split come from pools disjoint from the train
split's (and the dev split's from both), so a model that memorised training names gains nothing.

The examples go through the package's own path from memory units on: `AtomicUnit`s -> `build_traces`
(the trace code marks the old state superseded) -> a `WorkingMemory` (the asked person's units and some
of other people's, in a seeded order) -> `build_example` (the `LocalGraph` with the configured sentence
embedder's features, rank and time features) -> `GraphExample`. Each question comes in two forms:

- **graph only**: no memory text; the answer exists only in the graph (with the old state beside it);
- **conflict**: the memory text shows the old and the new state in a seeded order, without dates or
  update marks; only the graph's trace (superseded flag, time feature) says which is current.

Everything is a function of the config's seed: the same config gives the same examples, byte for byte.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field

from qgmem.answer import serialize_working_memory
from qgmem.construct.traces import TraceConfig, build_traces
from qgmem.graph.local_graph import Embed, GraphConfig
from qgmem.model.collate import GraphExample
from qgmem.model.inputs import InputConfig, build_example
from qgmem.types import AtomicUnit, MemoryItem, Question, WorkingMemory

SPLITS = ("train", "dev", "test")
# value pools: common words that most BPE vocabularies hold as one token after a space
CITIES = (
    "Paris Rome Oslo Lisbon Madrid Berlin Vienna Prague Dublin Athens Cairo Tokyo Seoul Delhi Havana Boston "
    "Denver Seattle Chicago Houston Dallas Miami Toronto Moscow Warsaw Budapest Munich Milan Naples Venice "
    "Geneva Zurich Brussels Amsterdam London Manchester Liverpool Glasgow Edinburgh Bristol Leeds Oxford "
    "Cambridge Nairobi Tunis Dubai Tehran Baghdad Kabul Manila Beijing Shanghai Atlanta Portland Detroit "
    "Vancouver Montreal Melbourne Auckland Stockholm Helsinki Copenhagen Barcelona Hamburg Frankfurt Istanbul "
    "Mumbai Singapore Kyoto Memphis Pittsburgh Baltimore Cleveland Ottawa Calgary Belfast Cardiff Lyon Kiev "
    "Cologne Dresden Bologna Bern Basel"
).split()
WORKPLACES = (
    "bakery hospital library bank school museum factory hotel airport pharmacy garage farm zoo theater clinic "
    "restaurant bookstore studio newspaper university church prison laboratory warehouse supermarket "
    "station kitchen casino vineyard harbor market embassy stadium circus opera nursery pub"
).split()
PETS = ("dog cat parrot rabbit horse goat snake lizard pig cow duck chicken goldfish mouse rat owl sheep donkey "
        "tortoise frog spider pony crab eagle fox wolf bear monkey camel deer").split()
ONSETS = tuple("bdfgklmnprstvz")
VOWELS = tuple("aeiou")
# the two state relations (relation, question template, pool) and the static fact
STATES = (("lives in", "Where does {p} live now?", "cities"), ("works at", "Where does {p} work now?", "workplaces"))
STATIC = ("owns", "pets")
FRACTIONS = {"train": 0.5, "dev": 0.2, "test": 0.3}  # of each pool


@dataclass
class ControlConfig:
    seed: int = 0
    conversations: dict[str, int] = field(default_factory=lambda: {"train": 50, "dev": 4, "test": 8})
    people: int = 4  # per conversation; every person gets one question per state relation
    distractors: int = 5  # units of other people in each question's working memory
    max_edges: int = 10  # of the local graph (the asked person's 5 units + the distractors fit)
    graph_only_fraction: float = 0.5  # of train/dev questions stored graph-only (the rest in the conflict form)

    def __post_init__(self) -> None:
        if set(self.conversations) != set(SPLITS) or any(int(n) < 1 for n in self.conversations.values()):
            raise ValueError(f"ControlConfig.conversations needs a positive count for each of {SPLITS}, "
                             f"got {self.conversations}")
        if self.people < 2:
            raise ValueError(f"ControlConfig.people must be >= 2 (distractors come from other people), "
                             f"got {self.people}")
        if not 0.0 <= self.graph_only_fraction <= 1.0:
            raise ValueError(f"ControlConfig.graph_only_fraction must be in [0, 1], got {self.graph_only_fraction}")


@dataclass
class Pools:
    people: list[str]
    cities: list[str]
    workplaces: list[str]
    pets: list[str]


@dataclass
class ControlExample:
    """One question in both forms, with what the checks need to know about it."""

    id: str
    split: str
    question: Question
    answer: str  # the current state
    old: str  # the superseded state (shown beside the answer in the conflict text)
    memory: WorkingMemory  # what the graph was built from
    graph_only: GraphExample
    conflict: GraphExample


def invented_names(seed: int, n: int) -> list[str]:
    """`n` distinct three-syllable names (consonant-vowel syllables) that no word list or benchmark holds."""
    rng = random.Random(f"{seed}:names")
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(3)).capitalize())
    return sorted(out)


def _split(pool: list[str], seed: int, what: str) -> dict[str, list[str]]:
    items = sorted(set(pool))
    random.Random(f"{seed}:{what}").shuffle(items)
    a = int(len(items) * FRACTIONS["train"])
    b = a + int(len(items) * FRACTIONS["dev"])
    return {"train": items[:a], "dev": items[a:b], "test": items[b:]}


def split_pools(cfg: ControlConfig) -> dict[str, Pools]:
    """Per split, its own names and values: disjoint across splits for every pool."""
    n_people = 4 * cfg.people * max(cfg.conversations.values())
    parts = {k: _split(v, cfg.seed, k) for k, v in (("people", invented_names(cfg.seed, n_people)),
                                                     ("cities", CITIES), ("workplaces", WORKPLACES), ("pets", PETS))}
    return {s: Pools(**{k: parts[k][s] for k in parts}) for s in SPLITS}


def _distinct_people(rng: random.Random, names: list[str], n: int) -> list[str]:
    """`n` names with pairwise different first syllables (so no two share their leading word piece)."""
    chosen: list[str] = []
    for name in rng.sample(names, len(names)):
        if all(name[:2] != c[:2] for c in chosen):
            chosen.append(name)
        if len(chosen) == n:
            return chosen
    raise ValueError(f"pool of {len(names)} names cannot give {n} people with distinct first syllables")


def conversation_units(conv_id: str, pools: Pools, people: int, rng: random.Random) -> list[AtomicUnit]:
    """Every person's units (origin states, pet, later updates), traced by the package's trace builder."""
    units: list[AtomicUnit] = []

    def unit(person: str, relation: str, obj: str, month: int, session: str) -> None:
        j = len(units)
        tid = f"{session}:{j + 1}"
        units.append(AtomicUnit(f"{conv_id}-u{j}", conv_id, session, f"{person} {relation} {obj}", tid, tid, [tid],
                                person, person, relation, obj, utterance_time=f"2023-{month:02d}-{1 + j % 27:02d}"))

    names = _distinct_people(rng, pools.people, people)
    picks = {p: {rel: rng.sample(getattr(pools, pool), 2) for rel, _, pool in STATES} for p in names}
    for p in names:
        for rel, _, _ in STATES:
            unit(p, rel, picks[p][rel][0], rng.randint(1, 4), "S1")
        unit(p, STATIC[0], rng.choice(getattr(pools, STATIC[1])), rng.randint(1, 8), "S1")
    for p in names:
        for rel, _, _ in STATES:
            unit(p, rel, picks[p][rel][1], rng.randint(6, 11), "S2")
    traced, _ = build_traces(units, TraceConfig())
    return traced


def _items(units: list[AtomicUnit]) -> list[MemoryItem]:
    return [MemoryItem(f"M{i + 1}", "unit", u.text, list(u.turn_ids), unit=u) for i, u in enumerate(units)]


def conflict_text(old: AtomicUnit, new: AtomicUnit, question: Question, rng: random.Random) -> str:
    """Both states as memory entries in a seeded order, without dates or update marks."""
    plain = [dataclasses.replace(u, superseded=False, utterance_time=None, fact_time_start=None, trace_role=None)
             for u in (old, new)]
    rng.shuffle(plain)
    return serialize_working_memory(WorkingMemory(question, _items(plain), "control"), with_graph=False)


def conversation_examples(conv_id: str, split: str, units: list[AtomicUnit], cfg: ControlConfig, embed: Embed,
                          embed_dim: int | None, rng: random.Random) -> list[ControlExample]:
    """One example per (person, state relation) of a traced conversation."""
    inputs = InputConfig(graph=GraphConfig(max_edges=cfg.max_edges))
    out = []
    for person in dict.fromkeys(u.subject for u in units):
        own = [u for u in units if u.subject == person]
        others = [u for u in units if u.subject != person]
        for rel, template, _ in STATES:
            states = [u for u in own if u.relation == rel]
            current = [u for u in states if not u.superseded]
            if len(states) != 2 or len(current) != 1:
                raise RuntimeError(f"{conv_id}: trace of {person!r} {rel!r} marks {len(states) - len(current)} of "
                                   f"{len(states)} states superseded; the control needs exactly the older one")
            new = current[0]
            old = next(u for u in states if u is not new)
            qid = f"{conv_id}-{person}-{rel.split()[0]}"
            q = Question(qid, template.format(p=person), [new.object], rel, conversation_id=conv_id,
                         meta={"old": old.object})
            chosen = own + rng.sample(others, min(cfg.distractors, len(others)))
            rng.shuffle(chosen)
            wm = WorkingMemory(q, _items(chosen), "control")
            ex = build_example(wm, embed, inputs, embed_dim=embed_dim, answer=new.object)
            out.append(ControlExample(
                qid, split, q, new.object, old.object, wm, dataclasses.replace(ex, memory_text=""),
                dataclasses.replace(ex, memory_text=conflict_text(old, new, q, rng))))
    return out


def generate(cfg: ControlConfig, embed: Embed, embed_dim: int | None = None) -> dict[str, list[ControlExample]]:
    """Every split's examples; deterministic in ``cfg`` (and the embedder)."""
    pools = split_pools(cfg)
    out: dict[str, list[ControlExample]] = {}
    for split in SPLITS:
        rows: list[ControlExample] = []
        for i in range(int(cfg.conversations[split])):
            rng = random.Random(f"{cfg.seed}:{split}:{i}")
            conv_id = f"control-{split}-{i}"
            rows += conversation_examples(conv_id, split, conversation_units(conv_id, pools[split], cfg.people, rng),
                                          cfg, embed, embed_dim, rng)
        out[split] = rows
    return out


def training_form(examples: list[ControlExample], cfg: ControlConfig, split: str) -> list[GraphExample]:
    """The stored form of each train/dev example: graph only for a seeded `graph_only_fraction`, else conflict."""
    rng = random.Random(f"{cfg.seed}:{split}:form")
    return [ex.graph_only if rng.random() < cfg.graph_only_fraction else ex.conflict for ex in examples]
