"""Retrieval channels and fusion: BM25, dense (exact and HNSW), event-attribute matching, RRF."""

from __future__ import annotations

import numpy as np
import pytest

from qgmem.retrieve.attributes import AttributeIndex
from qgmem.retrieve.dense import DenseIndex
from qgmem.retrieve.fusion import rrf
from qgmem.retrieve.lexical import LexicalIndex
from qgmem.retrieve.query import QueryConstraints
from qgmem.types import AtomicUnit


def test_bm25_ranks_term_matches_and_handles_empty_and_unknown_terms():
    ix = LexicalIndex(["Alice adopted a dog named Rex", "Bob is reading Dune", "Bob plays the guitar every day"])
    hits = ix.search("Who is reading books? dune", 10)
    assert hits[0][0] == 1 and all(s > 0 for _, s in hits)
    assert ix.search("xylophone quantum", 10) == []
    assert LexicalIndex([]).search("anything", 5) == []
    assert len(ix.search("Bob", 1)) == 1


def test_dense_exact_and_hnsw_agree_on_neighbours():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3000, 32)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    exact = DenseIndex(m, ann_threshold=10**9)
    ann = DenseIndex(m, ann_threshold=100, m=16, ef_construction=80, ef_search=128)
    assert not exact.ann and ann.ann
    agree = 0
    for i in range(20):
        q = m[i] + 0.05 * rng.normal(size=32).astype(np.float32)
        q /= np.linalg.norm(q)
        e = [r for r, _ in exact.search(q, 10)]
        a = [r for r, _ in ann.search(q, 10)]
        assert e[0] == i and a[0] == i
        agree += len(set(e) & set(a))
    assert agree / 200 >= 0.9
    with pytest.raises(ValueError, match="dimension"):
        exact.search(np.zeros(8, np.float32), 3)
    assert DenseIndex(np.zeros((0, 32), np.float32)).search(m[0], 5) == []


def test_rrf_hand_computed():
    fused = rrf({"a": [1, 2, 3], "b": [3, 1]}, k=60)
    scores = dict(fused)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert [i for i, _ in fused] == [1, 3, 2]
    assert [i for i, _ in rrf({"a": [1, 2, 3], "b": [3, 1]}, k=60, weights={"b": 0})] == [1, 2, 3]
    assert len(rrf({"a": list(range(500))}, pool_size=100)) == 100


def _unit(i: int, ents: list[str], loc: str | None = None, t0: str | None = None, t1: str | None = None,
          utt: str | None = None) -> AtomicUnit:
    return AtomicUnit(id=f"u{i}", namespace="n", session_id="S1", text=f"claim {i}", first_turn=f"D1:{i}",
                      last_turn=f"D1:{i}", turn_ids=[f"D1:{i}"], speaker="Alice", subject="Alice", relation="r",
                      object="o", entities=ents, location=loc, fact_time_start=t0, fact_time_end=t1,
                      utterance_time=utt)


class _Vocab:
    """Deterministic toy embedder: names in the same group are similar (cos 0.8), others orthogonal."""

    groups = {"paris": 0, "paris, france": 0, "rex": 1, "my dog rex": 1, "london": 2, "globex": 3, "alice": 4}

    def __call__(self, names: list[str]) -> np.ndarray:
        return np.stack([self.vec(n) for n in names]).astype(np.float32)

    def vec(self, name: str) -> np.ndarray:
        v = np.zeros(8, np.float32)
        g = self.groups.get(name.lower(), 7)
        v[g] = 1.0
        if name.lower() in ("paris, france", "my dog rex"):
            v[6] = 0.75
        return v / np.linalg.norm(v)


def test_attribute_channel_matches_names_by_similarity_threshold_and_time_overlap():
    enc = _Vocab()
    units = [_unit(0, ["Rex"]), _unit(1, ["Globex"], loc="Paris, France"), _unit(2, [], loc="London"),
             _unit(3, [], t0="2023-05-01", t1="2023-05-31"), _unit(4, [], utt="2023-05-10"), _unit(5, ["Alice"])]
    ix = AttributeIndex(units, enc)
    rows = [r for r, _ in ix.search(QueryConstraints(entities=["my dog rex"]), [enc.vec("my dog rex")], None, 0.6, 10)]
    assert rows == [0]
    # "Paris" vs "Paris, France": cos 0.8 >= 0.6 matches; London does not
    rows = [r for r, _ in ix.search(QueryConstraints(location="Paris"), [], enc.vec("Paris"), 0.6, 10)]
    assert rows == [1]
    assert ix.search(QueryConstraints(location="Paris"), [], enc.vec("Paris"), 0.85, 10) == []
    # time: fact time overlap scores above the utterance-time fallback (half weight)
    res = ix.search(QueryConstraints(time_start="2023-05-07", time_end="2023-05-20"), [], None, 0.6, 10)
    assert [r for r, _ in res] == [3, 4] and res[0][1] == pytest.approx(2 * res[1][1])
    assert ix.search(QueryConstraints(time_start="2024-01-01", time_end="2024-01-31"), [], None, 0.6, 10) == []
    no_fallback = AttributeIndex(units, enc, time_fallback_utterance=False)
    assert [r for r, _ in no_fallback.search(QueryConstraints(time_start="2023-05-07", time_end="2023-05-20"),
                                             [], None, 0.6, 10)] == [3]


