"""A thing leaving its owner (construct/disposal.py) and the change it tells through construct/turn_changes.py:
the sentence readings, and the link a turn makes when it names the thing by a pronoun or not at all and the
question just before it names it ("Where's the tandem?" -> "We sold it.").

Units are written by hand as the rule extractor makes them: for "We sold it." it keeps no claim, only the
turn's other clause.
"""

from __future__ import annotations

import pytest

from qgmem.construct.disposal import Disposal, disposal, held_before, holding
from tests.test_construct_turn_changes import SMALL_TALK, _changed, _chat, _links


@pytest.mark.parametrize("sentence, expected", [
    ("We sold it.", Disposal("it", True)),
    ("Sold in March.", Disposal("", True)),
    ("Bought by a shepherd from the next valley in July.", Disposal("", True)),
    ("Gone to my cousin's boy in the spring; he got it cheap.", Disposal("", True)),
    ("The tandem disappeared from the rack by the station.", Disposal("The tandem", False)),
    ("Also, the tandem was taken from outside the library last Tuesday.", Disposal("the tandem", False)),
    ("No, I finally sold it to a collector.", Disposal("it", True)),
    ("It belongs to my nephew now.", Disposal("It", True)),
    ("It went to the village hall in the end.", Disposal("It", True)),
    ("So it's gone for scrap.", Disposal("it", True)),
    ("They paid cash and came for it with a trailer.", Disposal("it", True)),
    ("I gave him away to a farm.", Disposal("him", True)),
    ("My niece rides it now; I gave it to her in May.", Disposal("it", True)),
    ("I let her go in June to a boatman from the next island.", Disposal("her", True)),
    ("Since the Volvo went to the scrapyard, I take the bus.", Disposal("the Volvo", False)),
    ("Pilchard's gone to my aunt's in the countryside.", Disposal("Pilchard", False)),
    ("A couple drove the Dandelion away last Saturday.", Disposal("the Dandelion", False)),
    ("The Velmont paid for the new roof.", Disposal("The Velmont", False)),
    ("I got rid of the car.", Disposal("the car", False)),
    ("My scooter was stolen from outside the library.", Disposal("My scooter", False)),
    ("The Kittiwake has a new owner, a lad from the harbour.", Disposal("The Kittiwake", False)),
    ("A collector drove off with my records!", Disposal("my records", False)),
    ("Kipperley lives on a farm now, with a lad who keeps ferrets.", Disposal("Kipperley", False)),
    ("I swapped it for a little camper van in June.", Disposal("it", True)),
    ("My brother took him in March.", Disposal("him", True)),
    ("The lady next door took the freezer off my hands.", Disposal("the freezer", False)),
    ("My nephew has it now, he loves it.", Disposal("it", True)),
    ("Somebody nicked it from the bike shed.", Disposal("it", True)),
    ("I traded the Rover in for a van.", Disposal("the Rover", False)),
    ("The dinghy went in May, to a family from the next bay.", Disposal("The dinghy", False)),
    ("We rehomed her with a farmer in June.", Disposal("her", True)),
    ("The campervan's gone, too.", Disposal("The campervan", False)),
    # told in the passive, from the side of whoever has it now, or as no longer the speaker's
    ("The harmonium was collected by a chapel in Wrexby in March.", Disposal("The harmonium", False)),
    ("The Raleigh was taken off the rack at the station.", Disposal("The Raleigh", False)),
    ("Stolen off the drive in January.", Disposal("", True)),
    ("A riding school bought her off me in April.", Disposal("her", True)),
    ("A couple from Ardmore bought it in May, and I've spent the money on a kitchen.", Disposal("it", True)),
    ("In June a collector from Kelso bought my grandfather's red tractor.",
     Disposal("my grandfather's red tractor", False)),
    ("The grocery has new owners, too.", Disposal("The grocery", False)),
    ("The caravan's gone: a family bought it.", Disposal("The caravan", False)),
    ("No, I let my brother-in-law buy it in June.", Disposal("it", True)),
    ("I gave him to my nephew in August; my hips can't take the saddle.", Disposal("him", True)),
    ("The whole flock has belonged to my cousin since October.", Disposal("The whole flock", False)),
    ("I let my cousin have it in June for almost nothing.", Disposal("it", True)),
    ("In May I let a schoolteacher from Vardø have it for a fair price.", Disposal("it", True)),
    ("She's not mine any more.", Disposal("her", True)),
    ("The rowing machine went to my cousin's gym.", Disposal("The rowing machine", False)),
    ("A school in Elderwick took it.", Disposal("it", True)),
    ("The scouts have it.", Disposal("it", True)),
    ("The garage said it would cost more than it's worth, so it's gone for scrap.", Disposal("it", True)),
    ("The canoe is no longer ours.", Disposal("The canoe", False)),
    # paid for, someone else's now, had by another since a time, given as a gift, several things sold
    ("A breeder from the valley paid me well for her in February.", Disposal("her", True)),
    ("No, I took his money for it in January.", Disposal("it", True)),
    ("I let it go for the price of a school fee.", Disposal("it", True)),
    ("Taken from outside the market in March, chain and all.", Disposal("", True)),
    ("No, and the canoe is my wife's brother's now.", Disposal("the canoe", False)),
    ("It's a dentist's from Rovna now.", Disposal("It", True)),
    ("She's my brother-in-law's now.", Disposal("her", True)),
    ("The skiff has been his since the floods came in May.", Disposal("The skiff", False)),
    ("My cousin in the valley has had it since April.", Disposal("it", True)),
    ("She went to my brother as his wedding gift in May.", Disposal("her", True)),
    ("In June I passed it on to him for half of what it cost.", Disposal("it", True)),
    ("The cart and both mules were sold in February.", Disposal("both mules", False)),
    ("I sold all my hives to the association in December.", Disposal("all my hives", False)),
])
def test_a_thing_leaving_its_owner_is_read(sentence: str, expected: Disposal) -> None:
    assert disposal(sentence) == expected


