"""The wheel (and so the Docker image) holds only the packages pyproject.toml lists, while the editable install the
tests run on finds every folder: a new sub-package left off the list passes every test and breaks the image."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_python_package_is_listed_in_pyproject() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    mapped = {name: ROOT / folder for name, folder in setuptools["package-dir"].items() if name}
    mapped["secondbrain"] = ROOT / setuptools["package-dir"][""] / "secondbrain"
    found = set()
    for name, folder in mapped.items():
        for init in folder.rglob("__init__.py"):
            relative = init.parent.relative_to(folder).parts
            dotted = ".".join((name, *relative))
            # A folder that is itself mapped to another package name is that package, counted once under it.
            if not any(init.parent == other for other_name, other in mapped.items() if other_name != name):
                found.add(dotted)
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
