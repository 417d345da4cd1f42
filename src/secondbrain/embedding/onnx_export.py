"""The bundled model as ONNX: exported once from the bundled weights, cached (`Settings.models_dir`: models/ in the data
directory unless set), rebuilt when stale.

No ONNX file ships with the package: the first process that asks for one writes it from the bundled safetensors
(`onnx_graph.py`, with onnx and numpy, no torch: a second or two, once), and every later process, and later start,
reads the cached file instead. The cache is keyed by a hash of the weight files (and of `EXPORT_RECIPE`), so new
weights or a new export recipe give a new file and the old one is removed; each file has a sidecar with its own
SHA-256, so a file cut short or damaged on disk is noticed, logged as a warning and rebuilt rather than loaded.

The export stops at the transformer's token embeddings; mean pooling and normalisation run in numpy
(`onnx_encoder.py`), as they are a few lines and keep the graph the plain BERT that ONNX Runtime optimises well.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from secondbrain.embedding import onnx_graph

log = logging.getLogger(__name__)

Precision = Literal["fp32", "int8"]

# Bump when the export or quantization below changes what they write, so every cache made by older code is rebuilt.
# 2: the graph written by onnx_graph.py from the weights, no longer traced by torch.onnx.export.
EXPORT_RECIPE = "2"
# What the exported graph is made of: the weights and the architecture they are read into.
WEIGHT_FILES = ("config.json", "model.safetensors")
STEM = "all-MiniLM-L6-v2"
_LOCK_NAME = ".export.lock"


def weights_key(model_dir: Path) -> str:
    """A hex digest of the weight files and the export recipe: the cache key of every file made from them."""
    digest = hashlib.sha256(f"recipe {EXPORT_RECIPE}\n".encode())
    for name in WEIGHT_FILES:
        with (model_dir / name).open("rb") as file:
            digest.update(name.encode() + b"\0" + hashlib.file_digest(file, "sha256").digest())
    return digest.hexdigest()


def cached_model(model_dir: Path, cache_dir: Path, precision: Precision) -> Path:
    """The ONNX file of the model in `model_dir` at `precision`, from `cache_dir` or built there first.

    Blocking (seconds when it builds; hashing the weights and the cached file, well under a second, when it does
    not): call it in a worker thread. Processes starting together (ingest and retrieve) take turns on a lock, so one
    exports and the others then reuse its file.
    """
    key = weights_key(model_dir)[:16]
    fp32 = cache_dir / f"{STEM}-{key}.onnx"
    wanted = fp32 if precision == "fp32" else cache_dir / f"{STEM}-{key}-int8.onnx"
    if wanted.exists() and _problem(wanted) is None:
        # A finished file is read without the lock, so a cache made in advance may be read-only (an image's).
        return wanted
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(cache_dir / _LOCK_NAME):
        _ensure(fp32, lambda out: export_fp32(model_dir, out))
        if precision == "int8":
            # Quantized from the fp32 file, which is kept: switching back, or rebuilding a damaged int8 file, is
            # then a matter of a second, not another export.
            _ensure(wanted, lambda out: quantize_int8(fp32, out))
        _remove_stale(cache_dir, key)
    return wanted


def export_fp32(model_dir: Path, out: Path) -> None:
    """Write the transformer of the bundled model (token ids and mask in, token embeddings out) to `out`, with
    dynamic batch and sequence axes: `onnx_graph.export`, which needs no torch."""
    onnx_graph.export(model_dir, out)


def quantize_int8(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantization of the weights of every MatMul, one scale per output channel.

    Per channel, measured on 300 Obsidian Help chunks: cosine with fp32 0.994 on average (0.987 at worst), against
    0.952 (0.871) per tensor, for about a tenth less speed.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantizer logs a line per tensor through the root logger; those would fill our log, so they are dropped
    # at the root logger (whose filters see only what is logged on it directly, not our modules' records).
    root = logging.getLogger()
    root.addFilter(_not_from_the_quantizer)
    try:
        quantize_dynamic(fp32, out, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.removeFilter(_not_from_the_quantizer)


def _not_from_the_quantizer(record: logging.LogRecord) -> bool:
    return f"onnxruntime{os.sep}quantization" not in record.pathname


def _ensure(path: Path, build: Callable[[Path], None]) -> Path:
    """`path` as it is when its digest checks out, else built anew (with a warning when a file was there)."""
    if path.exists():
        problem = _problem(path)
        if problem is None:
            return path
        log.warning(
            "the cached ONNX model is damaged or unreadable; rebuilding it",
            extra={"path": str(path), "problem": problem},
        )
    started = time.perf_counter()
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        build(temporary)
        digest = _digest(temporary)
        # The model first, then its digest: a crash between the two leaves a file whose digest does not match,
        # which the next start rebuilds, never a digest vouching for a half-written file.
        temporary.replace(path)
        _write_atomically(_digest_path(path), digest + "\n")
    finally:
        temporary.unlink(missing_ok=True)
    log.info("built the ONNX model", extra={"path": str(path), "seconds": round(time.perf_counter() - started, 2)})
    return path


def _problem(path: Path) -> str | None:
    """Why the cached file at `path` cannot be used, or None when its digest matches its sidecar."""
    try:
        expected = _digest_path(path).read_text(encoding="utf-8").strip()
        actual = _digest(path)
    except (OSError, UnicodeDecodeError) as error:
        return f"{type(error).__name__}: {error}"
    if actual != expected:
        return "its SHA-256 is not the one recorded when it was built"
    return None


def _digest(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def _remove_stale(cache_dir: Path, key: str) -> None:
    """Remove the files made from other weights (90 MB each) and temporary files a killed export left behind."""
    for path in cache_dir.glob(f"{STEM}-*"):
        if not path.name.startswith(f"{STEM}-{key}") or path.name.endswith(".tmp"):
            with contextlib.suppress(OSError):  # another process's, or already gone: not worth failing a load for
                path.unlink()


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an advisory lock on `lock_path` (POSIX); where there is no fcntl, no lock (the atomic renames above
    still keep every file whole)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
