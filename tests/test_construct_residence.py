"""Where a speaker lives (construct/residence.py) and the change of home it tells through
construct/turn_changes.py: the readings, and the link a later move makes when it shares no word with the old
home ("I rent a bedsit on Quayle Road" -> "my partner and I have moved into a two-bed flat in Hollerby").
"""

from __future__ import annotations

import pytest

from qgmem.construct.residence import Home, home
from tests.test_construct_turn_changes import _changed, _chat


@pytest.mark.parametrize("text, expected", [
    ("I rent a bedsit on Quayle Road.", Home(frozenset({"Quayle Road"}), False)),
    ("I still live with my gran in Pelsworth, which keeps the rent down.", Home(frozenset({"Pelsworth"}), False)),
    ("Ouch. I rent a room above my uncle's bakery in Whitby, so my commute is short.",
     Home(frozenset({"Whitby"}), False)),
    ("We've lived in Bath for two years now, but the flat is falling apart.", Home(frozenset({"Bath"}), False)),
    ("I'm still in my old room at my parents' house in Orrin Vale.", Home(frozenset({"Orrin Vale"}), False)),
    ("Still in the cottage at Brackenhold, still driving the school bus.", Home(frozenset({"Brackenhold"}), False)),
    ("And I can walk to the office from my flat on Bellhanger Street.",
     Home(frozenset({"Bellhanger Street"}), False)),
    ("We live in a flat in the Plateau, near a bagel shop.", Home(frozenset({"Plateau"}), False)),
    ("My partner and I have moved into a two-bed flat in Hollerby.", Home(frozenset({"Hollerby"}), True)),
    ("I've got the keys to a studio over a bike shop on Venn Road.", Home(frozenset({"Venn Road"}), True)),
    ("Now that I've got my own place by the harbour, I can have people over.", Home(frozenset(), True)),
    ("So you live out in Wrenfield now! Your sister said you moved in June.", Home(frozenset({"Wrenfield"}), True)),
    ("No, we relocated to Melbourne in August.", Home(frozenset({"Melbourne"}), True)),
    ("I'm still above the chemist in Dunwade, still smelling of cough sweets.", Home(frozenset({"Dunwade"}), False)),
    ("Yes, I'm still on Wagwell Row. The dryers keep me warm.", Home(frozenset({"Wagwell Row"}), False)),
    ("I'm still lodging with my aunt on Finchley Lane in Grantby.", Home(frozenset({"Finchley Lane", "Grantby"}), False)),
    ("We're still squeezed into Mum's spare room on Cobham Lane.", Home(frozenset({"Cobham Lane"}), False)),
    ("I've been at my sister's farm in Wraybury since September.", Home(frozenset({"Wraybury"}), True)),
    ("Since we left the farm for a bungalow in Jessop in January, I drive.", Home(frozenset({"Jessop"}), True)),
    ("New address for your book: 7 Glebe Close, Tivington.", Home(frozenset(), True)),
    ("I'm back with my parents' for a bit.", Home(frozenset(), True)),
    # an answer's "be" with a comma, a compound, a numbered "-bed", living under someone's roof, sleeping in a room
    ("I am, in my uncle's compound in Tessalit, with the goats.", Home(frozenset({"Tessalit"}), False)),
    ("I'm in the one-bed above the baker's on Corve Street.", Home(frozenset({"Corve Street"}), False)),
    ("I still live under my mother's roof in Ardnish.", Home(frozenset({"Ardnish"}), False)),
    ("I'm still under my parents' roof, out in the suburbs.", Home(frozenset(), False)),
    ("I still sleep in my old bedroom at my aunt's.", Home(frozenset(), False)),
    ("I board in a house behind the mill with a strict landlady.", Home(frozenset(), False)),
    ("We've a cottage on the hill above Porthkerris.", Home(frozenset({"Porthkerris"}), False)),
    ("Still in Harwick, above the chemist.", Home(frozenset({"Harwick"}), False)),
    ("In a tiny room in Saint-Just, up ninety steps.", Home(frozenset({"Saint-Just"}), False)),
    ("Since May my sister and I have rented two rooms in Ormley.", Home(frozenset({"Ormley"}), False)),
    # a move: the second verb of one subject, a dwelling had since a time, "You've moved!"
    ("I took a job at the boatyard and moved up to Brindle in March.", Home(frozenset({"Brindle"}), True)),
    ("I've had a little house above the harbour since October.", Home(frozenset(), True)),
    ("You've moved! I saw the cottage up for sale.", Home(frozenset(), True)),
    ("I live here now, since October: we rent a room behind the hospital.", Home(frozenset(), True)),
    ("Since November. A little terrace in Wickerby, with a garden.", Home(frozenset({"Wickerby"}), False)),
    ("I've been staying with my grandmother in Ville Platte since May.", Home(frozenset({"Ville Platte"}), True)),
    # held since a recent time: begun then (not since a year: an old home told)
    ("Since November I've rented two rooms above the harbour in Rovinj.", Home(frozenset({"Rovinj"}), True)),
    ("I've moved away. I'm in Oron now, in a bungalow near the beach.", Home(frozenset({"Oron"}), True)),
    ("I took the ground floor of an old schoolhouse in Ramsloh.", Home(frozenset({"Ramsloh"}), True)),
    ("Since January I've had a room over a noodle shop in Nyaung town.", Home(frozenset({"Nyaung"}), True)),
    ("I've lived in Bathwick since May.", Home(frozenset({"Bathwick"}), True)),
    ("I've lived in Bathwick since 1990.", Home(frozenset({"Bathwick"}), False)),
])
def test_a_home_is_read_with_its_places(text: str, expected: Home) -> None:
    assert home(text) == expected


