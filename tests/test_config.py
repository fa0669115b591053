from dataclasses import dataclass, field

import pytest

from qgmem.config import ConfigError, apply_overrides, load_config


@dataclass
class Optim:
    lr: float = 1e-3
    steps: int = 10


@dataclass
class Cfg:
    name: str = "x"
    optim: Optim = field(default_factory=Optim)
    tags: list[str] = field(default_factory=list)
    ckpt: str | None = None


def test_yaml_and_overrides(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: run1\noptim:\n  lr: 1\n  steps: 5\ntags: [a, b]\n")
    cfg = load_config(Cfg, p, ["optim.steps=7", "ckpt=/tmp/x"])
    assert cfg.name == "run1"
    assert cfg.optim.lr == 1.0 and isinstance(cfg.optim.lr, float)
    assert cfg.optim.steps == 7
    assert cfg.tags == ["a", "b"]
    assert cfg.ckpt == "/tmp/x"


def test_unknown_key_names_file_and_key(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("optim:\n  lrr: 1\n")
    with pytest.raises(ConfigError, match=r"c\.yaml\.optim.*lrr"):
        load_config(Cfg, p)


def test_wrong_type_is_an_error():
    with pytest.raises(ConfigError, match="optim.steps"):
        load_config(Cfg, None, ["optim.steps=abc"])


def test_override_needs_equals():
    with pytest.raises(ConfigError):
        apply_overrides({}, ["optim.steps"])


def test_missing_file():
    with pytest.raises(ConfigError, match="not found"):
        load_config(Cfg, "/nonexistent/c.yaml")
