"""Shared fixtures. Benchmark data comes from $QGMEM_DATA_DIR (CI: ../shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qgmem.types import Conversation, Question, Session, Turn

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REDUCED = os.environ.get("QGMEM_REDUCED") == "1"  # CI runs slow tests in a reduced form


@pytest.fixture(scope="session")
def data_dir() -> Path:
    p = Path(os.environ.get("QGMEM_DATA_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    if not p.exists():
        pytest.skip(f"benchmark data directory not found: {p} (set QGMEM_DATA_DIR)")
    return p


@pytest.fixture
def tiny_conversation() -> Conversation:
    """Two sessions with a state change (job), a location, a relative date and an image turn."""
    s1 = Session(
        id="S1", date="2023-05-08T13:56", date_text="1:56 pm on 8 May, 2023",
        turns=[
            Turn("D1:1", "Alice", "Hi Bob! I started a new job at Acme Corp as a data analyst last week."),
            Turn("D1:2", "Bob", "Congrats! I went hiking in Yosemite yesterday with my sister Carol."),
            Turn("D1:3", "Alice", "Nice. My dog Rex turned 3 on 1 May, 2023."),
            Turn("D1:4", "Bob", "Happy birthday Rex! I am reading Dune right now."),
            Turn("D1:5", "Alice", "I love Dune. I live in Seattle now.", image_caption="a photo of a rainy street"),
            Turn("D1:6", "Bob", "Seattle is great. I am learning to play the guitar."),
            Turn("D1:7", "Alice", "Cool, good luck with the guitar."),
        ],
    )
    s2 = Session(
        id="S2", date="2023-08-20T10:00", date_text="10:00 am on 20 August, 2023",
        turns=[
            Turn("D2:1", "Alice", "Big news: I left Acme Corp and now work at Globex as a manager."),
            Turn("D2:2", "Bob", "Wow! I finished Dune and started reading Foundation."),
            Turn("D2:3", "Alice", "Last month I visited Paris with my mom."),
            Turn("D2:4", "Bob", "Paris sounds lovely."),
        ],
    )
    qs = [
        Question("q1", "Where does Alice work now?", ["Globex"], "4", evidence=["D2:1"], conversation_id="c1",
                 question_time="2023-09-01"),
        Question("q2", "When did Alice visit Paris?", ["July 2023"], "2", evidence=["D2:3"], conversation_id="c1",
                 question_time="2023-09-01"),
        Question("q3", "What is Bob reading?", ["Foundation"], "1", evidence=["D1:4", "D2:2"], conversation_id="c1"),
    ]
    return Conversation(id="c1", sessions=[s1, s2], questions=qs, speakers=["Alice", "Bob"])


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models run fastest single-threaded, above all on a shared CPU; the count is restored afterwards."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