@pytest.mark.parametrize("sentence", [
    "Did you sell it?",  # a question
    "I'd never sell it.", "I haven't sold it yet.", "I want to sell it.", "We might sell it.",  # not done
    "We went to the beach.", "He went to Leeds.", "My sister went to Leeds.", "The kids went to bed.",  # persons
    "He paid for dinner.", "It paid off in the end.", "It went great.",
    "Bought a new one in July.", "The photo was taken by my dad.",
    "Gone to the beach for the day!", "My sister disappeared into the crowd.",
    "The cats went with her, and the plants went to me.",  # the speaker got something
    "The gig sold out in a day.",
    "I have it now, thanks.", "We've got them now.", "You have it now.",  # the speaker or the one spoken to has it
    "The kids went in May, to the beach.",  # persons
    "He's gone.", "She's gone to bed.",  # persons
    "I bought it from a man in Leeds.", "My mum bought it for me.",  # the speaker got it
    "A friend bought my son a drink.", "A friend of mine bought a boat.", "A friend bought me lunch.",
    "I let the dog have a bath.", "The photo was taken from the top of the hill.",
    "It's my sister's turn now.", "It's my brother's birthday now.", "I've had it since May.",
    "She's had it since her wedding, hasn't she?", "He went to my school as a teacher.", "He paid me a visit.",
    "My colleagues and I went to a convention.", "I'm lucky to have them.", "They have it.", "I'd never sell it, so it's going to my grandson one day.",
])
def test_what_is_not_a_thing_leaving_its_owner(sentence: str) -> None:
    assert disposal(sentence) is None


def test_a_speaker_is_a_person_not_a_thing() -> None:
    assert disposal("Mel went to the park.") is not None  # a name the reader does not know
    assert disposal("Mel went to the park.", frozenset({"Mel"})) is None


OLD_TANDEM = (1, 1, "Desdemona", "Desdemona", "buy", "an old tandem",
              "It was! Dorian and I bought an old tandem at the auction, and we ride it to the pub on Sundays.")
SMALL_TALK = (2, 1, "Drogo", "Drogo", "ride", "a bike", "I only ride to work. Any tips for hills?")
ASKED = (3, 2, "Drogo", "Drogo", "see", "you", "I've seen you walking to the pub lately. Where's the tandem?")
SOLD = (4, 2, "Desdemona", "someone", "keep", "trying to steer",
        "We sold it. Someone kept trying to steer from the back seat.")


