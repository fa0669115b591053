"""Check that a lowest-versions install put every direct dependency exactly at its pyproject floor.

`make test-floors` installs the project with `uv pip install --resolution lowest-direct` and runs the
fast suite there; this check, run in that venv, makes the floors in pyproject.toml the versions that
were tested: a floor the resolver had to raise (another package needs more), a direct dependency without
a floor, or one missing from the venv is a failure.

usage: python .ci/check_floors.py [pyproject.toml] [--extras test,serve]
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version


def direct_requirements(pyproject: dict, extras: Iterable[str]) -> list[Requirement]:
    """[project.dependencies] plus the named extras, as parsed requirements (unknown extra: KeyError).

    An extra that names the project itself (`qgmem[serve]`) brings that extra's lines, once.
    """
    project = pyproject["project"]
    optional = project.get("optional-dependencies", {})
    reqs = [Requirement(line) for line in project.get("dependencies", [])]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        for req in map(Requirement, optional[extra]):
            if req.name == project["name"]:
                todo += sorted(req.extras)
            else:
                reqs.append(req)
    return reqs


def floor(req: Requirement) -> Version | None:
    """The lowest version `req` allows: its `>=` or `==` bound (None when it states none)."""
    lows = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
    return max(lows) if lows else None


def mismatches(reqs: Iterable[Requirement], installed: Callable[[str], str | None]) -> list[str]:
    """One line per requirement whose installed version is not its floor; [] when all agree.

    A local version label (torch's `+cpu`) is not part of the comparison.
    """
    bad = []
    for req in reqs:
        if req.marker is not None and not req.marker.evaluate():
            continue
        low = floor(req)
        got = installed(req.name)
        if low is None:
            bad.append(f"{req.name}: no floor in pyproject.toml ({req}); give it `>=` the lowest tested version")
        elif got is None:
            bad.append(f"{req.name}: not installed (floor {low})")
        elif Version(Version(got).public) != low:
            bad.append(f"{req.name}: installed {got}, floor {low}; set the floor to {Version(got).public}")
    return bad


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pyproject", nargs="?", default="pyproject.toml")
    ap.add_argument("--extras", default="", help="comma-separated extras the step installed")
    args = ap.parse_args(argv)
    path = Path(args.pyproject)
    reqs = direct_requirements(tomllib.loads(path.read_text()), [e for e in args.extras.split(",") if e])
    for req in reqs:
        print(f"  {req.name:<26} floor {floor(req)!s:<12} installed {_installed(req.name)}")
    bad = mismatches(reqs, _installed)
    for line in bad:
        print(f"{path}: {line}", file=sys.stderr)
    if not bad:
        print(f"{path}: all {len(reqs)} direct dependencies installed at their floors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
