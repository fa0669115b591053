"""The dependency-floor check of `make test-floors` (.ci/check_floors.py): it catches drift."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _check():
    spec = importlib.util.spec_from_file_location("check_floors", ROOT / ".ci" / "check_floors.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_direct_dependency_has_a_floor() -> None:
    check = _check()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = list(pyproject["project"].get("optional-dependencies", {}))
    reqs = check.direct_requirements(pyproject, extras)
    assert reqs and all(check.floor(r) is not None for r in reqs), [str(r) for r in reqs if check.floor(r) is None]


def test_mismatches_name_each_drift() -> None:
    check = _check()
    installed = {"torch": "2.13.0+cpu", "numpy": "2.0.1", "spacy": "3.8.2", "pyyaml": "6.0"}.get
    reqs = [Requirement(s) for s in (
        "torch>=2.13.0",  # local label ignored: agrees
        "numpy>=2.0.0",  # resolver raised it: drift
        "spacy>=3.8.2,<3.9",  # agrees
        "pyyaml",  # no floor
        "absent>=1.0",  # not installed
        "winonly>=1.0; sys_platform == 'nonexistent'",  # marker false: not checked
    )]
    bad = check.mismatches(reqs, installed)
    assert len(bad) == 3
    assert "numpy: installed 2.0.1, floor 2.0.0" in bad[0]
    assert bad[1].startswith("pyyaml: no floor") and bad[2].startswith("absent: not installed")
    assert check.mismatches(reqs[:1] + reqs[2:3], installed) == []


def test_an_extra_naming_the_project_brings_its_lines() -> None:
    check = _check()
    pyproject = {"project": {"name": "qgmem", "dependencies": ["numpy>=2.0.0"], "optional-dependencies": {
        "serve": ["httpx>=0.28.0"], "test": ["pytest>=8.0.0", "qgmem[serve]"]}}}
    names = [r.name for r in check.direct_requirements(pyproject, ["test", "serve"])]
    assert names == ["numpy", "pytest", "httpx"]
