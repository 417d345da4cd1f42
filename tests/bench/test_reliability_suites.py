"""`make reliability` runs the suites named in bench/reliability.py by test id: a moved or renamed test must not
silently drop out of them (pytest would report "not found" only when the suite runs, far from the change)."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.reliability import ROOT, SUITES


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def test_every_test_a_reliability_suite_names_exists() -> None:
    missing = []
    for suite, ids in SUITES.items():
        for test_id in ids:
            file, _, name = test_id.partition("::")
            path = ROOT / file
            if not path.is_file() or (name and name not in _test_names(path)):
                missing.append(f"{suite}: {test_id}")
    assert not missing, "bench/reliability.py names tests that are not there:\n" + "\n".join(missing)
