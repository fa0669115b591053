"""Rankings do not depend on the CPU's vector features nor on k: ties go by score, then document order.

NumPy's selection and sort kernels dispatch on the CPU (AVX2, AVX-512, ...), and each kernel picks other
members among tied scores; a retrieval that left ties to them gave other rankings on other machines. The
subprocess test switches NumPy's runtime dispatch off (and torch's) and must get the same rankings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qgmem.ranking import top_k, top_k_rows

ROOT = Path(__file__).resolve().parents[1]

# Many documents tie: filler sessions repeat identical turns, as LongMemEval-S haystacks do.
_SCRIPT = r"""
import json, sys
import numpy as np
from qgmem.retrieve.lexical import LexicalIndex
from qgmem.retrieve.dense import DenseIndex, exact_top_k
from qgmem.testing.hash_embedder import HashEmbedder

filler = ["I went for a walk in the park today", "we cooked pasta for dinner", "the weather was nice",
          "my cat sleeps all day", "I read a book about the sea"]
docs = [filler[i % len(filler)] + (" and the park was quiet" if i % 7 == 0 else "") for i in range(3000)]
lex = LexicalIndex(docs)
emb = HashEmbedder(64)
dense = DenseIndex(emb.encode(docs), ann_threshold=10**9)
q = emb.encode(["a walk in the park"])[0]
out = {"lexical": {k: [i for i, _ in lex.search("walk park quiet", k)] for k in (5, 50, 400)},
       "dense": {k: [i for i, _ in dense.search(q, k)] for k in (5, 50, 400)},
       "exact": exact_top_k([emb.encode(docs[:1500]), emb.encode(docs[1500:])], q[None], 50)[0].tolist()}

import qgmem.embed
import qgmem.baselines.dense_turns
from qgmem.baselines.bm25_turns import BM25Turns
from qgmem.llm.scripted import ScriptedBackend
from qgmem.pipeline import MemoryPipeline
from qgmem.types import Conversation, Question, Session, Turn
qgmem.embed.get_embedder = qgmem.baselines.dense_turns.get_embedder = lambda name="minilm", device=None: emb
sessions = [Session(f"S{s}", f"2023-0{1 + s % 9}-1{s % 10}",
                    [Turn(f"D{s}:{t}", ("Ann", "Ben")[t % 2], filler[(s + t) % len(filler)]) for t in range(1, 9)]
                    + [Turn(f"D{s}:9", "Ann", f"I started a new job at Studio {s} and I walk to the park")])
            for s in range(1, 5)]
conv = Conversation("c1", sessions, [], speakers=["Ann", "Ben"])
pipe = MemoryPipeline(llm=ScriptedBackend([]), store_dir=sys.argv[1])
pipe.add(conv)
qs = ["Where does Ann work now?", "What did Ann cook for dinner?", "Who walks in the park?"]
out["pipeline"] = [[it.turn_ids for it in pipe.working_memory(q, "c1").items] for q in qs]
bm = BM25Turns()
bm.build(conv)
out["bm25-turns"] = [bm.activate(Question(f"q{i}", q, [], "1", conversation_id="c1")).turn_ids()
                     for i, q in enumerate(qs)]
json.dump(out, sys.stdout)
"""


def _run_all(envs: list[dict[str, str]], tmp: Path) -> list[dict]:
    """The script under each environment, in parallel processes (each loads spaCy and torch)."""
    procs = [subprocess.Popen([sys.executable, "-c", _SCRIPT, str(tmp / f"store{i}")],
                              env={**os.environ, **e, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i, e in enumerate(envs)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        outs.append(json.loads(out))
    return outs


def _dispatch_features() -> str:
    """The CPU features NumPy dispatches to on this machine (the ones that can be switched off)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))


def test_retrieval_rankings_are_identical_with_cpu_dispatch_switched_off(tmp_path):
    feats = _dispatch_features()
    if not feats:
        pytest.skip("this CPU has no NumPy dispatch target above the baseline to switch off")
    default, baseline = _run_all([{}, {"NPY_DISABLE_CPU_FEATURES": feats, "ATEN_CPU_CAPABILITY": "default"}],
                                 tmp_path)
    assert default == baseline
    assert all(len(wm) == 10 for wm in default["pipeline"] + default["bm25-turns"])
    for channel in ("lexical", "dense"):
        r = default[channel]
        assert r["5"] == r["50"][:5] and r["50"] == r["400"][:50]  # a top-5 is a prefix of the top-50
        assert len(set(r["400"])) == len(r["400"])


def test_top_k_is_score_then_position_and_a_prefix_of_any_larger_k():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        s = np.round(rng.random(4000), 1).astype(dtype)  # 11 distinct values: hundreds of ties each
        ref = np.lexsort((np.arange(len(s)), -s))
        for k in (1, 5, 17, 50, 399, 4000, 5000):
            assert top_k(s, k).tolist() == ref[:k].tolist()
    key = rng.permutation(10)
    assert top_k(np.ones(10), 3, key=key).tolist() == np.argsort(key)[:3].tolist()
    assert top_k(np.zeros(0), 3).tolist() == [] and top_k(np.ones(3), 0).tolist() == []
    m = np.round(rng.random((3, 200)), 1)
    assert top_k_rows(m, 7).tolist() == [np.lexsort((np.arange(200), -row))[:7].tolist() for row in m]


def test_a_query_vector_does_not_depend_on_what_was_asked_before(monkeypatch):
    """Batched encoding moves a text's vector with its companions (padding, kernel shapes); the query cache
    must not let the order of questions decide which companions a text had."""
    from collections import OrderedDict

    from qgmem.retrieve import qcache

    class BatchSensitive:  # stands in for a transformer: the vector moves with the batch it was encoded in
        name = "batch-sensitive"

        def encode(self, texts):
            return np.asarray([[len(t), len(texts)] for t in texts], dtype=np.float32)

    emb = BatchSensitive()
    monkeypatch.setattr(qcache, "_CACHE", OrderedDict())
    first, _ = qcache.encode_queries(emb, ["Where does Ann work?", "Ann", "Paris"])
    monkeypatch.setattr(qcache, "_CACHE", OrderedDict())
    qcache.encode_queries(emb, ["Who is Ann?", "Ann"])  # "Ann" first met in another batch
    later, _ = qcache.encode_queries(emb, ["Where does Ann work?", "Ann", "Paris"])
    assert np.array_equal(first, later)
