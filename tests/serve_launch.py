"""Start `qgmem serve` the way the serve tests need it: `python tests/serve_launch.py [--hash-embedder]
[--scripted-answer TEXT] -- <qgmem serve arguments>`.

`--hash-embedder` makes the retrieval embedder the tests' hashed bag-of-words (fast, no model load);
`--scripted-answer` answers every question with TEXT through the scripted chat backend (whose replies
name the working memory's first label, so citations can be checked). Everything else is the real command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--hash-embedder", action="store_true")
    p.add_argument("--scripted-answer", default=None)
    own, rest = p.parse_known_args()
    if rest and rest[0] == "--":
        rest = rest[1:]
    if own.hash_embedder:
        import qgmem.embed
        from qgmem.testing.hash_embedder import HashEmbedder

        emb = HashEmbedder()
        qgmem.embed.get_embedder = lambda name="minilm", device=None: emb
    llm = None
    if own.scripted_answer is not None:
        from qgmem.llm.scripted import ScriptedBackend

        text = own.scripted_answer
        llm = ScriptedBackend(lambda req: f"From [M1].\nAnswer: {text}")
    from qgmem.errors import run_entry_point
    from qgmem.serve import cli

    def go(argv: list[str]) -> int:
        sub = argparse.ArgumentParser(prog="qgmem serve")
        cli.add_arguments(sub)
        return cli.run(sub.parse_args(argv), llm=llm)

    return run_entry_point("qgmem serve", go, rest)


if __name__ == "__main__":
    sys.exit(main())
