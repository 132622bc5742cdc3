"""The package's imports form no cycle, and its folders import one way only (lower floors from higher ones),
counting imports inside functions and `TYPE_CHECKING` blocks too."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import granrag_mcp

PACKAGE = Path(granrag_mcp.__file__).parent
ROOT = PACKAGE.name


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package.name, *parts])


def imported_modules(path: Path, modules: set[str], package_dir: Path = PACKAGE) -> set[str]:
    """The package modules `path` imports anywhere in its body, function bodies included; `from package import
    module` counts as the module, `from module import name` as the module, relative imports resolved."""
    name = module_name(path, package_dir)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            found.add(origin)
            found.update(f"{origin}.{alias.name}" for alias in node.names)
    return {m for m in found if m in modules and m != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, as written in its code (a package's __init__, which Python
    runs first, is counted only where a module names the package)."""
    paths = {module_name(p, package): p for p in package.rglob("*.py")}
    modules = set(paths)
    try:
        return {name: imported_modules(path, modules, package) for name, path in paths.items()}
    except SystemError:
        # After a RecursionError in an earlier test's parse, CPython 3.11 can fail every later parse in the process
        # ("AST constructor recursion depth mismatch"): a fresh interpreter reads the same files.
        return import_graph_in_child(package)


def import_graph_in_child(package: Path) -> dict[str, set[str]]:
    script = (
        "import json, sys; from pathlib import Path; from tests.test_import_graph import import_graph; "
        "print(json.dumps({k: sorted(v) for k, v in import_graph(Path(sys.argv[1])).items()}))"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script, str(package)], cwd=root, capture_output=True, text=True, check=True
    )
    return {name: set(imported) for name, imported in json.loads(done.stdout).items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def short(component: list[str]) -> frozenset[str]:
    """A cycle's modules without the package's name."""
    return frozenset(m.removeprefix(f"{ROOT}.") for m in component)


def test_the_graph_sees_function_local_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\nfrom .sub.c import thing\n")
    (package / "b.py").write_text("def late():\n    from pkg.sub import c\n")
    (package / "sub" / "c.py").write_text("def later():\n    from .. import a\n\nthing = 1\n")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg", "pkg.b", "pkg.sub.c"}
    assert graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg", "pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    # In the real package: engine imports the index pipeline only inside run_index.
    assert "granrag_mcp.indexing.pipeline" in import_graph()["granrag_mcp.engine"]


def test_cycles_are_found_in_a_made_up_graph() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    found = [sorted(short(c)) for c in cycles(import_graph())]
    assert not found, f"import cycles: {found}"


FLOORS: tuple[tuple[str, ...], ...] = (
    ("granrag_mcp", "errors", "levels", "settings", "outline", "packing", "pagerank", "log_format", "cli_chunker"),
    ("records", "progress", "tokens"),
    ("text", "embedding", "pages"),
    ("store", "rerankers"),
    ("retrieval/ranking",),
    ("retrieval",),
    ("indexing/formats", "indexing/sentence_rules"),
    ("indexing",),
    ("engine", "cli_library"),
    ("server/schemas", "server/transport", "server/session"),
    ("server/library",),
    ("server/tools",),
    ("server",),
    ("evaluation",),
    ("cli",),
)
"""The package's rooms, lowest floor first: a room imports only rooms on floors below its own (rooms on one floor
stand side by side and import neither way). A room is a folder (its own modules and `__init__`), or a module of the
package's root, whose modules are each a room of their own since they stand at both ends of the house (`errors` at
the bottom, `cli` at the top). `evaluation` stands above `server`: it asks its questions through the MCP tools."""

KNOWN_REVERSED: frozenset[tuple[str, str]] = frozenset()
"""(importer, imported) pairs that run against `FLOORS` for now."""


def room_of(module: str, package: Path = PACKAGE) -> str:
    """The room of a module: its folder as a path inside the package (a package's own `__init__` is its folder's),
    or its own name for a module of the package's root."""
    parts = module.split(".")[1:]
    if not parts:
        return package.name
    folder = parts if package.joinpath(*parts).is_dir() else parts[:-1]
    return "/".join(folder) if folder else parts[-1]


def reversed_imports(
    graph: dict[str, set[str]], floors: tuple[tuple[str, ...], ...], package: Path = PACKAGE
) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(importer room, imported room) -> the module imports behind it, for each import of a room on the same floor
    or a higher one."""
    floor = {room: level for level, rooms in enumerate(floors) for room in rooms}
    found: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for module, imported in graph.items():
        here = room_of(module, package)
        for other in imported:
            there = room_of(other, package)
            if there != here and floor[there] >= floor[here]:
                found.setdefault((here, there), set()).add((module, other))
    return found


def test_rooms_are_read_from_folders_and_root_modules(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    (package / "high").mkdir()
    for init in ("__init__.py", "low/__init__.py", "high/__init__.py"):
        (package / init).write_text("")
    (package / "base.py").write_text("")
    (package / "low" / "a.py").write_text("from pkg import base\n")
    (package / "high" / "b.py").write_text("from pkg.low import a\n")
    (package / "low" / "c.py").write_text("def late():\n    from pkg.high.b import thing\n")
    graph = import_graph(package)
    assert {room_of(m, package) for m in graph} == {"pkg", "base", "low", "high"}
    floors = (("pkg", "base"), ("low",), ("high",))
    assert reversed_imports(graph, floors, package) == {("low", "high"): {("pkg.low.c", "pkg.high.b")}}
    side_by_side = (("pkg", "base"), ("low", "high"))
    assert set(reversed_imports(graph, side_by_side, package)) == {("low", "high"), ("high", "low")}


def test_every_room_has_a_floor() -> None:
    rooms = {room_of(m) for m in import_graph()}
    placed = [room for floor in FLOORS for room in floor]
    assert len(placed) == len(set(placed)), "a room is on two floors"
    assert rooms == set(placed), (
        f"rooms without a floor: {sorted(rooms - set(placed))}; gone: {sorted(set(placed) - rooms)}"
    )


def test_folders_import_one_way() -> None:
    found = reversed_imports(import_graph(), FLOORS)
    unexpected = {pair: sorted(found[pair]) for pair in sorted(set(found) - KNOWN_REVERSED)}
    assert not unexpected, f"imports against the floors (importer room, imported room): {unexpected}"
    stale = sorted(KNOWN_REVERSED - set(found))
    assert not stale, f"these pairs run the right way now: remove them from KNOWN_REVERSED: {stale}"
    two_way = sorted(pair for pair in found if (pair[1], pair[0]) in found)
    assert not two_way, f"rooms importing each other: {two_way}"
