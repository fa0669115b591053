"""A memory that lasts: each scenario a user hit (issue "A memory that lasts", numbered as there),
through the public API (`MemoryPipeline`) and the `qgmem` command."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from qgmem.cli import main
from qgmem.construct.build import BuildConfig, build_memory
from qgmem.llm.scripted import ScriptedBackend
from qgmem.pipeline import MemoryIncomplete, MemoryPipeline
from qgmem.retrieve.config import RetrievalConfig
from qgmem.store import MemoryStore, StoreBusy, StoreError
from qgmem.testing.openai_server import Fault, OpenAIServer
from qgmem.types import Conversation, Session, Turn

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]


def _pipe(store_dir: Path, **kw) -> MemoryPipeline:
    retrieval = RetrievalConfig(k=5)
    retrieval.rerank.kind = "none"
    return MemoryPipeline(llm=ScriptedBackend(["unused"]), store_dir=store_dir, retrieval=retrieval, k=5, **kw)


def _texts(pipe: MemoryPipeline, ns: str) -> list[str]:
    return [u.text for u in pipe.store.units(ns)]


def _session(i: int, n: int, date: str) -> Session:
    return Session(f"session_{i}", date, [Turn(f"D{i}:{j}", "Ann" if j % 2 else "Ben", f"In session {i} turn {j} "
                                               f"I talked about hobby number {i * 10 + j}.") for j in range(1, n + 1)])


def test_1_a_new_pipeline_on_an_existing_store_serves_it_without_add(tmp_path, tiny_conversation) -> None:
    with _pipe(tmp_path) as pipe:
        wm1 = pipe.add(tiny_conversation).working_memory("Where does Alice work now?", "c1")
    with _pipe(tmp_path) as again:
        assert again.namespaces() == ["c1"]
        wm2 = again.working_memory("Where does Alice work now?", "c1")
    assert [(it.label, it.text, it.turn_ids) for it in wm1.items] == [(it.label, it.text, it.turn_ids) for it in wm2.items]


def test_1_build_in_one_process_query_in_another_gives_identical_working_memories(tmp_path, tiny_conversation) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(dataclasses.asdict(tiny_conversation)))
    script = textwrap.dedent(f"""
        import json, sys
        from qgmem.pipeline import MemoryPipeline
        from qgmem.retrieve.config import RetrievalConfig
        from qgmem.llm.scripted import ScriptedBackend
        from qgmem.types import conversation_from_dict
        r = RetrievalConfig(k=5); r.rerank.kind = "none"
        pipe = MemoryPipeline(llm=ScriptedBackend([]), store_dir={str(tmp_path / 'store')!r}, retrieval=r, k=5)
        if sys.argv[1] == "build":
            pipe.add(conversation_from_dict(json.load(open({str(conv)!r}))))
        wm = pipe.working_memory("Where does Alice work now?", "c1")
        print(json.dumps([[it.label, it.text, it.turn_ids, round(it.score, 6)] for it in wm.items]))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = [subprocess.run([sys.executable, "-c", script, step], capture_output=True, text=True, env=env,
                          timeout=300, check=True).stdout.strip().splitlines()[-1] for step in ("build", "query")]
    assert json.loads(out[0]) == json.loads(out[1]) and json.loads(out[0])


def test_2_adding_a_new_session_in_a_new_process_keeps_the_old_ones(tmp_path) -> None:
    conv = Conversation("u1", [_session(i, 4, f"2023-01-0{i}") for i in range(1, 6)], speakers=["Ann", "Ben"])
    with _pipe(tmp_path) as pipe:
        pipe.add(conv)
        before = _texts(pipe, "u1")
    with _pipe(tmp_path) as pipe:
        pipe.add([_session(6, 4, "2023-01-06")], namespace="u1")
        stored = pipe.store.get_conversation("u1")
        assert [s.id for s in stored.sessions] == [f"session_{i}" for i in range(1, 7)]
        after = _texts(pipe, "u1")
    assert after[: len(before)] == before and len(after) > len(before)
    assert all(u for u in after)


def test_3_an_edited_turn_changes_the_memory_and_the_old_text_is_gone(tmp_path, tiny_conversation) -> None:
    tiny_conversation.sessions[1].turns[0].text = "Big news: I left Acme Corp and now work at Google as a manager."
    with _pipe(tmp_path) as pipe:
        pipe.add(tiny_conversation)
        assert any("Google" in t for t in _texts(pipe, "c1"))
        edited = dataclasses.replace(tiny_conversation.sessions[1], turns=[
            dataclasses.replace(t, text=t.text.replace("Google", "Microsoft")) for t in tiny_conversation.sessions[1].turns])
        pipe.add([edited], namespace="c1")
        texts = _texts(pipe, "c1")
        wm = pipe.working_memory("Where does Alice work now?", "c1")
    assert any("Microsoft" in t for t in texts) and not any("Google" in t for t in texts)
    assert not any("Google" in it.text or "Google" in it.source_text for it in wm.items)


