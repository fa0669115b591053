"""`qgmem data` command and the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgmem.cli import main
from qgmem.data import DATASET_NAMES, load_dataset_by_name

FIX = Path(__file__).parent / "fixtures" / "data"


@pytest.fixture
def fixture_root(tmp_path):
    """A data root in the layout the registry expects, built from the fixtures."""
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_bytes((FIX / "locomo" / "locomo_mini.json").read_bytes())
    (tmp_path / "convomem").symlink_to(FIX / "convomem")
    (tmp_path / "memoryagentbench").symlink_to(FIX / "memoryagentbench")
    return tmp_path


def test_stats_json(fixture_root, capsys):
    assert main(["data", "stats", "locomo", "--data-dir", str(fixture_root), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert (st["conversations"], st["sessions"], st["turns"], st["questions"]) == (2, 3, 7, 7)
    assert st["questions_by_category"] == {"4": 2, "2": 1, "1": 1, "3": 1, "5": 2}
    assert st["unmatched_evidence"] == 2 and st["abstention"] == 2


def test_stats_table(fixture_root, capsys):
    assert main(["data", "stats", "factconsolidation-mh", "--data-dir", str(fixture_root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("factconsolidation-mh\n")
    lines = {ln.split("   ")[0].strip(): ln.split()[-1] for ln in out.splitlines() if "   " in ln}
    assert lines["turns"] == "3" and lines["questions"] == "1" and lines["category factconsolidation_mh_6k"] == "1"


def test_registry_names_and_local_hub_sets(fixture_root):
    assert set(DATASET_NAMES) >= {"locomo", "longmemeval-oracle", "longmemeval-s", "beam-128k", "beam-500k",
                                  "convomem", "factconsolidation-sh", "factconsolidation-mh"}
    assert len(load_dataset_by_name("convomem", fixture_root)) == 3
    assert [c.id for c in load_dataset_by_name("locomo", fixture_root, limit=1)] == ["conv-a"]
    (sh,) = load_dataset_by_name("factconsolidation-sh", fixture_root, sizes=["6k"])
    assert sh.id == "factconsolidation_sh_6k"
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        load_dataset_by_name("nope", fixture_root)


def test_missing_data_is_exit_code_2_with_message(tmp_path, capsys):
    assert main(["data", "stats", "locomo", "--data-dir", str(tmp_path), "--no-download"]) == 2
    err = capsys.readouterr().err
    assert "locomo10.json: file missing; put" in err


@pytest.mark.data
def test_stats_on_real_locomo(data_dir, capsys):
    assert main(["data", "stats", "locomo", "--data-dir", str(data_dir), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert (st["conversations"], st["sessions_with_turns"], st["turns"], st["questions"]) == (10, 272, 5882, 1986)
    assert st["unmatched_evidence"] == 3


@pytest.mark.data
def test_check_on_real_beam(data_dir, capsys):
    assert main(["data", "check", "beam-128k", "--data-dir", str(data_dir)]) == 0
    assert "40/40 file(s) present" in capsys.readouterr().out


def test_offline_hub_data_set_names_the_local_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["data", "stats", "factconsolidation-sh", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"put it under {tmp_path}/memoryagentbench/" in err and "Conflict_Resolution" in err


def test_conversations_json_errors_name_file_and_record(tmp_path, tiny_conversation):
    import dataclasses

    from qgmem.data.errors import DataError
    from qgmem.data.registry import load_conversations_json, select_conversations

    p = tmp_path / "convs.json"
    p.write_text(json.dumps([dataclasses.asdict(tiny_conversation), {"id": "broken"}]))
    with pytest.raises(DataError, match=r"convs\.json: conversation \[1\]"):
        load_conversations_json(p)
    p.write_text(json.dumps(dataclasses.asdict(tiny_conversation)))
    (conv,) = load_conversations_json(p)
    assert conv.turns()[0].text == tiny_conversation.turns()[0].text
    with pytest.raises(ValueError, match="unknown conversation id"):
        select_conversations([conv], ["nope"])
