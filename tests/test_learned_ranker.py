"""The learned pool ranker: features of a real pool, checkpoint round trip, retriever wiring, fitting."""

from __future__ import annotations

import numpy as np
import pytest

from qgmem.retrieve.config import RerankConfig, RetrievalConfig
from qgmem.retrieve.features import FEATURES, pool_features
from qgmem.retrieve.method import QGMemRetriever
from qgmem.retrieve.ranker import LearnedRanker, RankerCheckpointError, RankerSpec
from qgmem.training.ranker_fit import fit, mean_recall, turn_recall
from qgmem.training.rerank_config import FitConfig
from qgmem.training.rerank_pools import Pools

from test_retrieve_method import units_and_traces


def one_feature_ranker(name: str, sign: float = 1.0) -> LearnedRanker:
    """A ranker whose score is `sign` times one feature (identity hidden unit, ReLU-safe after the shift)."""
    f = len(FEATURES)
    j = FEATURES.index(name)
    w1 = np.zeros((f, 1), np.float32)
    w1[j, 0] = 1.0
    spec = RankerSpec(list(FEATURES), [0.0] * f, [1.0] * f, 1)
    return LearnedRanker(spec, {"w1": w1, "b1": np.asarray([100.0], np.float32),
                                "w2": np.asarray([[sign]], np.float32), "b2": np.zeros(1, np.float32)})


@pytest.fixture
def learned(tiny_conversation, tmp_path) -> QGMemRetriever:
    one_feature_ranker("bm25").save(tmp_path / "ranker")
    cfg = RetrievalConfig(rerank=RerankConfig(kind="learned", model=str(tmp_path / "ranker")))
    r = QGMemRetriever(None, cfg)
    units, traces = units_and_traces()
    r.index_units(tiny_conversation, units, traces)
    return r


def test_features_read_the_channels_evidence(learned, tiny_conversation):
    q = tiny_conversation.questions[2]  # What is Bob reading?
    view = learned.pool(q)
    idx = learned._index["c1"]
    x = pool_features(idx, view, learned.cfg.channel_depth)
    assert x.shape == (len(view.rows), len(FEATURES)) and np.isfinite(x).all()
    col = {n: j for j, n in enumerate(FEATURES)}
    best_lex = max(view.scores["lexical"], key=view.scores["lexical"].get)
    assert x[view.rows.index(best_lex), col["bm25"]] == pytest.approx(1.0)
    assert x[:, col["cosine_gap"]].max() == pytest.approx(0.0)
    assert np.allclose(x[:, col["fused_rank"]], np.log1p(np.arange(len(view.rows))))
    # the turn channels feed the ranker even though the fusion does not list them
    assert "turn-dense" not in learned.cfg.channels and view.ranks["turn-dense"]
    bob = [i for i, r in enumerate(view.rows) if idx.units[r].speaker == "Bob"]
    assert (x[bob, col["speaker_asked"]] == 1).all()


def test_learned_ranker_orders_the_whole_pool(learned, tiny_conversation):
    q = tiny_conversation.questions[2]
    view = learned.pool(q)
    wm = learned.activate(q, k=3)
    assert wm.meta["reranked"] == len(view.rows)
    lex = view.scores["lexical"]
    first = wm.items[0].unit
    assert lex.get(learned._index["c1"].row_of[first.id], 0.0) == max(lex.values())