def test_4_a_growing_session_extracts_its_new_turns(tmp_path) -> None:
    with _pipe(tmp_path) as pipe:
        pipe.add(Conversation("u2", [_session(1, 5, "2023-02-01")], speakers=["Ann", "Ben"]))
        assert not any("hobby number 16" in t for t in _texts(pipe, "u2"))
        pipe.add([_session(1, 8, "2023-02-01")], namespace="u2")
        texts = _texts(pipe, "u2")
    for j in (6, 7, 8):
        assert any(f"hobby number {10 + j}" in t for t in texts), j
    assert len(texts) == len(set(texts)), "no unit extracted twice"


def test_5_a_partial_memory_is_refused_unless_allowed(tmp_path, tiny_conversation) -> None:
    down = {"on": True}

    def reply(req):
        content = req.messages[0]["content"]
        if down["on"] and "[D2:1] [NEW]" in content:
            return RuntimeError("connection refused")
        return json.dumps({"units": []})

    retrieval = RetrievalConfig(k=5, extractor="llm")
    retrieval.rerank.kind = "none"
    with MemoryPipeline(llm=ScriptedBackend(reply), store_dir=tmp_path, retrieval=retrieval) as pipe:
        with pytest.raises(MemoryIncomplete, match=r"namespace .c1.: 1 window\(s\) could not be extracted"):
            pipe.add(tiny_conversation)
    with MemoryPipeline(llm=ScriptedBackend(reply), store_dir=tmp_path, retrieval=retrieval,
                        allow_partial=True) as pipe:
        pipe.working_memory("Where does Alice work now?", "c1")  # accepted: the caller said partial is fine
    with MemoryPipeline(llm=ScriptedBackend(reply), store_dir=tmp_path, retrieval=retrieval) as pipe:
        with pytest.raises(MemoryIncomplete, match="build again"):  # reading never rebuilds
            pipe.working_memory("Where does Alice work now?", "c1")
    down["on"] = False
    with MemoryPipeline(llm=ScriptedBackend(reply), store_dir=tmp_path, retrieval=retrieval) as pipe:
        pipe.add(tiny_conversation)  # the failed window is retried and succeeds
        pipe.working_memory("Where does Alice work now?", "c1")


def test_6_a_truncated_http_reply_is_recorded_not_a_traceback(tmp_path, tiny_conversation, capsys) -> None:
    f = tmp_path / "c.json"
    f.write_text(json.dumps([dataclasses.asdict(tiny_conversation)]))
    with OpenAIServer(lambda req: Fault("truncate")) as srv:
        code = main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--no-progress", "--extractor", "llm",
                     "--llm-backend", "openai", "--base-url", srv.base_url, "--llm-model", "m",
                     "--set", "llm.max_retries=1", "llm.backoff_base_s=0.01", "llm.cache=false"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "IncompleteRead" in err


def test_7_other_extraction_settings_rebuild_instead_of_reusing_units(tmp_path, tiny_conversation) -> None:
    store = MemoryStore(tmp_path)
    units6, _ = build_memory(tiny_conversation, "rule", store=store)
    units4, _ = build_memory(tiny_conversation, "rule", store=store, config=BuildConfig(window_size=4))
    assert {u.id.split("/")[1] for u in units4} != {u.id.split("/")[1] for u in units6}
    fresh, _ = build_memory(tiny_conversation, "rule", store=MemoryStore(tmp_path / "f"),
                            config=BuildConfig(window_size=4))
    assert [dataclasses.asdict(u) for u in units4] == [dataclasses.asdict(u) for u in fresh]
    llm_units = json.dumps({"units": []})
    units_llm, _ = build_memory(tiny_conversation, "llm", llm=ScriptedBackend(lambda r: llm_units), store=store,
                                config=BuildConfig(extractor="llm", consolidation="rule"))
    assert units_llm == [] and store.units("c1") == [], "no rule unit is served as an LLM unit"


