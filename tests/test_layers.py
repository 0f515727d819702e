"""The law of the house: a module imports only from layers below its own (or its own package),
never in a circle, and never a private name of another package.

The layers, lowest first (DESIGN.md): base -> forecasts -> measure -> io -> engines ->
recalibrate -> decide -> stated -> audit -> (held_out, stated_run) -> record -> monitoring ->
report -> sklearn -> cli. The imports are read from the source with :mod:`ast` (every ``import``, at
module level or inside a function), so a lazy import counts like any other.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "calibkit"

#: Layer of each top-level part of the package, lowest first.
LAYERS = [
    {
        "_errors",
        "_validate",
        "_version",
        "_files",
        "_json",
        "_arrow",
        "_kernels",
        "_numba_kernels",
        "_numba_ranking",
        "_numba_slope",
    },
    {"forecasts"},
    {"measure"},
    {"io"},
    {"engines"},
    {"recalibrate"},
    {"decide"},
    {"stated"},
    {"audit"},
    {"held_out", "stated_run", "meter"},  # audits of what lower layers produce (a ledger, a run)
    {"record"},
    {"monitoring", "segments", "torch"},
    {"report"},
    {"sklearn"},  # the scikit-learn meta-estimator, scorers and display (optional extra)
    {"cli", "__main__", "__init__"},
]
LEVEL = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports() -> dict[str, set[tuple[str, str]]]:
    """module -> {(imported calibkit module, name imported from it or "")}."""
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("calibkit"):
                        out[module].add((alias.name, ""))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, is_package, node)
                if not target.startswith("calibkit"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in _modules():
                        out[module].add((sub, ""))
                    else:
                        out[module].add((target, alias.name))
    return out


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_part_has_a_layer() -> None:
    parts = {_part(m) for m in _modules()}
    assert parts <= set(LEVEL), sorted(parts - set(LEVEL))


def test_imports_only_point_down() -> None:
    upward = []
    for module, targets in imports().items():
        for target, name in targets:
            if target == "calibkit" and module != "calibkit":
                upward.append(f"{module} imports the package root ({name or '*'})")
                continue
            a, b = _part(module), _part(target)
            if LEVEL[a] == LEVEL[b] == 0:
                continue  # the base modules may use one another (no cycle: tested below)
            if a != b and LEVEL[b] >= LEVEL[a] and a not in ("__init__", "__main__"):
                upward.append(f"{module} -> {target} ({name or 'module'})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycles_between_modules() -> None:
    graph = {m: {t for t, _ in targets if t in _modules()} for m, targets in imports().items()}
    # a package's __init__ re-exporting its own modules is not a cycle of the house
    for module in graph:
        graph[module] = {t for t in graph[module] if not module.startswith(t + ".")}
    seen: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        seen[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in seen:
                visit(nxt)
        stack.pop()
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node)
    assert not cycles, "\n".join(cycles)


def test_no_private_name_is_taken_from_another_package() -> None:
    taken = []
    for module, targets in imports().items():
        for target, name in targets:
            a, b = _part(module), _part(target)
            private_module = any(p.startswith("_") for p in target.split(".")[2:])
            if a == b or a in ("__init__", "__main__") or LEVEL[b] == 0:
                continue  # inside a package, or the base layer (private by its file names)
            if (name.startswith("_") and not name.startswith("__")) or private_module:
                taken.append(f"{module} takes {target}{'.' + name if name else ''}")
    assert not taken, "\n".join(sorted(taken))
