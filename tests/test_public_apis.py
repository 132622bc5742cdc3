"""The package uses public APIs of its dependencies only: no underscore names reached into, none imported, and no
attribute of an imported library object assigned (monkey-patching). Checked on the source, so a new use fails here
rather than on a user's machine with another version of the dependency or another CPU."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "granrag_mcp"
OWN = "granrag_mcp"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def dependency(module: str) -> bool:
    """A module of another package; the standard library documents its few underscore APIs (os._exit)."""
    top = module.split(".")[0]
    return bool(top) and top != OWN and top not in sys.stdlib_module_names


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the module it came from, for every name imported from a dependency."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if dependency(alias.name):
                    names[(alias.asname or alias.name).split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and dependency(node.module or ""):
            for alias in node.names:
                names[alias.asname or alias.name] = node.module or ""
    return names


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    foreign = imported_names(tree)
    found: list[str] = []

    def where(node: ast.AST) -> str:
        return f"{path.name}:{getattr(node, 'lineno', '?')}"

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and dependency(node.module or ""):
            module_parts = (node.module or "").split(".")
            if any(private(part) for part in module_parts) or any(private(a.name) for a in node.names):
                found.append(f"{where(node)} imports a private name from {node.module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if dependency(alias.name) and any(private(p) for p in alias.name.split(".")):
                    found.append(f"{where(node)} imports the private module {alias.name}")
        elif isinstance(node, ast.Attribute) and private(node.attr) and root_name(node) in foreign:
            found.append(f"{where(node)} reads {node.attr} of {root_name(node)} ({foreign[root_name(node)]})")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and root_name(target) in foreign:
                    found.append(f"{where(node)} assigns {target.attr} on {root_name(target)}, a library object")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and root_name(node.args[0]) in foreign:
                found.append(f"{where(node)} sets an attribute on {root_name(node.args[0])}, a library object")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_package_uses_public_apis_only(path: Path) -> None:
    assert violations(path) == []


def test_the_check_finds_private_use(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import torch\nfrom mcp.server.mcpserver import MCPServer\nfrom mcp.shared._context_streams import x\n"
        "torch.ops.mkldnn._reorder_linear_weight(w, 16)\nserver = MCPServer('x')\nMCPServer._lowlevel_server\n"
        "torch.set_num_threads = None\nsetattr(torch, 'y', 1)\nself._fine = 1\n",
        encoding="utf-8",
    )
    found = violations(sample)
    assert len(found) == 5, found
