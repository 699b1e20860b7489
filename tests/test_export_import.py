"""Export and transparency: ``export(user)`` follows the published JSON Schema and an
import into an empty store gives back an equal tree.

Uses the real packaged embedder (semantics decide attach / conflict) and real SQLite
files. Mids are seeded by a small committed change (standing in for consolidation), so
the exported tree has support and conflict edges.
"""

from __future__ import annotations

import base64
import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from typer.testing import CliRunner

from personatree import PersonaTree, PersonaTreeError
from personatree.cli import app
from personatree.errors import InputError
from personatree.portability import export_schema, export_schema_path, import_export, validate_export

from .helpers import T0, Parts, open_tree, seed_mid

NOW = T0 + timedelta(days=60)


def build_rich(tree: PersonaTree, user_id: str = "ana") -> None:
    """Observations with metadata and names, a seeded mid with support and conflicts, a forget."""
    tree.observe(user_id, "I love spicy food.", at=T0, session_id="s0", metadata={"channel": "web", "n": 1})
    seed_mid(tree, user_id, "md_spicy", "Ana loves spicy food", attrs={"seeded": True})
    lines = [
        "I really love spicy food, the hotter the better.",
        "I hate spicy food, it makes me sick.",
        "Spicy curry is my favourite dish.",
        "My sister Mia lives in Oslo.",
        "I'm allergic to peanuts.",
    ]
    for i, text in enumerate(lines):
        tree.observe(
            user_id,
            [{"role": "user", "content": text, "name": "Ana"}, {"role": "assistant", "content": "Noted."}],
            at=T0 + timedelta(days=i + 1), session_id=f"s{i // 2}",
        )
    victim = next(n.id for n in tree.nodes(user_id, "leaf") if "Oslo" in n.content)
    tree.forget(user_id, victim)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, parts: Parts) -> PersonaTree:
    """The exported tree, built once (tests only read it)."""
    tree = open_tree(tmp_path_factory.mktemp("export") / "source.db", parts, NOW)
    build_rich(tree)
    yield tree
    tree.close()


