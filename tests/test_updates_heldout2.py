"""The later held-out knowledge-update sets (tests/fixtures/updates_heldout2/ on, each written by a helper blind
to the method and committed before any measurement): their labels are valid, they share no speaker with the sets
written before them nor benchmark vocabulary, and the shared measurement runs on the newest measured one and counts
every label. As for the first held-out set, no threshold is asserted: the rates are reported
(`bench/update_fixtures.py --set heldout2|...|heldout34`, bench/RESULTS.md). A
held-out set is measured once as held out; after that it is a development set (held-out 2 since commit
a7d90fd, held-out 3 since 7e67086, held-out 4 since its misses were read), and the next set takes its place
(held-out 4, measured once at 3906322; held-out 5, committed at f2757be, measured once at e3cb10b; held-out 6,
committed at efaa42f, measured once at cc48cb8; held-out 7, committed at 30ad6d5, measured once at ff57d4b;
held-out 8, committed at 0be1088, measured once at 68a97dd; held-out 9, committed at 1d3d488, measured once
at 0858b72; held-out 10, committed at 4441005, measured once at 2654cc1; held-out 11, committed at
1796040, measured once at e5311ef; held-out 12, committed at 57c6ffe, measured once at 68d57ea; held-out 13,
committed at ad3f426, measured once at 7e3257c; held-out 14, committed at 6dcc851 and
ef1c09c, measured once at 8fca853; held-out 15, committed at fba6b27, measured once there;
held-out 16, committed at 896b4bd, measured once at c56b98d; held-out 17, committed at 7df9244,
measured once there; held-out 18, committed at 4a28fb0, measured once at 349b609; held-out 19, committed at f5c2280,
measured once at a7ab4e3; held-out 20, committed at eba2306, measured once there; held-out 21, committed at
afa5f3c, measured once there; held-out 22, committed at d95ecc8,
measured once there; held-out 23, committed at db831ad, measured once there; held-out 24, committed at 1421de1,
measured once at 3f192c1; held-out 25, committed at 966e12a, measured once at 299f3ea; held-out 26,
committed at 0b93913, measured once at 4bdec47; held-out 27, committed at c42b257, measured once at e403835;
held-out 28, committed at 53be2d1, measured once there; held-out 29, committed at 171e687, measured once there;
held-out 30, committed at 311831d, measured once there; held-out 31, committed at 0f8ad92, measured once at 2f33eb0;
held-out 32, committed at e5e621f, measured once at dfafeaa; held-out 33, committed at 0d8ff6a,
measured once there; held-out 34, committed at f168cee, measured once there). A set in UNMEASURED has
only its labels checked here.
"""

from __future__ import annotations

import collections

import pytest

from qgmem.testing.update_fixtures import HELD_OUT_LATER, HELD_OUT_UNMEASURED, KINDS, STATES, load_update_fixtures
from qgmem.testing.update_report import measure, misses_text, table
from test_no_benchmark_vocabulary import vocabulary_pattern
from test_updates import FIXTURES as IN_SAMPLE

FIXTURES = IN_SAMPLE.parents[1]
ORDER = ("updates", "updates_dev", "updates_heldout", *(f"updates_heldout{n}" for n in HELD_OUT_LATER))  # as written
UNMEASURED = tuple(f"updates_heldout{n}" for n in HELD_OUT_UNMEASURED)  # only their labels are checked
MEASURED = tuple(d for d in ORDER if d not in UNMEASURED)
ROLES = ("user", "assistant")


@pytest.fixture(scope="module", params=ORDER[ORDER.index("updates_heldout2"):])
def held(request):
    return FIXTURES / request.param / "conversations.json"


@pytest.fixture(scope="module")
def cases(held):
    return load_update_fixtures(held)


def test_labels_are_valid_and_cover_every_state_and_kind(cases) -> None:
    assert len(cases) >= 36
    kinds, states = collections.Counter(), collections.Counter()
    for c in cases:
        conv = c.conversation
        turns = list(t.id for t in conv.turns())
        assert len(conv.speakers) == 2 and 2 <= len(conv.sessions) <= 3 and conv.questions
        for u in c.updates:  # an update replaces a state told in an earlier turn
            assert turns.index(u.old) < turns.index(u.new), (conv.id, u)
        for q in conv.questions:
            kinds[q.meta["kind"]] += 1
            assert q.evidence and q.question_time >= conv.sessions[-1].date
        states.update(u.state for u in c.updates)
    assert set(kinds) == set(KINDS) and set(states) == set(STATES) and sum(states.values()) >= 50
    assert sum(1 for c in cases if not c.updates) >= 2  # chats where nothing changes
    assert sum(1 for c in cases if tuple(c.conversation.speakers) == ROLES) >= 4


def test_shares_no_speaker_with_the_sets_written_before_it_nor_benchmark_vocabulary(held, cases) -> None:
    before = ORDER[:ORDER.index(held.parent.name)]
    inside = {s for d in before for c in load_update_fixtures(FIXTURES / d / "conversations.json")
              for s in c.conversation.speakers}
    held = {s for c in cases for s in c.conversation.speakers} - set(ROLES)
    assert not (inside - set(ROLES)) & held
    pattern = vocabulary_pattern()
    texts = [t.text for c in cases for t in c.conversation.turns()] + [q.text for c in cases
                                                                        for q in c.conversation.questions]
    assert not [m for t in texts for m in pattern.findall(t)]


def test_the_measurement_runs_on_the_newest_measured_set_and_counts_every_label(tmp_path_factory) -> None:
    """On one set, the newest measured one: what is tested is the measurement's counting, which is the same code for
    every set (building every set took most of the suite's time); each set's rates are bench/update_fixtures.py's."""
    held = FIXTURES / MEASURED[-1] / "conversations.json"
    cases = load_update_fixtures(held)
    report = measure(held.parent.name, held, tmp_path_factory.mktemp(held.parent.name))
    print("\n" + table([report]) + "\n\n" + misses_text(report))
    assert report.conversations == len(cases)
    assert report.traced.total == sum(len(c.updates) for c in cases)
    assert {s: r.total for s, r in report.traced_by_state.items()} == {
        s: sum(u.state == s for c in cases for u in c.updates) for s in STATES}
    assert report.subjects.total == sum(len(c.subjects) for c in cases)
    labelled = {(c.conversation.id, u.old, u.new) for c in cases for u in c.updates}
    missed = [(m.conversation, m.update.old, m.update.new) for m in report.misses]
    assert len(missed) == report.traced.total - report.traced.hits and set(missed) <= labelled
