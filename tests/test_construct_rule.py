"""Rule extractor: attributed, time-resolved, located units; chit-chat dropped; no turn content lost."""

from __future__ import annotations

import pytest

from qgmem.construct.rule import RuleExtractor, extract_triple
from qgmem.construct.windows import make_windows
from qgmem.timex import resolve_time
from qgmem.types import Session, Turn


def _units(conv):
    ex = RuleExtractor()
    return [u for s in conv.sessions for w in make_windows(s) for u in ex.extract(w, conv.id, conv.speakers)]


def _by_turn(units, turn_id):
    return [u for u in units if u.turn_ids == [turn_id]]


def test_units_on_tiny_conversation(tiny_conversation) -> None:
    units = _units(tiny_conversation)
    (hike,) = _by_turn(units, "D1:2")
    assert hike.text == "Bob: I went hiking in Yosemite yesterday with my sister Carol."
    assert (hike.subject, hike.relation) == ("Bob", "go")
    assert hike.fact_time_start == hike.fact_time_end == "2023-05-07"  # yesterday, against 8 May 2023
    assert hike.utterance_time == "2023-05-08T13:56"
    assert hike.location == "Yosemite"
    assert {"Bob", "Yosemite", "Carol"} <= set(hike.entities)
    (rex,) = _by_turn(units, "D1:3")[-1:]
    assert rex.fact_time_start == "2023-05-01" and rex.subject == "Alice's dog Rex" and "Rex" in rex.entities
    paris = _by_turn(units, "D2:3")[0]
    assert (paris.fact_time_start, paris.fact_time_end) == ("2023-07-01", "2023-07-31")  # last month
    assert paris.location == "Paris"
    img = [u for u in _by_turn(units, "D1:5") if "image" in u.text]
    assert img and "rainy street" in img[0].text and img[0].speaker == "Alice"
    # "Cool, good luck with the guitar." is chit-chat: no unit
    assert _by_turn(units, "D1:7") == []
    # ids are unique and stable
    assert len({u.id for u in units}) == len(units)
    assert [u.id for u in _units(tiny_conversation)] == [u.id for u in units]


def test_chitchat_dropped_but_content_kept() -> None:
    s = Session("S", "2023-01-10", [
        Turn("D1:1", "A", "Thanks!"),
        Turn("D1:2", "B", "Haha, wow."),
        Turn("D1:3", "A", "Wow, pottery! Clay too. Kids? Painting!"),  # no sentence unit, 4 content words
        Turn("D1:4", "B", "I adopted a puppy named Max."),
    ])
    ex = RuleExtractor()
    units = [u for w in make_windows(s) for u in ex.extract(w, "n", ["A", "B"])]
    assert [u.turn_ids for u in units] == [["D1:3"], ["D1:4"]]
    assert units[0].text == "A: Wow, pottery! Clay too. Kids? Painting!"
    assert units[1].relation == "adopt" and "Max" in units[1].entities


def test_triple_heuristics() -> None:
    assert extract_triple("I left Acme Corp and now work at Globex.", "Alice", "Bob")[:2] == ("Alice", "leave")
    assert extract_triple("My dog Rex turned 3.", "Alice", "Bob") == ("Alice's dog Rex", "turn", "3")
    assert extract_triple("You should visit Rome.", "Alice", "Bob")[0] == "Bob"
    assert extract_triple("Yeah, I painted that lake sunrise last year!", "Mel", None)[:2] == ("Mel", "paint")


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
    span = resolve_time(text, "2023-05-08T13:56")  # a Monday
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
    for conv in convs[:3]:
        units = _units(conv)
        index = conv.turn_index()
        for u in units:
            assert u.turn_ids and all(t in index for t in u.turn_ids), u
            assert index[u.first_turn][0].id == u.session_id
            assert u.namespace == conv.id
        seen = {t for u in units for t in u.turn_ids}
        total_turns += len(conv.turns())
        covered += len(seen)
    assert covered / total_turns > 0.85, covered / total_turns


def test_word_lists_are_data_files_with_a_header() -> None:
    from importlib import resources

    from qgmem.words import load_list, load_table, load_words

    files = [p for p in resources.files("qgmem.words").iterdir() if p.name.endswith(".txt")]
    assert len(files) >= 15
    for p in files:
        assert p.read_text(encoding="utf-8").startswith("# "), f"{p.name} needs a header comment"
    assert "pottery" in load_words("lexicon") and "#" not in "".join(load_words("lexicon"))
    assert "New York" in load_words("gazetteer")  # phrases and case kept
    assert load_table("irregular_verbs")["went"] == "go"
    assert load_list("stopwords")[:2] == ("a", "about")  # file order kept
    with pytest.raises(FileNotFoundError):
        load_words("no_such_list")


def test_package_data_ships_the_word_lists() -> None:
    import tomllib
    from pathlib import Path

    cfg = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert "words/*.txt" in cfg["tool"]["setuptools"]["package-data"]["qgmem"]
