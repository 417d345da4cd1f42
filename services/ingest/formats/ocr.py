"""Reading the text of a picture with Debian's tesseract, one process a picture (docs/attachment-parsers.md says
why this engine and these settings): bounded in time by a timeout and in memory by the worker's own limit, which
the process inherits; a crash in it fails one picture, never the worker."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from secondbrain.ingest.formats.base import clean_text

INSTALL = "no OCR engine installed (apt-get install tesseract-ocr tesseract-ocr-eng)"
# A page of a PDF is laid out as one (psm 3, automatic layout keeps paragraphs); a screenshot or a diagram is text
# scattered over a picture (psm 11, sparse text, read 0.65 of a screenshot's words where psm 3 read 0.58).
PAGE = "3"
SPARSE = "11"


def ocr_available() -> bool:
    return shutil.which("tesseract") is not None


class OcrFailed(Exception):
    """Tesseract did not read the picture: why, in a few words."""


def read_picture(image: Image.Image, layout: str, seconds: float) -> str:
    """The text tesseract reads in `image` (grey is enough), or OcrFailed."""
    with tempfile.TemporaryDirectory(prefix="secondbrain-ocr-") as folder:
        picture = Path(folder, "page.png")
        image.save(picture)
        try:
            done = subprocess.run(
                ["tesseract", str(picture), "stdout", "--psm", layout, "-l", "eng"],
                capture_output=True,
                timeout=seconds,
                check=False,
                # One thread: ingest already works on several things at once, and tesseract's OpenMP threads fight
                # over 2 cores for no gain.
                env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            )
        except subprocess.TimeoutExpired:
            raise OcrFailed(f"OCR took longer than {seconds:g} s") from None
        except OSError as error:
            raise OcrFailed(f"tesseract could not run ({error.strerror or error})") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OcrFailed(f"tesseract failed ({said[-1] if said else f'exit code {done.returncode}'})")
    return clean_text(done.stdout.decode("utf-8", "replace"))
