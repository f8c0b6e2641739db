"""No import cycle inside wincon/ (issue 19, item 6): each module asks the ones below it, in one direction.

Every import counts, a function-level one too: a deferred import only hides a cycle from the interpreter,
not from the reader who must follow the decision back and forth.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "wincon"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str], root: Path = PACKAGE) -> set[str]:
    """The wincon modules ``path`` imports (``from wincon import x`` counts as wincon.x where x is a module)."""
    found: set[str] = set()
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:  # wincon.x.y where y is a function: wincon.x
                name = name.rpartition(".")[0]
            if name and name != own and name != "wincon":
                found.add(name)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    modules = set(files)
    return {name: imports_of(path, modules, root) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan), as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_cycle_through_a_deferred_import(tmp_path):
    pkg = tmp_path / "wincon"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from wincon import b\n")
    (pkg / "b.py").write_text("def f():\n    from wincon.c import g\n")
    (pkg / "c.py").write_text("from .a import x\n")
    (pkg / "d.py").write_text("import wincon.a\n")
    assert cycles(import_graph(pkg)) == [["wincon.a", "wincon.b", "wincon.c"]]


def test_no_import_cycle_inside_wincon():
    found = cycles(import_graph())
    assert not found, "import cycles inside wincon/ (each module must ask the ones below it):\n" + "\n".join(
        " -> ".join(c) for c in found
    )