def test_checkpoint_round_trip_and_refusals(tmp_path):
    r = one_feature_ranker("cosine", -1.0)
    r.save(tmp_path / "a")
    back = LearnedRanker.load(tmp_path / "a")
    x = np.random.default_rng(0).normal(size=(7, len(FEATURES))).astype(np.float32)
    assert np.allclose(back.score(x), r.score(x))
    assert np.argmax(back.score(x)) == np.argmin(x[:, FEATURES.index("cosine")])
    # weights taken from torch come as transposed views (Fortran order): they must load as they scored
    rng = np.random.default_rng(1)
    w1 = rng.normal(size=(8, len(FEATURES))).astype(np.float32).T
    f = len(FEATURES)
    dense = LearnedRanker(RankerSpec(list(FEATURES), [0.0] * f, [1.0] * f, 8),
                          {"w1": w1, "b1": np.zeros(8, np.float32), "w2": np.ones((8, 1), np.float32),
                           "b2": np.zeros(1, np.float32)})
    dense.save(tmp_path / "b")
    assert np.allclose(LearnedRanker.load(tmp_path / "b").score(x), dense.score(x))
    with pytest.raises(RankerCheckpointError, match="not a ranker checkpoint") as err:
        LearnedRanker.load(tmp_path / "missing")
    from qgmem.errors import UserError

    assert isinstance(err.value, UserError)  # one line and exit code 2 from the command line, no traceback
    spec = RankerSpec(list(FEATURES[:-1]) + ["something_else"], r.spec.mean, r.spec.std, 1)
    with pytest.raises(RankerCheckpointError, match="other features"):
        LearnedRanker(spec, {"w1": r.w1, "b1": r.b1, "w2": r.w2, "b2": r.b2})


def test_turn_recall_skips_covered_spans():
    turns = [["a"], ["a"], ["b"], ["c"]]
    assert turn_recall(np.arange(4), turns, ["a", "b"], 2) == 1.0  # the second "a" unit is skipped
    assert turn_recall(np.asarray([3, 0, 2, 1]), turns, ["a", "b"], 2) == 0.5


def synthetic_pools(n: int, seed: int) -> Pools:
    """Pools where the evidence row has a high "attribute" feature and a poor fusion rank."""
    rng = np.random.default_rng(seed)
    p = Pools.empty()
    for q in range(n):
        x = rng.normal(size=(20, len(FEATURES))).astype(np.float32)
        x[:, FEATURES.index("fused_rank")] = np.log1p(np.arange(20))
        gold = int(rng.integers(12, 20))
        x[gold, FEATURES.index("attribute")] += 4.0
        y = np.zeros(20, np.float32)
        y[gold] = 1
        p.x.append(x), p.y.append(y), p.qids.append(f"q{q}")
        p.turns.append([[f"t{i}"] for i in range(20)]), p.evidence.append([f"t{gold}"])
    return p


def test_fit_learns_what_fusion_misses_and_picks_on_dev():
    train, dev = synthetic_pools(60, 0), synthetic_pools(30, 1)
    res = fit(train, dev, FitConfig(hidden=[4, 8], epochs=60, eval_every=20, lr=0.05), k=5, info={})
    assert res.dev_fusion_recall == 0.0  # the evidence sits below the first 10 fused rows
    assert res.dev_recall == mean_recall(dev, [res.ranker.score(x) for x in dev.x], 5) >= 0.9
    assert res.hidden in (4, 8) and res.epoch in (20, 40, 60) and len(res.curve) == 6


def test_training_pools_see_the_features_the_ranker_sees_at_query_time(learned, tiny_conversation):
    """Collection runs without a ranker but must build the same turn channels the ranker reads."""
    plain = QGMemRetriever(None, RetrievalConfig(), turn_features=True)
    units, traces = units_and_traces()
    plain.index_units(tiny_conversation, units, traces)
    for q in tiny_conversation.questions:
        (a, xa, spans), (b, xb, _) = plain.pool_example(q), learned.pool_example(q)
        assert a.rows == b.rows and np.allclose(xa, xb)
        assert spans == [learned._index["c1"].units[r].turn_ids for r in b.rows]
    bare = QGMemRetriever(None, RetrievalConfig())
    bare.index_units(tiny_conversation, units, traces)
    assert bare._index["c1"].turns is None  # without the flag nothing extra is built


