"""Measure the shape of engine's import graph (issue 29, "Readable, one way").

Reads every ``engine/**/*.py`` with ``ast`` (nothing is imported or run) and reports:

- the file import graph's strongly connected components ("knots"): every import counts, at
  module level or inside a function or an ``if TYPE_CHECKING`` block alike, except a bare
  ``import engine`` (as torch's own modules ``import torch``);
- the function-level imports (an import inside a ``def``), and which lack a reason comment
  (a ``#`` comment on the import's line or on the line above it);
- injected globals: a module writing a name into another module's namespace
  (``other_module._Name = ...``, ``setattr(other_module, ...)``, ``vars(m)[...] = ...``,
  ``m.__dict__[...] = ...``, ``globals()`` of another module);
- importlib tricks (``importlib``/``__import__``/``sys.modules[...] =``).

An edge ``a -> b`` means file ``a`` names module ``b`` in an import: ``from .x import y`` is an
edge to ``x`` (and to ``x.y`` when that is a module), ``import p.q`` an edge to ``p.q``. Parent
packages that Python runs on the way are not counted (every module would then point at
``engine/__init__``, which imports everything: the bare ``import engine`` the issue leaves out).

Run: ``python scripts/engine_imports.py [--json] [--knots]``. ``tests/engine/test_structure.py``
asserts the limits.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "engine"


@dataclass
class Report:
    modules: dict[str, Path]
    edges: dict[str, set[str]]
    knots: list[list[str]]
    function_imports: list[tuple[str, int, str, str]]  # module, line, source, reason ("" if none)
    injections: list[tuple[str, int, str]]
    importlib_tricks: list[tuple[str, int, str]]
    extra: dict = field(default_factory=dict)

    @property
    def largest_knot(self) -> list[str]:
        return max(self.knots, key=len) if self.knots else []

    def knots_in(self, subpackage: str) -> list[list[str]]:
        """Knots with two or more files inside ``engine.<subpackage>``."""
        prefix = f"{PACKAGE}.{subpackage}"
        out = []
        for knot in self.knots:
            inside = [m for m in knot if m == prefix or m.startswith(prefix + ".")]
            if len(inside) >= 2:
                out.append(inside)
        return out

    @property
    def unexplained_function_imports(self) -> list[tuple[str, int, str]]:
        return [(m, line, src) for m, line, src, reason in self.function_imports if not reason]


def module_files(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _resolve_from(module: str, node: ast.ImportFrom, modules: dict[str, Path]) -> str | None:
    if node.level == 0:
        return node.module
    base = module.split(".")
    if not _is_package(module, modules):
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    if node.module:
        base = base + node.module.split(".")
    return ".".join(base)


def _targets(module: str, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The engine modules an import statement names (bare ``import engine`` left out)."""
    found = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name != PACKAGE and alias.name in modules:
                found.append(alias.name)
        return found
    target = _resolve_from(module, node, modules)
    if target is None or not (target == PACKAGE or target.startswith(PACKAGE + ".")):
        return found
    subs = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in modules]
    # ``from p import m`` runs p's ``__init__`` first (as torch's "import the base module, not the
    # package" warns): an edge to p as well as to m, except for the bare ``engine``
    if target != PACKAGE and target in modules:
        found.append(target)
    return found + subs


def _reason(lines: list[str], node: ast.stmt) -> str:
    """A ``#`` comment on the import's own line(s) or on the line just above it."""
    for lineno in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        text = lines[lineno - 1]
        if "#" in text:
            return text.split("#", 1)[1].strip()
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    return above[1:].strip() if above.startswith("#") else ""


