"""Fetch a missing benchmark file from its official source, checked against a sha256.

Users without the files get them on first use; an offline machine gets an error that names the file
and where to put it. Downloads go to a temporary file next to the target, are hashed while streaming
and only then renamed into place, so a killed or corrupted download never leaves a bad file behind.

Sources: LoCoMo from GitHub ``snap-research/locomo`` (pinned commit), BEAM from GitHub
``mohammadtavakoli78/BEAM`` (pinned commit; sha256 of every file in ``beam_sha256.tsv``), LongMemEval
from HF ``xiaowu0162/longmemeval-cleaned``. The LongMemEval copies in ``shared/data`` were rebuilt
from a mirror, so their sha256 is not that of the official files, and no official sha256 is published:
those downloads are accepted unverified (with a warning) and their sha256 is written next to them.
ConvoMem and FactConsolidation are read through `datasets` from the HF hub, which caches them itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

from tqdm import tqdm

from .errors import DataError

log = logging.getLogger(__name__)

LOCOMO_URL = ("https://raw.githubusercontent.com/snap-research/locomo/"
              "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376/data/locomo10.json")
BEAM_BASE = "https://raw.githubusercontent.com/mohammadtavakoli78/BEAM/b2a3ee8ba12d68f83143dda191097dc3e028ddd3/"
LME_BASE = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/"


@dataclass(frozen=True)
class RemoteFile:
    rel: str  # path under the data root
    url: str
    sha256: str | None  # None: no trustworthy published checksum
    size: int | None = None


class DownloadError(DataError):
    """A file could not be fetched (offline, HTTP error) or failed its checksum."""


def _beam_files(scale_dir: str) -> list[RemoteFile]:
    out = []
    table = (Path(__file__).with_name("beam_sha256.tsv")).read_text(encoding="utf-8")
    for line in table.splitlines():
        rel, size, sha = line.split("\t")
        if rel.startswith(f"chats/{scale_dir}/"):
            out.append(RemoteFile(f"beam/{rel}", BEAM_BASE + rel, sha, int(size)))
    return out


def sources(name: str) -> list[RemoteFile]:
    """The files a registry name needs, with where they come from."""
    if name == "locomo":
        return [RemoteFile("locomo/locomo10.json", LOCOMO_URL,
                           "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4", 2805274)]
    if name == "longmemeval-oracle":
        return [RemoteFile("longmemeval/longmemeval_oracle.json", LME_BASE + "longmemeval_oracle.json", None)]
    if name == "longmemeval-s":
        return [RemoteFile("longmemeval/longmemeval_s_cleaned.json", LME_BASE + "longmemeval_s_cleaned.json", None)]
    if name == "beam-128k":
        return _beam_files("100K")
    if name == "beam-500k":
        return _beam_files("500K")
    return []


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# our packed copy of the 35 BEAM 500K chats (shared/data); when present it replaces chats/500K/<n>/chat.json
BEAM_500K_PACKED = ("beam/beam_500K_chats.json.xz", "49e493a2dae48c162c0a6c0690954161272977616d479303263b3a415d0ffc03")


# the rebuilt copies in shared/data (see their README), accepted in place of the official files
LOCAL_COPIES: dict[str, tuple[str, str]] = {
    "beam-500k": BEAM_500K_PACKED,
    "longmemeval-oracle": ("longmemeval/longmemeval_oracle.json",
                           "db9dd414bc1ce15b55c2fa713bec8185ce4854d0f2b5fbc735c180f3e3a54f52"),
    "longmemeval-s": ("longmemeval/longmemeval_s_cleaned.498.json.xz",
                      "987e61d29c13256476d9242621785174a49bf489bdd287893e7166bb88557049"),
}


def _needed(name: str, root: Path) -> list[RemoteFile]:
    files = sources(name)
    copy = LOCAL_COPIES.get(name)
    if copy and (root / copy[0]).exists():
        if name == "beam-500k":
            files = [f for f in files if not f.rel.endswith("/chat.json")]
        else:
            files = []
    return files


Opener = Callable[[str], IO[bytes]]


def _default_opener(url: str) -> IO[bytes]:
    return urllib.request.urlopen(url, timeout=60)  # noqa: S310 (http(s) and file URLs only)


def _offline_for(url: str) -> bool:
    return "huggingface.co" in url and os.environ.get("HF_HUB_OFFLINE") == "1"


def fetch(rf: RemoteFile, root: str | Path, opener: Opener | None = None, progress: bool = True) -> Path:
    """Download one file into ``root/rf.rel``; raise DownloadError (with where to put it) on any failure."""
    dest = Path(root) / rf.rel
    hint = f"put {Path(rf.url).name} (from {rf.url}" + (f", sha256 {rf.sha256}" if rf.sha256 else "") + f") at {dest}"
    if _offline_for(rf.url):
        raise DownloadError(dest, "", f"file missing and HF_HUB_OFFLINE=1; {hint}")
    try:
        resp = (opener or _default_opener)(rf.url)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise DownloadError(dest, "", f"file missing and download failed ({reason}); {hint}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    h = hashlib.sha256()
    try:
        with resp, os.fdopen(fd, "wb") as out, tqdm(total=rf.size, unit="B", unit_scale=True,
                                                    desc=dest.name, disable=not progress) as bar:
            while True:
                try:
                    block = resp.read(1 << 20)
                except OSError as e:
                    raise DownloadError(dest, "", f"download interrupted ({e}); {hint}") from None
                if not block:
                    break
                out.write(block)
                h.update(block)
                bar.update(len(block))
            out.flush()
            os.fsync(out.fileno())
        got = h.hexdigest()
        if rf.sha256 and got != rf.sha256:
            raise DownloadError(dest, "", f"sha256 mismatch for {rf.url}: expected {rf.sha256}, got {got}; "
                                          f"the file was not saved. {hint}")
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if not rf.sha256:
        log.warning("%s: no published sha256; accepted unverified (sha256 %s written next to it)", dest, got)
        dest.with_name(dest.name + ".sha256").write_text(f"{got}  {dest.name}\n", encoding="utf-8")
    return dest


def ensure(name: str, root: str | Path, download: bool = True, opener: Opener | None = None) -> list[Path]:
    """Make sure every file of ``name`` exists under ``root``, fetching the missing ones if allowed."""
    paths = []
    for rf in _needed(name, Path(root)):
        dest = Path(root) / rf.rel
        if not dest.exists():
            if not download:
                raise DownloadError(dest, "", f"file missing; put {rf.url} at {dest} "
                                              f"(or run `qgmem data download {name}`)")
            fetch(rf, root, opener=opener)
        paths.append(dest)
    return paths


def check(name: str, root: str | Path) -> list[tuple[str, str]]:
    """(relative path, status) for each file of ``name``: ok / missing / mismatch / unverified."""
    out = []
    copy = LOCAL_COPIES.get(name)
    if copy and (Path(root) / copy[0]).exists():
        out.append((copy[0], "ok" if sha256_file(Path(root) / copy[0]) == copy[1] else "sha256 mismatch"))
    for rf in _needed(name, Path(root)):
        p = Path(root) / rf.rel
        if not p.exists():
            out.append((rf.rel, "missing"))
        elif rf.sha256 is None:
            out.append((rf.rel, "unverified (no published sha256)"))
        else:
            out.append((rf.rel, "ok" if sha256_file(p) == rf.sha256 else "sha256 mismatch"))
    return out
