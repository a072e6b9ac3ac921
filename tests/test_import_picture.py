"""The project's import picture (docs/DESIGN.md): read from the source, every import counted,
including the ones inside functions.

- ``ipusim.compat`` never imports ``ipusim.lowering`` or ``ipusim.engine``: the custom-loop
  runtime describes its steps and hands them to ``ipusim.session``;
- no two packages of ``ipusim`` (its subpackages and top-level modules) import each other
  (``ipusim.pipelining`` and the Keras extensions, ``ipusim.strategy`` and the compat runtime
  used to), except the pairs of :data:`KNOWN_CYCLES`, each with its reason;
- ``ipusim.engine`` imports nothing from ``ipusim.kernels`` (it does no tensor math).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import ipusim

ROOT = Path(ipusim.__file__).parent

#: Package pairs that still import each other, and why (not part of the simulation core).
KNOWN_CYCLES = {
    ("ipusim.keras", "ipusim.serving"): (
        "serving exports Keras models (and reads keras.engine.nest); Keras models offer "
        "export_for_ipu_serving, which imports serving when called"
    ),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (ROOT / rel).is_dir() or (ROOT / rel).with_suffix(".py").is_file()


def unit(module: str) -> str:
    """The package of the picture a module belongs to: ``ipusim.X`` (a subpackage or a
    top-level module)."""
    return ".".join(module.split(".")[:2])


def imports() -> dict[str, set[str]]:
    """Module -> the ipusim modules it imports (anywhere in its body)."""
    out: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                names += [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                if name.startswith("ipusim.") and _exists(name):
                    out[module].add(name)
    return out


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, targets in imports().items():
        for target in targets:
            a, b = unit(module), unit(target)
            if a != b:
                graph[a].add(b)
    return graph


def test_compat_imports_neither_lowering_nor_engine() -> None:
    offending = sorted(
        (module, target)
        for module, targets in imports().items()
        if module.startswith("ipusim.compat")
        for target in targets
        if target.startswith(("ipusim.lowering", "ipusim.engine"))
    )
    assert offending == []


def test_no_two_packages_import_each_other() -> None:
    graph = unit_graph()
    pairs = sorted(
        {tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph.get(b, ())}
    )
    assert set(pairs) == set(KNOWN_CYCLES)


def test_the_front_ends_reach_the_core_through_the_session() -> None:
    found = imports()
    for prefix in ("ipusim.compat.runtime", "ipusim.keras.extensions"):
        targets = {t for module, ts in found.items() if module.startswith(prefix) for t in ts}
        assert any(t.startswith("ipusim.session") for t in targets)
        assert not any(t.startswith("ipusim.engine") for t in targets)


def test_the_engine_imports_no_kernels() -> None:
    # The engine does no tensor math: its compiled fast path takes the JIT decorator from
    # ipusim._jit, never from the kernels package.
    offending = sorted(
        (module, target)
        for module, targets in imports().items()
        if unit(module) == "ipusim.engine"
        for target in targets
        if target.startswith("ipusim.kernels")
    )
    assert offending == []


def test_workloads_use_only_public_api_not_graph_ops() -> None:
    """Workloads are written as users write models: through ``ipusim.keras`` (``keras.ops``)
    or the compat layer, never ``ipusim.graph``."""
    workloads = ROOT.parent / "workloads"
    offending = []
    for path in sorted(workloads.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            if any(name == "ipusim.graph" or name.startswith("ipusim.graph.") for name in names):
                offending.append(f"{path.relative_to(workloads)}:{node.lineno}")
    assert list(workloads.glob("*.py")), "the workloads folder was not found"
    assert offending == []