def test_week_counted_question_time_matches_within_half_a_week():
    """ "two weeks ago" resolves to one day; known only to the week, it matches units within +/- 3 days."""
    enc = _Vocab()
    units = [_unit(0, [], t0="2023-08-15", t1="2023-08-15"), _unit(1, [], t0="2023-08-21", t1="2023-08-21"),
             _unit(2, [], t0="2023-08-14", t1="2023-08-14"), _unit(3, [], t0="2023-08-18", t1="2023-08-18")]
    ix = AttributeIndex(units, enc, time_fallback_utterance=False)
    week = QueryConstraints(time_start="2023-08-18", time_end="2023-08-18", time_grain="week")
    assert sorted(r for r, _ in ix.search(week, [], None, 0.6, 10)) == [0, 1, 3]
    day = QueryConstraints(time_start="2023-08-18", time_end="2023-08-18")
    assert [r for r, _ in ix.search(day, [], None, 0.6, 10)] == [3]
    whole_week = QueryConstraints(time_start="2023-08-14", time_end="2023-08-20", time_grain="week")  # "last week"
    assert sorted(r for r, _ in ix.search(whole_week, [], None, 0.6, 10)) == [0, 2, 3]


def test_attribute_ties_broken_by_dense_similarity():
    enc = _Vocab()
    units = [_unit(0, ["Rex"]), _unit(1, ["Rex"]), _unit(2, ["Rex"])]
    ix = AttributeIndex(units, enc)
    order = ix.search(QueryConstraints(entities=["Rex"]), [enc.vec("Rex")], None, 0.6, 10,
                      tie_break=lambda rows: np.asarray([{0: 0.1, 1: 0.9, 2: 0.5}[int(r)] for r in rows]))
    assert [r for r, _ in order] == [1, 2, 0]


def test_impact_ordered_bm25_is_exact_without_cap_and_bounded_with_cap():
    import random

    import bm25s
    import Stemmer

    rng = random.Random(0)
    words = [f"w{i}" for i in range(200)]
    docs = [" ".join(rng.choice(words[: rng.randint(1, 200)]) for _ in range(12)) for _ in range(1500)]
    ix = LexicalIndex(docs)
    st = Stemmer.Stemmer("english")
    ref = bm25s.BM25(k1=1.2, b=0.75)
    ref.index(bm25s.tokenize(docs, stopwords="en", stemmer=st, show_progress=False), show_progress=False)
    for q in ("w1 w5 w77", "w150 w3 w3"):
        s = ref.get_scores(bm25s.tokenize([q], stopwords="en", stemmer=st, show_progress=False, return_ids=False)[0])
        got = ix.search(q, 10)
        assert np.allclose([x for _, x in got], np.sort(s)[::-1][:10], atol=1e-4)
        assert all(s[i] == pytest.approx(x, abs=1e-4) for i, x in got)
    capped = LexicalIndex(docs, max_postings=5)
    hits = capped.search("w1", 100)
    assert 0 < len(hits) <= 5
    assert [i for i, _ in hits] == [i for i, _ in ix.search("w1", len(hits))]  # the highest-impact postings


def _postings(vocab: dict[str, int], data: np.ndarray, indices: np.ndarray, indptr: np.ndarray
              ) -> dict[tuple[str, int], float]:
    """(term, document) -> BM25 weight of a CSC posting matrix."""
    term_of = {j: t for t, j in vocab.items()}
    return {(term_of[j], int(indices[p])): data[p] for j in range(len(indptr) - 1)
            for p in range(indptr[j], indptr[j + 1])}