def test_a_pronoun_thing_sold_links_the_ownership_the_question_before_names() -> None:
    units, texts = _chat(OLD_TANDEM, SMALL_TALK, ASKED, SOLD)
    units = [u for u in units if u.first_turn != "D2:3"]  # the question keeps no claim
    assert _changed(units, texts) == [("n/u1", "n/u4")]


def test_without_the_question_a_pronoun_names_nothing() -> None:
    asked_other = ASKED[:6] + ("I've seen you walking to the pub lately. How was the quiz?",)
    units, texts = _chat(OLD_TANDEM, SMALL_TALK, asked_other, SOLD)
    units = [u for u in units if u.first_turn != "D2:3"]
    assert _changed(units, texts) == []


def test_a_thing_sold_in_the_same_session_is_no_change_of_an_earlier_state() -> None:
    same = tuple(SOLD[:1]) + (1,) + tuple(SOLD[2:])
    asked = tuple(ASKED[:1]) + (1,) + tuple(ASKED[2:])
    units, texts = _chat(OLD_TANDEM, SMALL_TALK, asked, same)
    units = [u for u in units if u.first_turn != "D1:3"]
    assert _changed(units, texts) == []


def test_a_named_thing_gone_elsewhere_links_by_its_name() -> None:
    dog = (1, 1, "Ilse", "Ilse", "have", "a lurcher called Biscuit",
           "I have a lurcher called Biscuit, and he howls when I go out.")
    small_talk = (2, 1, "Oren", "Oren", "want", "a new bell", "I want a new bell for mine. Any tips?")
    gone = (3, 2, "Ilse", "Ilse", "have", "a big garden",
            "Biscuit's gone to my cousin's farm. She has a big garden and he's calmer.")
    units, texts = _chat(dog, small_talk, gone)  # "Biscuit's" is "Biscuit has": the name is the shared word
    assert _changed(units, texts) == [("n/u1", "n/u3")]


@pytest.mark.parametrize("text, number", [
    ("I've still got the old motorbike. She could arrive in style.", "one"),
    ("I've got two rabbits, Clover and Dumpling, and they chew everything.", "many"),
    ("We still have it, yes.", "one"), ("I've had that dinghy since I was twelve.", "one"),
    ("I've got to go.", None), ("I have a question.", None), ("I've got a new neighbour who sings.", None),
    ("Have you still got the van?", None), ("I've never had a car.", None),
])
def test_having_a_thing_is_read_with_how_many(text: str, number: str | None) -> None:
    assert holding(text) == number


def test_a_thing_left_by_a_pronoun_is_what_that_person_last_said_they_had() -> None:
    earlier = [("It rained all week.", "b"), ("We still have it, yes.", "a")]  # latest first
    assert held_before("We sold it in July, to a couple from Ulverby.", earlier) == "a"
    assert held_before("They live at my brother's farm now.", earlier) is None  # not a disposal by a pronoun
    assert held_before("Somebody took them last week.", earlier) is None  # several things; "it" was one
    assert held_before("We sold the caravan in July.", earlier) is None  # named: its words link it


def test_a_sale_by_a_pronoun_links_the_thing_had_in_an_earlier_session() -> None:
    units, texts = _chat((1, 1, "Ilka", "Ilka", "have", "it", "We still have it, yes. We spend most holidays there."),
                         (2, 1, "Boris", "Boris", "want", "a new bike", "I want a new bike."),
                         (3, 2, "Ilka", "Ilka", "sell", "it", "We sold it in July, to a couple from Ulverby."))
    assert _changed(units, texts) == [("n/u1", "n/u3")]


def test_a_thing_gone_links_the_earlier_turn_that_names_it_only_in_a_fragment() -> None:
    old = (1, 1, "Tamsin", "Tamsin", "keep", "thirty in a loft",
           "My racing pigeons. I keep thirty in a loft above the garage.")
    gone = (3, 2, "Tamsin", "pigeons", "go", "to a club man",
            "The pigeons went to a club man in Darrowby in May. My knees can't do the ladder.")
    assert _links(old, SMALL_TALK, gone) == {2: (0, "change")}
    told = (3, 2, "Tamsin", "Tamsin", "see", "a club man",
            "I saw a club man in Darrowby in May with racing pigeons. My knees can't do the ladder.")
    assert _links(old, SMALL_TALK, told) == {}  # nothing has gone