def _validator() -> jsonschema.protocols.Validator:
    schema = export_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def test_schema_is_published_in_schemas_folder() -> None:
    path = export_schema_path()
    assert path.name == "export.schema.json" and path.parent.name in ("schemas", "_schemas")
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["properties"]["format"]["const"] == "personatree.export/1"
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_export_validates_against_schema(source: PersonaTree) -> None:
    data = source.export("ana")
    # Through JSON text, as a file on disk would be.
    parsed = orjson.loads(orjson.dumps(data))
    errors = sorted(_validator().iter_errors(parsed), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    kinds = {e["kind"] for e in data["edges"]}
    assert kinds == {"support", "conflict"}, "the fixture should exercise both edge kinds"
    assert {e["kind"] for e in data["journal"]} >= {"observe", "forget"}


def test_schema_documents_every_exported_field(source: PersonaTree) -> None:
    # Guards against export() growing a field the published schema does not describe.
    data = source.export("ana")
    schema = export_schema()
    defs = schema["$defs"]
    # "archive" came later and is optional, so exports written before it still import.
    assert set(data) == set(schema["properties"]) == set(schema["required"]) | {"archive"}
    for key, item in (("observations", "observation"), ("nodes", "node"), ("edges", "edge"), ("journal", "event"),
                      ("archive", "node")):
        for row in data[key]:
            assert set(row) <= set(defs[item]["properties"]), (key, set(row) - set(defs[item]["properties"]))
            assert set(defs[item]["required"]) <= set(row)


@pytest.mark.parametrize("target_url", ["memory://", "sqlite"])
def test_import_into_empty_store_gives_equal_tree(source: PersonaTree, tmp_path: Path, parts: Parts,
                                                  target_url: str) -> None:
    data = orjson.loads(orjson.dumps(source.export("ana")))
    target = open_tree(tmp_path / "target.db" if target_url == "sqlite" else target_url, parts, NOW)
    try:
        report = import_export(target, data)
        assert report.nodes == len(data["nodes"]) and report.edges == len(data["edges"])
        original, copied = source.graph("ana"), target.graph("ana")
        assert copied.same_as(original)
        copied.check()
        # Same verbatim log, journal and scores: the store-independent digest agrees.
        assert target.store.checksum("ana") == source.store.checksum("ana")
        again = target.export("ana")
        assert {k: v for k, v in again.items() if k != "version"} == {k: v for k, v in data.items() if k != "version"}
        # The imported user is fully usable: explain shows both sides of the conflict.
        ex = target.explain("ana", "md_spicy")
        assert ex.support and ex.conflicts
    finally:
        target.close()


def test_import_of_plain_tree_rebuilds_equal(tmp_path: Path, parts: Parts) -> None:
    # Without seeded nodes the journal alone explains the tree, so rebuild after import is exact.
    src = open_tree(tmp_path / "a.db", parts, NOW)
    src.observe_many("bo", [{"messages": f"I visited museum number {i} in Rome.", "at": T0 + timedelta(hours=i)}
                            for i in range(6)])
    src.forget("bo", src.nodes("bo")[0].id)
    dst = open_tree(tmp_path / "b.db", parts, NOW)
    try:
        import_export(dst, orjson.dumps(src.export("bo")))  # JSON bytes are accepted too
        assert dst.graph("bo").same_as(src.graph("bo"))
        assert dst.rebuild("bo").equal
    finally:
        src.close()
        dst.close()


def test_cli_export_file_imports(source: PersonaTree, tmp_path: Path, parts: Parts) -> None:
    out = tmp_path / "ana.json"
    res = CliRunner().invoke(app, ["export", "ana", "--store", str(source.store.path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    validate_export(orjson.loads(out.read_bytes()))
    target = open_tree(tmp_path / "t.db", parts, NOW)
    try:
        import_export(target, out)
        assert target.graph("ana").same_as(source.graph("ana"))
    finally:
        target.close()


def _mutations(data: dict[str, Any]) -> dict[str, Any]:
    """Broken variants of a valid export, each of which must be refused with nothing written."""
    leaf = next(i for i, n in enumerate(data["nodes"]) if n["level"] == "leaf" and n["embedding"])
    sup = next(i for i, e in enumerate(data["edges"]) if e["kind"] == "support")
    out: dict[str, Any] = {}

    def variant(name: str, fn: Any) -> None:
        d = copy.deepcopy(data)
        fn(d)
        out[name] = d

    variant("format", lambda d: d.update(format="personatree.export/2"))
    variant("extra field", lambda d: d.update(secret=1))
    variant("dangling edge", lambda d: d["edges"].append({**d["edges"][sup], "dst": "md_nowhere"}))
    variant("second parent", lambda d: d["edges"].append(
        {**d["edges"][sup], "dst": d["nodes"][leaf]["id"]}))
    variant("unknown type", lambda d: d["nodes"][leaf].update(schema_type="astrology"))
    variant("bad base64", lambda d: d["nodes"][leaf].update(embedding="!!!!"))
    variant("wrong dim", lambda d: d["nodes"][leaf].update(
        embedding=base64.b64encode(b"\0" * 12).decode()))
    variant("nan logit", lambda d: d["nodes"][leaf].update(logit=float("nan")))
    variant("huge logit", lambda d: d["nodes"][leaf].update(logit=1e300))
    variant("naive time", lambda d: d["nodes"][leaf].update(t_first="2024-03-01T09:00:00"))
    variant("missing obs", lambda d: d["observations"].pop(0))
    variant("dup node", lambda d: d["nodes"].append(d["nodes"][leaf]))
    variant("bad role", lambda d: d["observations"][0]["messages"][0].update(role="root"))
    variant("psi range", lambda d: d["edges"][sup].update(psi=3.0))
    variant("seq order", lambda d: d["journal"].reverse())
    variant("wrong embedder", lambda d: d.update(embedder="some-other-model"))
    return out


def test_import_refuses_broken_exports_and_writes_nothing(source: PersonaTree, tmp_path: Path,
                                                          parts: Parts) -> None:
    data = orjson.loads(orjson.dumps(source.export("ana")))
    target = open_tree(tmp_path / "t.db", parts, NOW)
    try:
        before = target.store.counts()
        for name, bad in _mutations(data).items():
            with pytest.raises(PersonaTreeError):
                import_export(target, bad)
            assert target.store.counts() == before, f"{name}: partial write"
            assert target.store.version("ana") == 0, name
        for junk in (b"", b"{", "[]", "null", 42, ["x"], {"format": "personatree.export/1"}):
            with pytest.raises(InputError):
                import_export(target, junk)
        assert target.store.counts() == before
        # The untouched export still imports after all those refusals.
        import_export(target, data)
        with pytest.raises(InputError, match="already has data"):
            import_export(target, data)
    finally:
        target.close()