def test_bm25_weights_equal_bm25s_bit_for_bit_and_remembered_documents_change_nothing() -> None:
    import bm25s
    import Stemmer

    docs = ["Alice adopted a dog named Rex (8 May 2023)", "", "the of and", "Bob's café: naïve ÉTUDES, études!",
            "Caroline: I went to the support group yesterday and it was so powerful.",
            "Melanie: Painting is a great outlet; I painted a lake sunrise last year.",
            "Running, runs, ran and runner -- run run run 2023-05-08 12:30"] * 3
    docs += [f"{d} extra words {i}" for i, d in enumerate(docs)]
    grown = docs[::-1] + ["Alice walked Rex again"]  # its old documents' term counts are remembered
    for corpus in (docs, grown):
        ref = bm25s.BM25(k1=1.2, b=0.75)
        ref.index(bm25s.tokenize(corpus, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False),
                  show_progress=False)
        ix = LexicalIndex(corpus)
        want = _postings(ref.vocab_dict, ref.scores["data"], ref.scores["indices"], ref.scores["indptr"])
        got = _postings(ix.vocab, ix.data, ix.indices, ix.indptr)
        assert got.keys() == want.keys() and all(got[k] == want[k] for k in want)  # float32, exactly
    assert ix.search("Alice walked", 1)[0][0] == len(grown) - 1


def test_rrf_tied_groups_share_their_rank_and_keep_the_best_one() -> None:
    # turn channel: group [3, 4] at rank 1, group [4, 5] at rank 2 (4 keeps rank 1); unit channel: 5 first
    got = dict(rrf({"turn": [[3, 4], [4, 5]], "unit": [5]}, k=10))
    assert got[3] == pytest.approx(1 / 11) and got[4] == pytest.approx(1 / 11)
    assert got[5] == pytest.approx(1 / 12 + 1 / 11)


def test_turn_channels_rank_units_by_their_raw_turn() -> None:
    from qgmem.retrieve.turns import TurnIndex

    turn_ids = ["D1:1", "D1:2", "D1:3"]
    docs = ["A: the train to the coast was late", "B: we adopted a grey kitten", "A: ok"]

    def unit(i: int, turn: str, text: str) -> AtomicUnit:
        return AtomicUnit(id=f"n/u{i}", namespace="n", session_id="S1", text=text, first_turn=turn, last_turn=turn,
                          turn_ids=[turn], speaker="A", subject="A", relation="say", object=text)

    units = [unit(0, "D1:2", "B adopted a kitten"), unit(1, "D1:1", "A took a train"), unit(2, "D1:2", "grey fur")]
    vecs = np.eye(3, dtype=np.float32)
    idx = TurnIndex.build(turn_ids, docs, units, vecs)
    # every unit of the matching turn is one tied group; the turn without units ("ok") never appears
    assert idx.groups(idx.lexical_hits("kitten", 10)) == [[0, 2]]
    assert idx.groups(idx.dense_hits(np.array([1, 0, 0], np.float32), 3)) == [[1], [0, 2]]
    assert idx.positions(["D1:3", "D9:9", "D1:1"]) == [2, 0]


def test_embedder_name_suffix_caps_the_input_length() -> None:
    from qgmem.embed import get_embedder, split_name

    assert split_name("minilm@128") == ("minilm", 128)
    assert split_name("org/model@v2") == ("org/model@v2", None) and split_name("minilm") == ("minilm", None)
    short = get_embedder("minilm@8")
    assert short.name == "minilm@8" and short.model.max_seq_length == 8
    head = "the quick brown fox jumps over the lazy dog"  # more than 8 word pieces
    pair = [head, head + " near the river bank on a cold and windy day"]
    a, b = short.encode(pair)
    assert float(a @ b) > 0.999  # both cut to the same 8 word pieces ([CLS] and [SEP] included)
    a, b = get_embedder("minilm").encode(pair)
    assert float(a @ b) < 0.99


def test_bf16_embedder_is_the_fp32_model_to_within_1e_3_cosine() -> None:
    from qgmem.embed import get_embedder, split_name, split_precision

    assert split_precision("minilm@128:bf16") == ("minilm@128", "bf16") and split_name("minilm@128:bf16") == ("minilm", 128)
    assert split_precision("org/model") == ("org/model", "fp32") and split_precision("a:b") == ("a:b", "fp32")
    texts = ["I moved to Lisbon in March for a new job at the port authority.", "ok", "What did Maria adopt?"]
    fp32, bf16 = get_embedder("minilm@128"), get_embedder("minilm@128:bf16")
    assert bf16.precision == "bf16" and bf16.name != fp32.name  # cached vectors are keyed by the name
    a, b = fp32.encode(texts), bf16.encode(texts)
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert float((a * b).sum(1).min()) > 0.999
    assert not np.array_equal(a, b)  # it did run in bfloat16


