"""The schema registry file and the frozen configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from personatree.config import ConfidenceConfig, InsertionConfig, PersonaTreeConfig, derive
from personatree.errors import ConfigError, SchemaError
from personatree.schema import SchemaRegistry, default_schema_dir
from personatree.types import Level


def test_shipped_registry_is_valid(registry: SchemaRegistry) -> None:
    assert {"event", "preference", "fact", "identity", "boundary"} <= set(registry.names)
    assert registry.half_life("identity") is None
    assert registry.half_life("state") == 21
    assert registry.kappa("preference", Level.LEAF, "preference")
    assert not registry.kappa("fact", Level.LEAF, "preference")
    assert registry.kappa("fact", Level.MID, "boundary")
    assert all(t.examples for t in registry)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "types.toml"
    p.write_text(text)
    return p


def test_broken_field_names_file_type_and_field(tmp_path: Path) -> None:
    src = (default_schema_dir() / "types.toml").read_text()
    broken = src.replace("half_life_days = 21", "half_life_days = -3", 1)
    p = _write(tmp_path, broken)
    with pytest.raises(SchemaError) as err:
        SchemaRegistry.load(p)
    msg = str(err.value)
    assert str(p) in msg and "'state'" in msg and "half_life_days" in msg
    assert err.value.type_name == "state" and err.value.field == "half_life_days"


def test_unknown_parent_and_bad_toml(tmp_path: Path) -> None:
    src = (default_schema_dir() / "types.toml").read_text()
    p = _write(tmp_path, src.replace('parents.leaf = ["fact"]', 'parents.leaf = ["factoid"]'))
    with pytest.raises(SchemaError, match="unknown parent type 'factoid'") as err:
        SchemaRegistry.load(p)
    assert err.value.field == "parents.leaf"
    with pytest.raises(SchemaError, match="not valid TOML"):
        SchemaRegistry.load(_write(tmp_path, "[types\nx="))
    with pytest.raises(SchemaError, match="cannot read"):
        SchemaRegistry.load(tmp_path / "missing.toml")
    with pytest.raises(SchemaError, match="unknown field|Extra inputs"):
        SchemaRegistry.load(_write(tmp_path, src.replace("prior = 0.6\n", "prior = 0.6\npriority = 3\n", 1)))


def test_configs_are_frozen_and_validated() -> None:
    cfg = PersonaTreeConfig()
    with pytest.raises(Exception):
        cfg.embedder = "x"  # type: ignore[misc]
    with pytest.raises(ConfigError):
        ConfidenceConfig(gamma=-1)
    with pytest.raises(ConfigError, match="similarity alone"):
        InsertionConfig(b=0.6, theta_attach=0.55)
    with pytest.raises(ConfigError):
        PersonaTreeConfig.preset("nope")  # type: ignore[arg-type]
    assert PersonaTreeConfig.preset("conservative").insertion.theta_attach > cfg.insertion.theta_attach
    assert derive(cfg, embed_batch_size=8).embed_batch_size == 8
    with pytest.raises(ConfigError):
        derive(cfg, embed_batch_size=0)
    # no shared mutable defaults
    assert PersonaTreeConfig().insertion is not None
