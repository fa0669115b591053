"""Download: sha256-checked, atomic, and offline gives an error naming the file and where it goes."""

from __future__ import annotations

import hashlib
import io
import urllib.error
from pathlib import Path

import pytest

from qgmem.data import download as dl
from qgmem.data import load_dataset_by_name
from qgmem.data.download import DownloadError, RemoteFile

FIX = Path(__file__).parent / "fixtures" / "data"


def _remote(src: Path, rel: str, sha: str | None) -> RemoteFile:
    return RemoteFile(rel, src.resolve().as_uri(), sha, src.stat().st_size)


def test_file_url_download_with_matching_checksum(tmp_path):
    src = FIX / "locomo" / "locomo_mini.json"
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    dest = dl.fetch(_remote(src, "locomo/locomo10.json", sha), tmp_path, progress=False)
    assert dest == tmp_path / "locomo" / "locomo10.json"
    assert dest.read_bytes() == src.read_bytes()
    assert list(dest.parent.iterdir()) == [dest]  # no temp file left


def test_checksum_mismatch_leaves_no_file(tmp_path):
    src = FIX / "locomo" / "locomo_mini.json"
    with pytest.raises(DownloadError, match="sha256 mismatch.*expected 0+, got [0-9a-f]{64}") as e:
        dl.fetch(_remote(src, "locomo/locomo10.json", "0" * 64), tmp_path, progress=False)
    assert "locomo10.json" in str(e.value)
    assert list((tmp_path / "locomo").iterdir()) == []


def test_unverified_download_records_its_sha256(tmp_path):
    src = FIX / "longmemeval" / "longmemeval_mini.json"
    dest = dl.fetch(_remote(src, "longmemeval/longmemeval_oracle.json", None), tmp_path, progress=False)
    side = dest.with_name("longmemeval_oracle.json.sha256").read_text()
    assert side.split()[0] == hashlib.sha256(src.read_bytes()).hexdigest()


def test_offline_error_says_which_file_to_put_where(tmp_path):
    def offline(url):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    with pytest.raises(DownloadError) as e:
        dl.ensure("locomo", tmp_path, opener=offline)
    msg = str(e.value)
    assert "download failed" in msg and "name resolution" in msg
    assert f"at {tmp_path / 'locomo' / 'locomo10.json'}" in msg
    assert dl.LOCOMO_URL in msg and "79fa87e9" in msg
    assert not (tmp_path / "locomo").exists()


def test_interrupted_download_leaves_no_file(tmp_path):
    class Broken(io.BytesIO):
        def read(self, n=-1):
            if self.tell() > 10:
                raise ConnectionResetError("reset by peer")
            return super().read(11)

    with pytest.raises(DownloadError, match="interrupted"):
        dl.fetch(RemoteFile("x/f.json", "http://example.invalid/f.json", None), tmp_path,
                 opener=lambda url: Broken(b"0123456789abcdefghij"), progress=False)
    assert list((tmp_path / "x").iterdir()) == []


def test_hf_offline_is_respected_without_trying(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    called = []
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE=1; put longmemeval_oracle.json"):
        dl.ensure("longmemeval-oracle", tmp_path, opener=lambda url: called.append(url))
    assert called == []


def test_registry_downloads_a_missing_file_then_loads_it(tmp_path, monkeypatch):
    src = FIX / "locomo" / "locomo_mini.json"
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    monkeypatch.setattr(dl, "sources", lambda name: [_remote(src, "locomo/locomo10.json", sha)])
    convs = load_dataset_by_name("locomo", tmp_path)
    assert [c.id for c in convs] == ["conv-a", "conv-b"]
    assert dl.check("locomo", tmp_path) == [("locomo/locomo10.json", "ok")]


def test_registry_without_download_names_the_missing_file(tmp_path):
    with pytest.raises(DownloadError, match=r"locomo10.json: file missing; put https://raw.githubusercontent.com"):
        load_dataset_by_name("locomo", tmp_path, download=False)


def test_sources_cover_beam_with_pinned_checksums():
    files = dl.sources("beam-128k")
    assert len(files) == 40 and all(f.sha256 and len(f.sha256) == 64 for f in files)
    assert files[0].url.startswith(dl.BEAM_BASE) and files[0].rel.startswith("beam/chats/100K/")
    assert len(dl.sources("beam-500k")) == 70


@pytest.mark.data
def test_check_verifies_the_shared_copies(data_dir):
    assert dl.check("locomo", data_dir) == [("locomo/locomo10.json", "ok")]
    assert dl.check("longmemeval-oracle", data_dir) == [("longmemeval/longmemeval_oracle.json", "ok")]
    rows = dl.check("beam-128k", data_dir)
    assert len(rows) == 40 and {s for _, s in rows} == {"ok"}