def test_bf16_on_a_cpu_without_bf16_units_warns(monkeypatch) -> None:
    import qgmem.embed as E

    monkeypatch.setattr(E, "cpu_flags", lambda: {"avx2", "avx512f"})  # AVX-512 without bf16 units (Skylake)
    with pytest.warns(UserWarning, match="no bfloat16 units"):
        E.Embedder("minilm@8:bf16")


@pytest.mark.parametrize("flags, want", [({"avx2", "fma"}, "minilm@128"), ({"avx2", "avx512f"}, "minilm@128"),
                                         ({"avx512f", "avx512_bf16"}, "minilm@128:bf16"),
                                         ({"avx512f", "amx_tile", "amx_bf16"}, "minilm@128:bf16")])
def test_auto_precision_is_bf16_only_on_cpus_with_bf16_units(monkeypatch, flags, want) -> None:
    import qgmem.embed as E

    monkeypatch.setattr(E, "cpu_flags", lambda: flags)
    assert E.resolve_name("minilm@128:auto") == want and E.resolve_name("minilm@128:auto", "cpu") == want
    assert E.resolve_name("minilm@128:fp32") == E.resolve_name("minilm@128") == "minilm@128"  # one name each
    assert E.resolve_name("minilm@128:bf16") == "minilm@128:bf16"  # asked for by name: kept (and warned)
    monkeypatch.setattr(E, "_load", lambda model, device: model)
    assert E.get_embedder("minilm@128:auto") == want  # the loaded embedder is named by what it runs


def test_a_loaded_embedder_leaves_the_libraries_out_of_every_later_collection() -> None:
    """Each full collection in a query or an add() would otherwise walk torch's and the model's ~500k objects;
    what the process makes afterwards is still collected."""
    import gc

    import qgmem.embed as E

    E.get_embedder("minilm@128")
    assert gc.get_freeze_count() > 100_000
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1


def test_auto_precision_on_a_gpu_follows_its_bf16_support(monkeypatch) -> None:
    import torch

    import qgmem.embed as E

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for supported, want in ((True, "m:bf16"), (False, "m")):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda s=supported: s)
        assert E.resolve_name("m:auto", "cuda") == E.resolve_name("m:auto", "cuda:1") == want
    assert E.resolve_name("m:auto", "mps") == "m"


def test_attribute_columns_and_name_cells_give_the_unit_built_index_results() -> None:
    """The array-built index (very large memories) and IVF name cells answer as the index of AtomicUnits;
    name and time scores add up, ties keep names first, then time matches in start order."""
    from qgmem.retrieve.attributes import NO_END, NO_START, NameColumn

    enc = _Vocab()
    units = [_unit(0, ["Rex"], t0="2023-05-02", t1="2023-05-02"), _unit(1, ["Globex"], loc="Paris, France"),
             _unit(2, [], loc="London", t0="2023-05-03", t1="2023-05-04"),
             _unit(3, [], t0="2023-05-01", t1="2023-05-31"),
             _unit(4, ["my dog Rex"]), _unit(5, [], t0="2023-05-02", t1="2023-05-02")]
    by_units = AttributeIndex(units, enc, time_fallback_utterance=False)
    names = NameColumn.of_lists([[*u.entities, u.subject] for u in units])
    places = NameColumn.of_lists([[u.location] if u.location else [] for u in units])
    start = [738642, NO_START, 738643, 738641, NO_START, 738642]
    end = [738642, NO_END, 738644, 738671, NO_END, 738642]
    weight = np.asarray([1, 0, 1, 1, 0, 1], np.float32)
    cols = AttributeIndex.from_columns(6, enc, names, places, np.asarray(start), np.asarray(end), weight)
    cells = AttributeIndex(units, enc, time_fallback_utterance=False, name_cells_above=0)
    c = QueryConstraints(entities=["Rex"], time_start="2023-05-02", time_end="2023-05-03")
    want = by_units.search(c, [enc.vec("Rex")], None, 0.6, 10)
    # Rex + the day; the day alone (2.0) in start order; "my dog Rex" alone (0.8 * idf 1.39)
    assert [r for r, _ in want] == [0, 3, 5, 2, 4]
    assert want[0][1] == pytest.approx(want[4][1] / 0.8 + 2.0, rel=1e-6) and want[1][1] == want[3][1] == 2.0
    for ix in (cols, cells):
        assert ix.search(c, [enc.vec("Rex")], None, 0.6, 10) == want
        assert ix.search(QueryConstraints(location="Paris"), [], enc.vec("Paris"), 0.6, 10) == [(1, pytest.approx(
            by_units.search(QueryConstraints(location="Paris"), [], enc.vec("Paris"), 0.6, 10)[0][1]))]
