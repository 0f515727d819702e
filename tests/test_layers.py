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
        "_display",
        "_extras",
        "_validate",
        "_version",
        "_files",
        "_json",
        "_arrow",
        "_kernels",
        "_torch_kernels",
        "_numba_log",
        "_numba_kernels",
        "_numba_ranking",
        "_numba_slabs",
        "_numba_curve",
        "_numba_slope",
        "_numba_temperature",
        "_numba_capital",
        "_numba_distinct",
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
    {"monitoring", "segments", "sequential", "estimate", "torch"},
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


# ----------------------------------------------------------------------------- dynamic imports

#: The one sanctioned upward reference: the base module that shows results in a notebook loads
#: the renderers of the report layer by name (dependency inversion; see calibkit/_display.py).
SANCTIONED_UPWARD = {"calibkit._display": "calibkit.report.notebook"}
#: Modules whose dynamic imports take the name of a third-party module from a table (checked
#: below to name no calibkit module): ``_extras.require`` imports an optional dependency.
THIRD_PARTY_ONLY = {"calibkit._extras"}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Names bound to a known string start: module-level ``NAME = "text"``, and any assignment
    ``name = f"{NAME}.{x}"`` whose start is known (a name bound to two starts is unknown)."""
    out: dict[str, str] = {}
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.update({t.id: value.value for t in targets if isinstance(t, ast.Name)})
    seen: dict[str, set[str | None]] = defaultdict(set)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id not in out:
                seen[target.id].add(_static_prefix(node.value, out))
    out.update({name: next(iter(s)) for name, s in seen.items() if len(s) == 1 and None not in s})
    return out


def _static_prefix(arg: ast.expr, constants: dict[str, str]) -> str | None:
    """What a dynamic import's argument is known to start with: a string constant, a module
    constant, or the leading known parts of an f-string; None when nothing is known."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.Name):
        return constants.get(arg.id)
    if isinstance(arg, ast.JoinedStr):
        known = ""
        for part in arg.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                known += part.value
            elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
                if part.value.id not in constants:
                    break
                known += constants[part.value.id]
            else:
                break
        return known or None
    return None


def dynamic_imports(source: str) -> list[tuple[int, str | None]]:
    """(line, known start of the module name) of each ``importlib.import_module(...)``,
    ``import_module(...)`` or ``__import__(...)`` call in ``source``."""
    tree = ast.parse(source)
    constants = _constants(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("import_module", "__import__"):
            found.append((node.lineno, _static_prefix(node.args[0], constants)))
    return found


def upward_dynamic_imports(module: str, source: str) -> list[str]:
    """The dynamic imports of ``module`` that may reach a layer above it (or cannot be told)."""
    bad = []
    for line, prefix in dynamic_imports(source):
        where = f"{module}:{line}"
        if module in SANCTIONED_UPWARD and SANCTIONED_UPWARD[module] == prefix:
            continue
        if module in THIRD_PARTY_ONLY:
            continue
        if prefix is None:
            bad.append(f"{where} imports a module whose name the source does not state")
            continue
        if not prefix.startswith("calibkit"):
            continue  # a third-party module
        target = prefix.rstrip(".")
        if "." not in target:
            bad.append(f"{where} imports the package root by name")
            continue
        a, b = _part(module), _part(target)
        if b not in LEVEL:
            bad.append(f"{where} imports {target!r}, which names no part of the package")
        elif a != b and LEVEL[b] >= LEVEL[a] and not LEVEL[a] == LEVEL[b] == 0:
            bad.append(f"{where} reaches up to {target} through importlib")
    return bad


def test_no_module_reaches_upward_through_importlib() -> None:
    bad = [
        problem
        for module, path in _modules().items()
        for problem in upward_dynamic_imports(module, path.read_text(encoding="utf-8"))
    ]
    assert not bad, "\n".join(bad)


def test_the_check_of_dynamic_imports_catches_an_upward_one() -> None:
    upward = 'import importlib\nimportlib.import_module("calibkit.report.html")\n'
    assert upward_dynamic_imports("calibkit.measure.bins", upward) == [
        "calibkit.measure.bins:2 reaches up to calibkit.report.html through importlib"
    ]
    hidden = 'from importlib import import_module\nNAME = "calibkit.cli"\nimport_module(NAME)\n'
    assert upward_dynamic_imports("calibkit.audit.result", hidden) == [
        "calibkit.audit.result:3 reaches up to calibkit.cli through importlib"
    ]
    unknown = "import importlib\ndef load(name):\n    return importlib.import_module(name)\n"
    assert upward_dynamic_imports("calibkit.io._read", unknown) == [
        "calibkit.io._read:3 imports a module whose name the source does not state"
    ]
    # the same reference from the one module allowed it, and a downward f-string, pass
    sanctioned = 'import importlib\nM = "calibkit.report.notebook"\nimportlib.import_module(M)\n'
    assert upward_dynamic_imports("calibkit._display", sanctioned) == []
    down = 'import importlib\nP = "calibkit.recalibrate"\nimportlib.import_module(f"{P}.x")\n'
    assert upward_dynamic_imports("calibkit.recalibrate.methods", down) == []


def test_the_sanctioned_reference_is_the_one_display_uses() -> None:
    from calibkit import _display

    assert {_display.__name__: _display.RENDERERS_MODULE} == SANCTIONED_UPWARD
    source = (PACKAGE / "_display.py").read_text(encoding="utf-8")
    assert dynamic_imports(source) == [(dynamic_imports(source)[0][0], _display.RENDERERS_MODULE)]


def test_the_optional_imports_name_only_third_party_modules() -> None:
    from calibkit import _extras

    assert _extras.EXTRAS and not [m for m in _extras.EXTRAS if m.startswith("calibkit")]
