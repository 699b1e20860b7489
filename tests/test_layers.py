"""The import contract: the library's layers import only downward, and nothing cycles.

Read from the source (every ``import`` statement, including those inside functions and
under ``TYPE_CHECKING``: a lazy import is still a dependency), so the test needs nothing
installed and fails on the commit that adds an upward import or a cycle. A new
top-level module or package must be given a layer here: where it sits is a decision,
not an accident.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "personatree"

#: Layers, lowest first. A module may import its own layer and those below it.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("core", frozenset({
        "errors", "types", "clock", "confidence", "index", "specific", "graph", "schema", "stance", "speakers",
        "timeline", "lexicons", "textcheck", "text", "render", "explanation",
        "redact", "offline_litellm", "collector",
    })),
    ("config", frozenset({"config"})),
    ("ports", frozenset({"ports"})),
    ("adapters", frozenset({"store", "judge", "embedders", "hot_redis", "static_embedder"})),
    ("engine", frozenset({"engine", "inputs", "export_format"})),
    ("services", frozenset({
        "insertion", "change_links", "ingest", "forgetting", "replay", "consolidate", "retrieval", "tiering",
        "governance", "portability",
    })),
    ("facade", frozenset({"api", "api_reads", "aio", "__init__"})),
    ("interfaces", frozenset({
        "cli", "mcp_server", "mcp_models", "integrations", "view", "demo", "consolidation_job", "__main__",
        "rest", "compat",
    })),
)
#: Libraries only the interfaces may load (a service that needs them is misplaced).
INTERFACE_ONLY = ("typer", "rich", "matplotlib", "personatree_bench")


def _modules() -> dict[str, tuple[Path, bool]]:
    out: dict[str, tuple[Path, bool]] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _imports(module: str, path: Path, is_pkg: bool, known: set[str]) -> set[str]:
    """Absolute names of what ``module`` imports (a submodule when it names one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                pkg = module.split(".") if is_pkg else module.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(m, p, pkg, known) for m, (p, pkg) in mods.items()}


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _layer_of() -> dict[str, int]:
    return {name: i for i, (_, names) in enumerate(LAYERS) for name in names}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_every_module_has_a_layer() -> None:
    layer = _layer_of()
    missing = sorted({_component(m) for m in _modules()} - set(layer))
    assert missing == [], f"give these a layer in tests/test_layers.py: {missing}"


def test_imports_only_go_down() -> None:
    layer = _layer_of()
    names = [name for name, _ in LAYERS]
    upward = []
    for src, targets in _graph().items():
        a = _component(src)
        for dst in targets:
            if not dst.startswith("personatree.") and dst != "personatree":
                continue
            b = _component(dst)
            if a in layer and b in layer and layer[b] > layer[a]:
                upward.append(f"{src} ({names[layer[a]]}) imports {dst} ({names[layer[b]]})")
    assert upward == [], "\n".join(upward)


def test_no_import_cycles() -> None:
    graph = _graph()
    internal = {m: {t for t in ts if t in graph and t != m} for m, ts in graph.items()}
    assert _cycles(internal) == []
    components: dict[str, set[str]] = {}
    for src, targets in internal.items():
        components.setdefault(_component(src), set()).update(
            _component(t) for t in targets if _component(t) != _component(src))
    assert _cycles(components) == []


@pytest.mark.parametrize("library", INTERFACE_ONLY)
def test_below_the_interfaces_nothing_loads(library: str) -> None:
    layer = _layer_of()
    top = len(LAYERS) - 1
    offenders = sorted(
        src for src, targets in _graph().items()
        if layer.get(_component(src), top) < top
        and any(t == library or t.startswith(library + ".") for t in targets)
    )
    assert offenders == []


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    # The contract must be able to fail: a core module that imports the facade lazily.
    bad = tmp_path / "personatree"
    bad.mkdir()
    (bad / "__init__.py").write_text("")
    (bad / "types.py").write_text("def f():\n    from .api import PersonaTree\n")
    (bad / "api.py").write_text("from .types import f\n")
    mods = {"personatree.types": (bad / "types.py", False), "personatree.api": (bad / "api.py", False)}
    known = set(mods)
    edges = {m: _imports(m, p, pkg, known) for m, (p, pkg) in mods.items()}
    assert "personatree.api" in edges["personatree.types"]
    assert _cycles({m: {t for t in ts if t in edges} for m, ts in edges.items()}) == [
        ["personatree.api", "personatree.types"]]
