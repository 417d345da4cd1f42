"""secondbrain: ask questions of your markdown notes; every answer cites the passages it read."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("secondbrain")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