def test_the_thing_named_as_gone_links_its_owner_by_one_word_the_chat_often_uses() -> None:
    """"The piano is gone." names what was had: its one word is enough, though the chat says "piano" in four turns."""
    had = (1, 1, "user", "user", "get", "a piano", "I've got a piano in my front room that nobody plays.")
    tune = (2, 1, "assistant", "piano", "need", "tuning", "A piano needs tuning once a year.")
    cost = (3, 1, "assistant", "tuning", "cost", "little", "Tuning a piano costs less than people think.")
    gone = (4, 2, "user", "couple", "buy", "it", "The piano is gone. A young couple bought it in March.")
    assert _changed(*_chat(had, tune, cost, gone)) == [("n/u1", "n/u4")]


def test_a_thing_gone_named_by_nothing_is_what_the_turn_before_says() -> None:
    """"Stolen." answers a statement, not a question ("I came past the market and didn't see your green tandem.")."""
    had = (1, 1, "Teodor", "Teodor", "ride", "my green tandem", "I ride my green tandem to the harbour every day.")
    small = (2, 1, "Maren", "Maren", "sell", "crab", "I sell crab at the harbour on Fridays.")
    seen = (3, 2, "Maren", "Maren", "not see", "your green tandem",
            "I came past the harbour and didn't see your green tandem.")
    gone = (4, 2, "Teodor", "someone", "cut", "the lock", "Stolen. Someone cut the lock in August, and now I walk.")
    assert _changed(*_chat(had, small, seen, gone)) == [("n/u1", "n/u4")]


def test_a_turn_of_an_earlier_session_does_not_name_what_a_change_left_unnamed() -> None:
    """A session's first turn answers nothing: "We just stopped." does not take the words of the last turn before."""
    wed = (1, 1, "Ilse", "Ilse", "marry", "nine years ago", "Brannoc and I married nine years ago this spring.")
    small = (2, 1, "Maren", "Maren", "sell", "crab", "I sell crab at the harbour on Fridays.")
    news = (3, 1, "Ilse", "Ilse's daughter", "win", "the debate", "My daughter won the debate at Fenwick school.")
    apart = (4, 2, "Ilse", "Ilse", "live", "apart", "Brannoc and I are living apart since May. We just stopped.")
    assert _links(wed, small, news, apart) == {3: (0, "change")}  # not (2, "change"): the debate


def test_the_thing_named_as_gone_outweighs_other_shared_words() -> None:
    had = (1, 1, "user", "user", "get", "an upright piano", "I've got an upright piano in my front room.")
    mother = (2, 1, "user", "user's mother", "live by", "herself",
              "My mother lives by herself and I worry about her steps down to the canal.")
    gone = (3, 2, "user", "couple", "buy", "it",
            "The piano is gone. A young couple bought it in March; two men carried it down the steps to the canal.")
    assert _links(had, mother, gone) == {2: (0, "change")}


def test_a_group_ending_beside_a_thing_sold_ends_the_group_too() -> None:
    """"The Reelers folded when the church hall was sold": both are read, so the club's words link, not the hall's."""
    club = (1, 1, "user", "user", "dance with", "the Kirkbride Reelers",
            "I dance with the Kirkbride Reelers on Wednesday nights.")
    hall = (2, 1, "user", "hall", "get", "a new floor", "The church hall got a new floor.")
    folded = (3, 2, "user", "user's calves", "have recovered", "calves",
              "The Kirkbride Reelers folded in January when the church hall was sold, so my calves have recovered.")
    assert _links(club, hall, folded) == {2: (0, "change")}


def test_a_pronoun_for_the_thing_named_adds_only_who_got_it() -> None:
    """"The canoe is gone, too. I let my neighbour buy it." names the canoe; the neighbour is who got it, not a
    state."""
    had = (1, 1, "user", "user", "have", "a red canoe", "I have a red canoe in my garage.")
    patch = (2, 1, "user", "user's neighbour", "help with", "the patch",
             "My neighbour will help with the patch on the canoe seat.")
    gone = (3, 2, "user", "canoe", "be", "gone", "The canoe is gone, too. I let my neighbour buy it in August.")
    assert _links(had, patch, gone) == {2: (0, "change")}
