"""`wincon lint --fix`: give every suite test function that has none a ``@pytest.mark.test_id`` (a new UUID)."""

from __future__ import annotations

import ast
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def insert_test_id(source: str, function: str, test_id: str) -> str:
    """``source`` with ``@pytest.mark.test_id("<test_id>")`` as the first decorator of ``function`` (a
    module-level function or a method, found by name); ValueError if there is no such function."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            lines = source.splitlines(keepends=True)
            indent = " " * node.col_offset
            lines.insert(first - 1, f'{indent}@pytest.mark.test_id("{test_id}")\n')
            return "".join(lines)
    raise ValueError(f"no function {function!r}")


def add_missing_test_ids(tests: Iterable[dict[str, Any]], new_id: Callable[[], str] | None = None) -> list[str]:
    """Add a test id to each function of ``tests`` (plan rows) that has none; the ``path::function`` changed.

    Parametrized tests share their function's one id, so each function is changed once.
    """
    make = new_id or (lambda: str(uuid.uuid4()))
    missing = sorted({t["function"] for t in tests if not t["test_ids"]})
    for function in missing:
        path_text, _, name = function.rpartition("::")
        path = Path(path_text)
        source = path.read_text()
        path.write_text(insert_test_id(source, name, make()))
    return missing
