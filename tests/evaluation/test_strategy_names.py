"""The code and docs name only what exists: every `View.<name>` written in the package or its docs is an attribute
of `View`, and every function a strategy's docstring names in `retrieval.<module>.<name>` is one."""

from __future__ import annotations

import importlib
import re

from granrag_mcp.retrieval.view import View
from tests.test_import_graph import PACKAGE

ROOT = PACKAGE.parent
WRITTEN = [*PACKAGE.rglob("*.py"), *ROOT.joinpath("docs").glob("*.md"), ROOT / "README.md"]
VIEW_NAME = re.compile(r"\bView\.([A-Za-z_]\w*)")
CORE_NAME = re.compile(r"`retrieval\.(\w+)\.(\w+)`")


def test_every_view_attribute_named_exists() -> None:
    missing = sorted(
        f"{path.relative_to(ROOT)}: View.{name}"
        for path in WRITTEN
        for name in VIEW_NAME.findall(path.read_text(encoding="utf-8"))
        if not hasattr(View, name)
    )
    assert not missing, f"names of View that no longer exist: {missing}"


def test_every_retrieval_function_named_in_the_evaluation_exists() -> None:
    named = {
        (module, name)
        for path in PACKAGE.joinpath("evaluation").glob("*.py")
        for module, name in CORE_NAME.findall(path.read_text(encoding="utf-8"))
    }
    assert named, "the strategies name the retrieval functions they run"
    missing = [
        f"retrieval.{module}.{name}"
        for module, name in sorted(named)
        if not hasattr(importlib.import_module(f"granrag_mcp.retrieval.{module}"), name)
    ]
    assert not missing, f"retrieval functions that no longer exist: {missing}"


def test_the_check_sees_a_rotted_name() -> None:
    assert VIEW_NAME.findall("the mid list is `View.hrr_mids`") == ["hrr_mids"]
    assert not hasattr(View, "hrr_mids")
