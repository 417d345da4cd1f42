"""The environment a test gives the code under test: none of the developer's own `SECONDBRAIN_*` settings, except
those the whole session shares on purpose (the ONNX export of the local model, made once per session rather than
once per test's data directory; see conftest.py)."""

from __future__ import annotations

import os

SHARED = ("SECONDBRAIN_MODEL_CACHE_DIR",)


def own_setting(key: str) -> bool:
    """Whether `key` is one of the developer's settings a test must not inherit."""
    return key.startswith("SECONDBRAIN_") and key not in SHARED


def clean_environ() -> dict[str, str]:
    """This process's environment without the developer's own settings."""
    return {key: value for key, value in os.environ.items() if not own_setting(key)}