def test_10_a_corrupt_store_is_one_line_exit_2(tmp_path, tiny_conversation, capsys) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "store.sqlite").write_bytes(b"this is not a database" * 100)
    f = tmp_path / "c.json"
    f.write_text(json.dumps([dataclasses.asdict(tiny_conversation)]))
    assert main(["build", "--input", str(f), "--store", str(tmp_path / "s"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "store.sqlite: not a readable qgmem store" in err[0]
    with pytest.raises(StoreError, match="not a readable qgmem store"):
        MemoryStore(tmp_path / "s")


def test_opening_a_store_to_query_never_rebuilds_it_with_other_settings(tmp_path, tiny_conversation) -> None:
    """A store built with window size 4 (e.g. by `qgmem build --set window_size=4`) is served as built;
    adding to it keeps its settings."""
    store = MemoryStore(tmp_path)
    built, _ = build_memory(tiny_conversation, "rule", store=store, config=BuildConfig(window_size=4))
    store.close()
    with _pipe(tmp_path) as pipe:
        pipe.working_memory("Where does Alice work now?", "c1")
        assert [u.id for u in pipe.store.units("c1")] == [u.id for u in built]
        pipe.add([Session("S3", "2023-09-02", [Turn("D3:1", "Alice", "I adopted a cat named Rex.")])], namespace="c1")
        assert [u.id for u in pipe.store.units("c1")][: len(built)] == [u.id for u in built]


def test_12_a_second_writer_is_refused_with_the_holder(tmp_path, tiny_conversation) -> None:
    a, b = MemoryStore(tmp_path), MemoryStore(tmp_path)
    with a.writer():
        with pytest.raises(StoreBusy, match=rf"store is being built by PID {os.getpid()}"):
            build_memory(tiny_conversation, "rule", store=b)
    build_memory(tiny_conversation, "rule", store=b)  # free again


def test_12_a_build_with_nothing_to_do_needs_no_write_lock(tmp_path, tiny_conversation) -> None:
    """Two evaluations reading one built store do not collide; a build with work to do still waits its turn."""
    a, b = MemoryStore(tmp_path), MemoryStore(tmp_path)
    built, traces = build_memory(tiny_conversation, "rule", store=a)
    with a.writer():
        assert build_memory(tiny_conversation, "rule", store=b) == (built, traces)
        tiny_conversation.sessions[0].turns[0].text = "I work at Initech now."
        with pytest.raises(StoreBusy):
            build_memory(tiny_conversation, "rule", store=b)


def test_12_a_pipeline_without_store_dir_leaves_nothing_behind(tiny_conversation) -> None:
    pipe = _pipe(None).add(tiny_conversation)  # type: ignore[arg-type]
    root = Path(pipe.store.root)
    assert root.exists()
    pipe.close()
    assert not root.exists()


def test_history_returns_the_trace_of_a_unit_and_forget_works_through_the_pipeline(tmp_path) -> None:
    jobs = [("Acme", "a baker", "I bought a red bike."), ("Globex", "a manager", "I visited Oslo with my sister."),
            ("Initech", "a director", "I adopted a cat named Rex.")]
    conv = Conversation("h", [Session(f"S{i}", f"2023-0{2 * i}-01", [
        Turn(f"D{i}:1", "Ann", f"I work at {firm} as {role} now."), Turn(f"D{i}:2", "Ben", ben)])
        for i, (firm, role, ben) in enumerate(jobs, start=1)], speakers=["Ann", "Ben"])
    with _pipe(tmp_path) as pipe:
        pipe.add(conv)
        (trace,) = [t for t in pipe.store.traces("h") if t.subject == "Ann"]  # Ben's bike and cat are another
        assert trace.relation == "employment"
        hist = pipe.history(trace.unit_ids[0])
        assert [u.id for u in hist] == trace.unit_ids and [u.trace_role for u in hist] == ["origin", "update", "update"]
        assert [u.superseded for u in hist] == [True, True, False] and "Initech" in hist[-1].text
        lone = next(u for u in pipe.store.units("h") if u.trace_id is None)
        assert pipe.history(lone.id) == [lone]
        pipe.forget("h", turn_ids=["D3:1"])
        assert all("Initech" not in u.text for u in pipe.store.units("h"))
        (trace,) = [t for t in pipe.store.traces("h") if t.subject == "Ann"]
        assert "Globex" in pipe.history(trace.latest_unit_id)[-1].text  # the latest state is the one left
        pipe.working_memory("Where does Ann work now?", "h")  # re-indexed after forgetting
        pipe.forget("h")
        assert pipe.namespaces() == []


def test_forget_from_the_command_line(tmp_path, tiny_conversation, capsys) -> None:
    store = MemoryStore(tmp_path)
    build_memory(tiny_conversation, "rule", store=store)
    store.close()
    assert main(["forget", "--store", str(tmp_path), "--namespace", "c1", "--session", "S2"]) == 0
    assert "forgot session 'S2' of 'c1'" in capsys.readouterr().out
    with MemoryStore(tmp_path) as st:
        assert {u.session_id for u in st.units("c1")} == {"S1"}
    assert main(["forget", "--store", str(tmp_path), "--namespace", "c1", "--turns", "D7:1"]) == 2
    assert capsys.readouterr().err.strip() == f"qgmem forget: {tmp_path}: namespace 'c1' has no turn(s) ['D7:1']"
    assert main(["forget", "--store", str(tmp_path), "--namespace", "nobody"]) == 2
    with pytest.raises(StoreError):
        main(["forget", "--store", str(tmp_path), "--namespace", "nobody", "--debug"])


def test_12_a_question_without_namespace_is_an_error_not_the_last_built_conversation(tmp_path, tiny_conversation) -> None:
    from qgmem.retrieve.method import QGMemRetriever
    from qgmem.types import Question

    r = RetrievalConfig()
    r.rerank.kind = "none"
    retriever = QGMemRetriever(MemoryStore(tmp_path), r)
    retriever.build(tiny_conversation)
    with pytest.raises(ValueError, match="names no conversation"):
        retriever.activate(Question("q", "Where does Alice work?", [], "1"))


def test_10_non_utf8_benchmark_file_in_data_stats_is_one_line(tmp_path, capsys) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_bytes(b'[{"sample_id": "c\xff"}]')
    assert main(["data", "stats", "locomo", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "locomo10.json" in err[0] and "not UTF-8 text" in err[0]
