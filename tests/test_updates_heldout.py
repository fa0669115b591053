"""The held-out knowledge-update set (tests/fixtures/updates_heldout/, written before any tuning on it):
its labels are valid and hold the cases it was written for, and the measurement that the in-sample set
gets (`qgmem.testing.update_report`) runs on it and counts every label.

No threshold is asserted on the rates: they are reported (`bench/update_fixtures.py`, bench/RESULTS.md
"Update fixtures (in-sample vs held-out)"), and the held-out set must not become a target to tune on.
Run with -s to see the table.
"""

from __future__ import annotations

import collections
import re

import pytest

from qgmem.testing.update_fixtures import KINDS, STATES, load_update_fixtures
from qgmem.testing.update_report import measure, misses_text, table
from test_no_benchmark_vocabulary import vocabulary_pattern
from test_updates import FIXTURES as IN_SAMPLE

HELD_OUT = IN_SAMPLE.parents[1] / "updates_heldout" / "conversations.json"
ROLES = ("user", "assistant")


@pytest.fixture(scope="module")
def cases():
    return load_update_fixtures(HELD_OUT)


def test_heldout_labels_are_valid_and_cover_every_state_and_kind(cases) -> None:
    assert len(cases) >= 36
    kinds, states = collections.Counter(), collections.Counter()
    for c in cases:
        conv = c.conversation
        turns = {t.id: t for t in conv.turns()}
        assert len(conv.speakers) == 2 and {t.speaker for t in turns.values()} <= set(conv.speakers)
        assert 1 <= len(conv.sessions) <= 3 and 6 <= len(turns) <= 24
        assert c.updates and conv.questions
        for u in c.updates:  # an update replaces an earlier state
            assert list(turns).index(u.old) < list(turns).index(u.new), (conv.id, u)
        for q in conv.questions:
            kinds[q.meta["kind"]] += 1
            assert q.evidence and q.question_time >= conv.sessions[-1].date
            want = q.meta["superseded"] if q.meta["kind"] == "before" else q.meta["latest"]
            assert want in q.evidence, (conv.id, q.id)
        states.update(u.state for u in c.updates)
    assert set(kinds) == set(KINDS) and set(states) == set(STATES)


def test_heldout_holds_the_chats_it_was_written_for(cases) -> None:
    chats = [c for c in cases if tuple(c.conversation.speakers) == ROLES]
    assert len(chats) >= 2 and max(len(c.updates) for c in chats) >= 6  # user-assistant, one with six updates
    friends = [c for c in cases if tuple(c.conversation.speakers) != ROLES]
    assert max(len({u.state for u in c.updates}) for c in friends) >= 4  # one two-friends chat of many changes
    by_other = 0
    for c in cases:
        speaker = {t.id: t.speaker for t in c.conversation.turns()}
        by_other += sum(speaker[u.old] != speaker[u.new] and u.new in c.subjects
                        and c.subjects[u.new] == c.subjects.get(u.old) for u in c.updates)
    assert by_other >= 2  # the new state said by the other speaker, about the same person
    pronoun = sum(1 for c in cases for t in c.conversation.turns() if t.id in c.subjects
                  and set(re.findall(r"[a-z]+", t.text.lower())) & {"he", "she", "they", "his", "her", "you"})
    assert pronoun >= 15


def test_heldout_shares_no_speaker_with_the_in_sample_set_nor_benchmark_vocabulary(cases) -> None:
    inside = {s for c in load_update_fixtures(IN_SAMPLE) for s in c.conversation.speakers} - set(ROLES)
    held = {s for c in cases for s in c.conversation.speakers} - set(ROLES)
    assert not inside & held
    pattern = vocabulary_pattern()
    texts = [t.text for c in cases for t in c.conversation.turns()] + [q.text for c in cases
                                                                        for q in c.conversation.questions]
    assert not [m for t in texts for m in pattern.findall(t)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return measure("held-out", HELD_OUT, tmp_path_factory.mktemp("updates-heldout"))


def test_the_measurement_runs_on_the_heldout_set_and_counts_every_label(cases, report) -> None:
    print("\n" + table([report]) + "\n\n" + misses_text(report))
    assert report.conversations == len(cases)
    assert report.traced.total == sum(len(c.updates) for c in cases)
    assert {s: r.total for s, r in report.traced_by_state.items()} == {
        s: sum(u.state == s for c in cases for u in c.updates) for s in STATES}
    assert report.subjects.total == sum(len(c.subjects) for c in cases)
    asked = collections.Counter(q.meta["kind"] for c in cases for q in c.conversation.questions
                                if q.meta["superseded"] is not None)
    assert {k: report.questions[k].total for k in KINDS} == dict(asked)
    assert report.questions["now_plain"].total == asked["now"]
    for r in (report.traced, report.subjects, *report.questions.values()):
        assert 0 <= r.hits <= r.total
    labelled = {(c.conversation.id, u.old, u.new) for c in cases for u in c.updates}
    missed = [(m.conversation, m.update.old, m.update.new) for m in report.misses]
    assert len(missed) == report.traced.total - report.traced.hits and set(missed) <= labelled
    assert report.units > 0 and f"| updates traced | {report.traced} |" in table([report])