@pytest.mark.parametrize("text", [
    "I'm back at work on Monday.",  # back at a workplace, not at a family's home
    "Do you still live in Leeds?",  # a question
    "We'd love to move to the coast.", "I don't live there any more.",  # a wish, a negation
    "My sister has moved to Leeds.", "They've got a bungalow in Saltcombe Bay.",  # a third person's home
    "I'm in Paris this week.", "We're staying in a hotel in Rome for the week.",  # a stay, not a home
    "I'm living my best life.", "I live for the weekends.", "I moved on from that job.",
    "Nice that you found a place to unwind.", "It's like finding your own place in the world.",
    "I am, in a way.", "I sleep in on Sundays.", "I've had a good day since the match.",  # no dwelling
    "I packed my bag and moved on.", "We've a room for you if you need one.",
    "I'm a Leeds fan now.", "I'm a different man now.", "A little help in Leeds would be nice.", "I took the bus.",
])
def test_what_tells_no_home(text: str) -> None:
    assert home(text) is None


def test_a_home_differs_by_a_move_elsewhere_or_other_places() -> None:
    bath, cardiff = Home(frozenset({"Bath"}), False), Home(frozenset({"Cardiff"}), False)
    assert cardiff.differs(bath) and not bath.differs(Home(frozenset({"Bath"}), False))
    assert Home(frozenset(), True).differs(bath)  # "I've got my own place now"
    assert not Home(frozenset({"Bath"}), True).differs(Home(frozenset({"Bath"}), True))  # the same move, told again
    assert not Home(frozenset(), False).differs(bath)  # "I'm still in the flat": nothing says it changed


OLD_HOME = (1, 1, "Ilse", "Ilse", "rent", "a bedsit", "Money's tight. I rent a bedsit on Quayle Road.")
SMALL_TALK = (2, 1, "Oren", "Oren", "want", "a new bell", "I want a new bell for mine. Any tips?")
MOVED = (3, 2, "Ilse", "Ilse", "split", "the rent",
         "Good news: my partner and I have moved into a two-bed flat in Hollerby, with a garden.")


def test_a_move_links_the_old_home_without_a_shared_word() -> None:
    units, texts = _chat(OLD_HOME, SMALL_TALK, MOVED)
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_the_same_home_told_again_links_nothing() -> None:
    again = MOVED[:6] + ("I'm still in the bedsit on Quayle Road. The damp is worse.",)
    assert home(again[6]) == Home(frozenset({"Quayle Road"}), False)
    units, texts = _chat(OLD_HOME, SMALL_TALK, again)
    assert _changed(units, texts) == []


def test_a_move_told_twice_in_a_session_links_once() -> None:
    house = (4, 2, "Ilse", "Ilse", "have", "a lemon tree", "Our new flat has a lemon tree outside.")
    units, texts = _chat(OLD_HOME, SMALL_TALK, MOVED, house)
    assert _changed(units, texts) == [("n/u1", "n/u3")]


@pytest.mark.parametrize("text, place", [
    ("So you're out in Pellow Bay now! Your cousin told me.", "Pellow Bay"),
    ("We've been in Morrowfield since April, in a terrace with a yard.", "Morrowfield"),
    ("So you've gone over to Kestle Wharf! Your aunt said.", "Kestle Wharf"),
    ("Your brother says you're in Tremarrow!", "Tremarrow"),  # news heard: being there is what changed
])
def test_being_in_a_named_place_now_is_a_weak_move(text: str, place: str) -> None:
    assert home(text) == Home(frozenset({place}), True, weak=True)


@pytest.mark.parametrize("text", ["You're a Pokhara man now, your sister tells me.",
                                  "My news: I'm a Mariehamn woman since December.", "In Lankaran since May."])
def test_being_of_a_named_place_now_is_a_weak_move_without_a_name(text: str) -> None:
    assert home(text) == Home(frozenset(), True, weak=True)


@pytest.mark.parametrize("text", ["I'm in Lisbon this week for a conference.", "I'm at Legoland now!",
                                  "I've gone over to Saturdays at the pool.",
                                  "Your brother says you're in Tremarrow this week."])
def test_a_stay_an_outing_or_a_weekday_is_no_weak_move(text: str) -> None:
    assert home(text) is None


def test_a_weak_move_changes_a_named_home_and_a_new_address_is_a_move() -> None:
    out_there = (3, 2, "Oren", "Oren", "hear", "x", "So you're out in Pellow Bay now! Your cousin told me.")
    units, texts = _chat(OLD_HOME, SMALL_TALK, out_there)
    assert _changed(units, texts) == [("n/u1", "n/u3")]
    assert home("Write down my new address: 4 Gannet Row, Pellow Bay.") == Home(frozenset(), True)


def test_a_move_outranks_a_link_by_a_shared_time_word() -> None:
    """"I moved out in March" shares "March" with the partner told "since March", but what moved is the home."""
    old_home = (1, 1, "Brigid", "Brigid", "be on", "Wagtail Row", "Yes, I'm still on Wagtail Row. The dryers keep me warm.")
    partner = (2, 1, "Brigid", "Brigid", "see", "each other", "Dai and I have been seeing each other since March.")
    moved = (4, 2, "Brigid", "Brigid", "move", "x",
             "Oh no, sorry! I moved out in March. I'm in Lynwater now, in a cottage by the reservoir.")
    assert _changed(*_chat(old_home, partner, moved)) == [("n/u1", "n/u4")]