def _injections(module: str, tree: ast.Module, imported_names: dict[str, str]) -> list[tuple[int, str]]:
    """Writes into another module's namespace: ``mod.attr = ...`` where ``mod`` is an imported
    module, ``setattr(mod, ...)``, ``vars(mod)[...] = ...`` or ``mod.__dict__[...] = ...``."""
    out = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        flat: list[ast.expr] = []
        for target in targets:  # the stored names themselves: ``m._state.enabled = x`` sets an attribute
            flat += list(target.elts) if isinstance(target, ast.Tuple | ast.List) else [target]
        for target in flat:
            for t in (target,):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in imported_names:
                    out.append((node.lineno, f"{t.value.id}.{t.attr} = ... ({imported_names[t.value.id]})"))
                if isinstance(t, ast.Subscript):
                    v = t.value
                    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "vars" and v.args:
                        arg = v.args[0]
                        if isinstance(arg, ast.Name) and arg.id in imported_names:
                            out.append((node.lineno, f"vars({arg.id})[...] = ..."))
                    if isinstance(v, ast.Attribute) and v.attr == "__dict__" and isinstance(v.value, ast.Name) \
                            and v.value.id in imported_names:
                        out.append((node.lineno, f"{v.value.id}.__dict__[...] = ..."))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in imported_names:
                out.append((node.lineno, f"setattr({arg.id}, ...)"))
    return out


def _importlib_tricks(tree: ast.Module) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "importlib" for a in node.names):
            out.append((node.lineno, "import importlib"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("importlib"):
            out.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Name) and node.id == "__import__":
            out.append((node.lineno, "__import__"))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            v = node.value
            if isinstance(v, ast.Attribute) and v.attr == "modules" and isinstance(v.value, ast.Name) \
                    and v.value.id == "sys":
                out.append((node.lineno, "sys.modules[...] = ..."))
    return out


def strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of two or more files, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return sorted(comps, key=lambda c: (-len(c), c))


def _enclosing_functions(tree: ast.Module) -> set[int]:
    """ids of import nodes that sit inside a function body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    inside.add(id(sub))
    return inside


def measure(root: Path = ROOT) -> Report:
    modules = module_files(root)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    function_imports = []
    injections = []
    tricks = []
    for module, path in modules.items():
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source, str(path))
        in_function = _enclosing_functions(tree)
        imported_modules: dict[str, str] = {}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = _targets(module, node, modules)
            edges[module].update(t for t in targets if t != module)
            if isinstance(node, ast.ImportFrom):
                base = _resolve_from(module, node, modules)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in modules:
                        imported_modules[alias.asname or alias.name] = sub
            else:
                for alias in node.names:
                    if alias.name in modules and alias.asname:
                        imported_modules[alias.asname] = alias.name
            if id(node) in in_function and targets:
                src = lines[node.lineno - 1].split("#")[0].strip()  # the reason is kept apart
                function_imports.append((module, node.lineno, src, _reason(lines, node)))
        injections += [(module, line, what) for line, what in _injections(module, tree, imported_modules)]
        tricks += [(module, line, what) for line, what in _importlib_tricks(tree)]
    knots = strongly_connected(sorted(modules), edges)
    return Report(modules, edges, knots, sorted(function_imports), injections, tricks)


def summary(report: Report) -> dict:
    return {
        "files": len(report.modules),
        "edges": sum(len(v) for v in report.edges.values()),
        "largest_knot": len(report.largest_knot),
        "knots": [len(k) for k in report.knots],
        "knots_in_optim": [len(k) for k in report.knots_in("optim")],
        "knots_in_distributions": [len(k) for k in report.knots_in("distributions")],
        "knots_in_nn": [len(k) for k in report.knots_in("nn")],
        "function_level_imports": len(report.function_imports),
        "function_level_imports_without_reason": len(report.unexplained_function_imports),
        "injected_globals": len(report.injections),
        "importlib_tricks": len(report.importlib_tricks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--knots", action="store_true", help="list every knot's files")
    parser.add_argument("--imports", action="store_true", help="list the function-level imports")
    args = parser.parse_args(argv)
    report = measure()
    s = summary(report)
    if args.json:
        print(json.dumps(s, indent=1))
    else:
        for key, value in s.items():
            print(f"{key:40s} {value}")
    if args.knots:
        for knot in report.knots:
            print(f"\nknot of {len(knot)}:")
            for m in knot:
                print("  ", m)
    if args.imports:
        for module, line, src, reason in report.function_imports:
            print(f"{module}:{line}: {src}   # {reason or '<no reason>'}")
    for module, line, what in report.injections:
        print(f"injected: {module}:{line}: {what}")
    for module, line, what in report.importlib_tricks:
        print(f"importlib: {module}:{line}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
