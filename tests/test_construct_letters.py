"""Names and words in every Latin alphabet (construct/letters.py): the readers once matched `[A-Z]` and `[a-z]+`,
so a partner, a home or a workplace whose name starts or goes on with a letter English lacks went unread, and a
word like "café" was split in two."""

from __future__ import annotations

import re

import pytest

from qgmem.construct.letters import CAP, NAME
from qgmem.construct.occupation import job
from qgmem.construct.partner_status import partner_status
from qgmem.construct.residence import home
from qgmem.construct.state_table import tokens
from qgmem.construct.textcues import capitalised_entities, split_sentences, words


@pytest.mark.parametrize("word", ["Sigrún", "Łucja", "Ōtaki", "Émile", "Zoë", "Şebnem", "Ġorġ", "Ivan"])
def test_a_capitalised_word_of_any_latin_alphabet_is_a_name(word: str) -> None:
    assert re.fullmatch(NAME, word)


@pytest.mark.parametrize("word", ["sigrún", "łucja", "3rd", "_x"])
def test_a_word_without_a_capital_is_no_name(word: str) -> None:
    assert not re.match(CAP, word)


def test_the_readers_read_names_that_start_or_go_on_outside_english_letters() -> None:
    assert home("We have moved into a flat in Ōvelstad.").names == {"Ōvelstad"}
    assert job("These days I guide visitors round the caves at Šarvoda, four groups a day.").names == {"Šarvoda"}
    assert partner_status("Žofia and I have parted.").partner == "Žofia"
    assert partner_status("I've been seeing Ébrel for a month.").value == "seeing"


def test_words_sentences_and_entities_keep_letters_outside_english() -> None:
    assert words("the café in Łódź") == ["the", "café", "in", "Łódź"]
    assert tokens("Zoë's café, ok?") == ["zoë's", "café", ",", "ok", "?"]
    assert split_sentences("We met at noon. Émile came too.") == ["We met at noon.", "Émile came too."]
    assert "Ōvelstad" in capitalised_entities("We drove to Ōvelstad with the dog.", [])
