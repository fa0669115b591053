"""The dense channel embeds a unit with its source turn and one neighbouring turn on each side, so a short
remark that only makes sense after the turn it answers ("They loved every minute of it") is found by what it is about."""

from __future__ import annotations

from qgmem.retrieve.config import RetrievalConfig
from qgmem.retrieve.documents import UnitTexts
from qgmem.retrieve.method import QGMemRetriever
from qgmem.types import AtomicUnit, Conversation, Question, Session, Turn

TURNS = [
    ("Theo", "How was the planetarium show at the science museum with the kids on Saturday?"),
    ("Maya", "They loved every minute of it!"),
    ("Theo", "My brother just opened a bakery on Main Street."),
    ("Maya", "I loved the croissants there, we had some last week."),
    ("Theo", "He bakes them fresh every morning before sunrise."),
    ("Maya", "The kids liked the new film at the cinema a lot, too."),
]
CLAIMS = [
    "Theo asked how the planetarium show at the science museum was.",
    "They loved every minute of it.",
    "Theo's brother opened a bakery on Main Street.",
    "Maya loved the croissants at the bakery.",
    "Theo's brother bakes croissants fresh every morning.",
    "Maya's kids liked the new film at the cinema a lot.",
]


def _conversation() -> tuple[Conversation, list[AtomicUnit]]:
    turns = [Turn(f"D1:{i + 1}", who, text) for i, (who, text) in enumerate(TURNS)]
    conv = Conversation(id="c1", sessions=[Session(id="S1", date="2024-03-02T10:00", turns=turns)],
                        speakers=["Maya", "Theo"])
    units = [AtomicUnit(id=f"u{i + 1}", namespace="c1", session_id="S1", text=claim, first_turn=t.id,
                        last_turn=t.id, turn_ids=[t.id], speaker=t.speaker, subject=t.speaker, relation="said",
                        object="", utterance_time="2024-03-02")
             for i, (claim, t) in enumerate(zip(CLAIMS, turns))]
    return conv, units


def _dense_rank(cfg: RetrievalConfig, unit: str) -> int:
    conv, units = _conversation()
    r = QGMemRetriever(None, cfg)
    r.index_units(conv, units, [])
    view = r.pool(Question("q", "How did the kids like the planetarium show?", [], "4", conversation_id="c1"))
    return view.ranks["dense"][[u.id for u in units].index(unit)]


def test_the_default_dense_document_holds_the_turns_around_the_claim():
    conv, units = _conversation()
    doc = QGMemRetriever(None, RetrievalConfig())._dense_doc(UnitTexts(conv, units, []), units[1])
    assert CLAIMS[1] in doc and TURNS[1][1] in doc and TURNS[0][1] in doc and TURNS[2][1] in doc
    assert TURNS[3][1] not in doc


def test_a_short_answer_is_found_by_the_turn_it_answers():
    # "They loved every minute of it" answers the question about the show: the default dense channel ranks it
    # right after the turn that names the show, above the remark about the film
    assert _dense_rank(RetrievalConfig(), "u2") <= 1
    # the claim alone says nothing of the show: the film remark (kids, liked) ranks above it
    assert _dense_rank(RetrievalConfig(dense_source=False, dense_context_turns=0), "u2") >= 2