def test_train_config_is_checked_when_it_loads(tmp_path):
    from qgmem.config import ConfigError
    from qgmem.training.rerank_config import load_rerank_config

    cfg = load_rerank_config("configs/rerank/pool_mlp.yaml")
    assert cfg.train[0].exclude is not None and cfg.train[0].exclude.max_conversations == 100
    assert cfg.dev.subset.conversations == ["conv-26", "conv-30"]
    with pytest.raises(ConfigError, match="rerank.kind must be none"):
        load_rerank_config("configs/rerank/pool_mlp.yaml", ["retrieval.rerank.kind=learned"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("train: [{benchmark: nosuch}]\n")
    with pytest.raises(ConfigError, match=r"train\[0\].benchmark"):
        load_rerank_config(bad)
    with pytest.raises(ConfigError, match="name at least one source"):
        load_rerank_config(tmp_path / "bad.yaml", ["train=[]"])


def _msc_files(root, split: str, pairs: int) -> None:
    import json

    facts = [("My two dogs keep me busy every single day.", "I have two dogs."),
             ("I work nights as a nurse at the city hospital.", "I work as a nurse at night."),
             ("We drove to the lake for a long weekend of fishing.", "I like fishing at the lake."),
             ("My sister is getting married in Denver this June.", "My sister is getting married in June.")]
    for k in (1, 2, 3, 4):
        d = root / "msc" / "msc_personasummary" / f"session_{k}"
        d.mkdir(parents=True, exist_ok=True)
        eps = []
        for p in range(pairs):
            said, fact = facts[(k + p) % len(facts)]
            eps.append({"initial_data_id": f"{split}_{p}", "dialog": [
                {"id": "bot_0", "text": said, "persona_text": fact},
                {"id": "bot_1", "text": "That sounds lovely, tell me more about it.", "persona_text": ""},
                {"id": "bot_0", "text": "Sure, it has been a busy but happy time for all of us.", "persona_text": ""}]})
        (d / f"{split}.txt").write_text("".join(json.dumps(e) + "\n" for e in eps))


def test_train_reranker_writes_a_loadable_ranker_and_reuses_its_pools(tmp_path, monkeypatch, capsys):
    """`qgmem train-reranker` end to end on a small MSC-persona layout: pools, fit, checkpoint, card;
    a rerun finds every pool on disk and builds nothing."""
    from qgmem.cli import main

    for split in ("valid", "test"):
        _msc_files(tmp_path / "data", split, 2)
    cfg = tmp_path / "rr.yaml"
    cfg.write_text(f"""out: {tmp_path}/ranker
work_dir: {tmp_path}/work
data_dir: {tmp_path}/data
k: 2
train: [{{benchmark: msc-persona, data_options: {{split: valid}}, store_dir: {tmp_path}/store}}]
dev: {{benchmark: msc-persona, data_options: {{split: test}}, store_dir: {tmp_path}/store}}
fit: {{hidden: [4], epochs: 20, eval_every: 10}}
""")
    assert main(["train-reranker", "--config", str(cfg)]) == 0
    ranker = LearnedRanker.load(tmp_path / "ranker")
    report = __import__("json").loads((tmp_path / "ranker" / "train_report.json").read_text())
    assert report["data"]["train: msc-persona"]["questions"] == 8 and report["chosen_epoch"] in (10, 20)
    assert "qgmem train-reranker --config" in (tmp_path / "ranker" / "MODEL_CARD.md").read_text()
    pools = sorted(p.name for p in (tmp_path / "work").glob("*/*.npz"))
    assert len(pools) == 4  # two conversations per split, one file each
    import qgmem.retrieve.method as method

    monkeypatch.setattr(method.QGMemRetriever, "build", lambda *a: pytest.fail("a collected pool was rebuilt"))
    assert main(["train-reranker", "--config", str(cfg), "out=" + str(tmp_path / "again")]) == 0
    again = LearnedRanker.load(tmp_path / "again")
    assert np.array_equal(again.w1, ranker.w1)  # seeded: the same pools give the same ranker
