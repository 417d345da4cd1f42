"""Which PDF library and which OCR engine for attachments (issue 48, points 1 and 2), measured on the attachments vault.

PDF text. Each candidate library reads every PDF of `../shared/data/vaults/attachments`, each file in a process of
its own (`--worker`), so its peak RSS is that child's own (os.wait4's rusage) and a crash or a hang is that file's
failure (a 300 s bound). Per library: CPU and wall time per page (opening the file included, importing the library
not), peak RSS, failures, and text quality without hand labels:
  (a) the share of letters-only tokens that are words: /usr/share/dict/words (Debian's wamerican) plus the words of
      the vault's own markdown notes (typed by people, so names like Jupyter count), after a cleaning every processor
      does anyway (NFKC, which expands ligatures, and dropping pdfium's U+FFFE / soft-hyphen markers);
  (b) what that cleaning has to repair, counted on the raw text: ligature characters (U+FB00-FB06), U+FFFE/U+00AD
      markers, U+FFFD and "(cid:N)", and words left broken across a line by a hyphen;
  (c) reading order: sentences checked by eye on the rendered pages (a three-column Federal Register page, JOSE papers
      with a sidebar, a two-column newsletter) must come out contiguous, compared letters and digits only;
  (d) agreement: per page, the bag-of-words F1 against each of the other libraries, averaged.
Plus, per page, the characters of dictionary words each library finds, and which pages fall under the OCR rule
(needs_ocr: few dictionary characters, and image objects under a good part of the page).
PyMuPDF is measured as a reference point only: it is AGPL, so never a runtime candidate.

OCR. The scanned pages (rendered with pypdfium2 at 200 and 300 dpi), the image-only pages and the vault's PNGs go
through Debian's tesseract (the CLI, which is what pytesseract wraps; OMP_THREAD_LIMIT=1; --psm 3 and --psm 11)
and RapidOCR (the PyPI
engines that ship their ONNX models in the wheel: rapidocr 3.x with PP-OCRv6 and the older rapidocr-onnxruntime 1.4
with PP-OCRv4; one onnxruntime thread), each image in turn, one engine process at a time: CPU seconds per page, peak
RSS, and word recall against lines typed by hand from the rendered pages (GROUND_TRUTH). EasyOCR is left out: it
downloads its models on first use, which an offline install cannot do.

Run it from the repository root with a scratch virtualenv, not the project's:

    apt-get install tesseract-ocr tesseract-ocr-eng wamerican
    python3 -m venv /tmp/pdfbench
    /tmp/pdfbench/bin/pip install psutil pypdfium2 pypdf pdfminer.six pdfplumber playa-pdf pdf-oxide pdftext \
        pymupdf rapidocr rapidocr-onnxruntime
    /tmp/pdfbench/bin/python -m bench.attachment_parsers

It takes ten to fifteen minutes on two cores, using one of them (one file, then one image, at a time), and writes
its results between the markers of docs/attachment-parsers.md (the recommendation around them is written by hand).
`--json PATH` keeps the raw numbers, `--from-json PATH` rewrites the report from them, `--only pdf` or `--only ocr`
runs one half. Nothing is copied out of the vault: rendered pages live in a temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from bench.report import machine, table

ROOT = Path(__file__).resolve().parents[1]
VAULT = ROOT.parent / "shared" / "data" / "vaults" / "attachments"
DOC = ROOT / "docs" / "attachment-parsers.md"
WORDS = Path("/usr/share/dict/words")
FILE_TIMEOUT_S = 300.0

# Library name -> (distribution for its version and licence, runtime candidate?).
LIBRARIES: dict[str, tuple[str, bool]] = {
    "pypdfium2": ("pypdfium2", True),
    "pypdf": ("pypdf", True),
    "pdfminer.six": ("pdfminer.six", True),
    "pdfplumber": ("pdfplumber", True),
    "playa-pdf": ("playa-pdf", True),
    "pdf-oxide": ("pdf_oxide", True),
    "pdftext": ("pdftext", True),
    "pymupdf": ("pymupdf", False),
}

# Installed footprint: the distribution and the dependencies it pulls in that the project does not already have.
FOOTPRINT: dict[str, list[str]] = {
    "pypdfium2": ["pypdfium2"],
    "pypdf": ["pypdf"],
    "pdfminer.six": ["pdfminer.six", "cryptography", "cffi", "charset-normalizer"],
    "pdfplumber": ["pdfplumber", "pdfminer.six", "pypdfium2", "pillow", "cryptography", "cffi", "charset-normalizer"],
    "playa-pdf": ["playa-pdf"],
    "pdf-oxide": ["pdf_oxide"],
    "pdftext": ["pdftext", "pypdfium2", "pydantic", "pydantic-settings", "numpy", "click"],
    "pymupdf": ["pymupdf", "pymupdf-layout", "pymupdf4llm", "onnxruntime", "networkx", "numpy"],
    "rapidocr": ["rapidocr", "onnxruntime", "opencv-python-headless", "numpy", "shapely", "pyclipper", "omegaconf"],
    "rapidocr-onnxruntime": ["rapidocr-onnxruntime", "onnxruntime", "opencv-python", "numpy", "shapely", "pyclipper"],
}

# Sentences read off the rendered pages (checked by eye), each a run of lines that a reader takes in this order. The
# Federal Register page has three columns and footnotes; the first Lion Air sentence ends one column and the "These
# effects" one continues at the top of the next, past the footnotes. The JOSE pages have a sidebar level with the
# summary; the newsletter has two columns.
SENTENCES: list[tuple[str, int, str]] = [
    (
        "Reports/Gov/federal-register-2020-17221.pdf",
        2,
        "Following the Lion Air Flight 610 accident on October 29, 2018, data from the flight data recorder, which is "
        "contained in the Indonesian accident report",
    ),
    (
        "Reports/Gov/federal-register-2020-17221.pdf",
        2,
        "The FAA sent Emergency AD 2018-23-51 to all known U.S. owners and operators of Boeing Model 737 MAX airplanes "
        "to require revising certificate limitations and operating procedures of the AFM",
    ),
    (
        "Reports/Gov/federal-register-2020-17221.pdf",
        2,
        "To address the unsafe condition, the FAA proposes to require four design changes: (1) Installing updated "
        "flight control software (with new control laws) for the FCC operational program software (OPS)",
    ),
    (
        "Reports/Gov/federal-register-2020-17221.pdf",
        2,
        "These effects include stall warning activation, airspeed disagree alert, and altitude disagree alert",
    ),
    (
        "Papers/JOSE/Barba & Forsyth 2018 - CFD Python, the 12 steps to Navier-Stokes.pdf",
        1,
        "The CFD Python learning module is a set of Jupyter notebooks, consisting of 12 core lessons, 3 bonus lessons, "
        "and a lesson zero as a quick intro to Python for numerical computing.",
    ),
    (
        "Papers/JOSE/Barba & Forsyth 2018 - CFD Python, the 12 steps to Navier-Stokes.pdf",
        1,
        "Students learn many valuable lessons as the module guides them through these steps (they should not skip "
        "any!)",
    ),
    (
        "Papers/JOSE/Balwada et al 2024 - Learning Machine Learning with Lorenz-96.pdf",
        1,
        "Machine learning (ML) is a rapidly growing field that is starting to touch all aspects of our lives, and "
        "science is not immune to this.",
    ),
    (
        "Papers/JOSE/Balwada et al 2024 - Learning Machine Learning with Lorenz-96.pdf",
        1,
        "Authors of papers retain copyright and release the work under a Creative Commons Attribution 4.0 "
        "International License (CC BY 4.0).",
    ),
    (
        "Reports/TOPS/August2023Newsletter.pdf",
        1,
        "The August Community Forum will be held on August 10 at 1 PM ET.",
    ),
    (
        "Reports/TOPS/August2023Newsletter.pdf",
        1,
        "is a 5-module curriculum designed to equip researchers, students and citizen scientists with the knowledge "
        "and skills to navigate the principles and practices of open science",
    ),
    (
        "Reports/TOPS/August2023Newsletter.pdf",
        1,
        "The speakers will also discuss how these communities benefit from open science practices and gain insights "
        "into the remarkable work being done by these teams and the open science community at large.",
    ),
]

# Lines typed by hand from the rendered scans and images (viewed at 130-150 dpi): (source, page or 0 for an image).
GROUND_TRUTH: dict[tuple[str, int], str] = {
    ("Scans/c02-22.pdf", 1): (
        "went tip-toeing along a path amongst the trees back towards the end of the widow's garden, stooping down so "
        "as the branches wouldn't scrape our heads. When we was passing by the kitchen I fell over a root and made a "
        "noise. We scrouched down and laid still. "
        "dasn't scratch it; and then my ear begun to itch; and next my back, right between my shoulders. Seemed like "
        "I'd die if I couldn't scratch. Well, I've noticed that thing plenty of times since. If you are with the "
        "quality, or at a funeral, or trying to go to sleep when you ain't sleepy-if you are anywheres"
    ),
    ("Scans/tale-of-two-cities-scan.pdf", 1): (
        "with a plain face, on the throne of England; there were a king with a large jaw and a queen with a fair face, "
        "on the throne of France. In both countries it was clearer than crystal to the lords of the State preserves of "
        "loaves and fishes, that things in general were settled for ever. "
        "In England, there was scarcely an amount of order and protection to justify much national boasting. Daring "
        "burglaries by armed men, and highway robberies, took place in the capital itself every night;"
    ),
    ("Scans/Seige_of_Vicksburg_Sample_OCR.pdf", 1): (
        "A report creeps into camp that Johnston is coming with fifty thousand men to raise the siege, but I do not "
        "believe it. We have often heard that Richmond had fallen, but it continues within the confederate lines. "
        "Last night I sat on the top of a hill awhile, watching the mortar shells flying into the city from the river. "
        "High into the air they leaped, and, like falling stars, dropped, exploding among the houses and shaking even "
        "the very hills. The lighted fuse of each shell could be seen as it went up and came down, and occasionally I "
        "have seen as many as three of them in the air at once."
    ),
    ("Attachments/TOPS_ad.png", 0): (
        "TOPS will be at these upcoming conferences: AGU Fall Meeting Dec. 12-16, 2022 Chicago, IL AMS Annual Meeting "
        "Jan. 8-12, 2023 Denver, CO"
    ),
    ("Attachments/json-canvas-viewer preview.png", 0): (
        "Interface Logic Coordinator Central Type Machine Main Interface Main Logic Received Options and Augmentations "
        "All Available Options and Main Class Augmentations Learn More JSON Canvas Spec Top level Nodes"
    ),
    ("Attachments/TrickView Settings.png", 0): (
        "Settings Application Behavior Automatically Reconnect On Disconnect: Nothing Cycle Period 1.0 seconds "
        "Variable Tree Order Ascending Alphabetical Variable Addition Position: Bottom char[] as string Font Size 15 "
        "Default Units Angle Current Distance Energy Force Frequency Gain Mass Power Pressure Resistance Temperature "
        "Time Unitless Voltage Volume Default All Default Formats Byte Decimal Short Decimal Integer Decimal Long "
        "Decimal Float Decimal Double Decimal Boolean Boolean Enumeration Enumeration String String OK Cancel"
    ),
}

# Pages with no usable text layer that OCR is tried on besides the ground-truth ones (found by the PDF half: under
# the threshold and with ink on the rendered page).
IMAGE_PAGES: list[tuple[str, int]] = [
    ("Slides/TOPS-highlights-public-latest-version.pdf", 3),
    ("Slides/TOPS-highlights-public-latest-version.pdf", 14),
]
OCR_DPIS = (200, 300)
GARBLED_SHARE = 0.6  # A page (of 20 tokens or more) whose word share is under this is listed as garbled.
OCR_THRESHOLD_CHARS = 50  # A page whose text layer has fewer characters of dictionary words than this is OCR'd.
IMAGE_AREA = 0.25  # ... if image objects cover at least this share of it (a blank or text-only page is not).


# ---------------------------------------------------------------------------------------------------------------------
# Text measures


def clean(text: str) -> str:
    """What every processor does to a library's text before use: NFKC (expands ligatures), join soft-hyphen marks."""
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"[\ufffe\u00ad\u0002]\s*", "", text)


def compact(text: str) -> str:
    """Letters and digits only, lower case: for contiguity checks that ignore spacing, quotes and line-end hyphens."""
    return re.sub(r"[^a-z0-9]", "", clean(text).lower())


def bag(text: str) -> Counter[str]:
    joined = re.sub(r"(?<=[A-Za-z])-\s*\n\s*(?=[a-z])", "", clean(text))
    return Counter(re.findall(r"[a-z0-9]+", joined.lower()))


PUNCTUATION = "\"'.,;:!?()[]{}<>*/|-\u201c\u201d\u2018\u2019\u00ab\u00bb\u2014\u2013\u2026\u2022\u00b7"
APOSTROPHES = "'\u2019"


def letter_tokens(text: str) -> Iterator[str]:
    for raw in text.split():
        token = raw.strip(PUNCTUATION)
        if token and all(ch.isalpha() or ch in APOSTROPHES for ch in token):
            yield token


def load_words(vault: Path) -> set[str]:
    words = {line.strip().lower() for line in WORDS.read_text(encoding="utf-8", errors="ignore").splitlines()}
    for note in vault.rglob("*.md"):
        words.update(token.lower() for token in letter_tokens(note.read_text(encoding="utf-8", errors="ignore")))
    return {word for word in words if word}


def is_word(token: str, words: set[str]) -> bool:
    lowered = token.lower().replace("\u2019", "'")
    return lowered in words or lowered.removesuffix("'s") in words or lowered.rstrip("'") in words


def word_stats(text: str, words: set[str]) -> tuple[int, int, int]:
    """(letters-only tokens, of them words, characters in those words) of cleaned text."""
    tokens = list(letter_tokens(clean(text)))
    found = [token for token in tokens if is_word(token, words)]
    return len(tokens), len(found), sum(len(token) for token in found)


def artifacts(text: str, words: set[str]) -> dict[str, int]:
    broken = 0
    for match in re.finditer(r"([A-Za-z]+)[-\u00ad\u2010]\s*\n\s*([a-z]+)", text):
        head, tail = match.group(1), match.group(2)
        if is_word(head + tail, words) and not is_word(head, words):
            broken += 1
    return {
        "ligatures": sum(1 for ch in text if "\ufb00" <= ch <= "\ufb06"),
        "hyphen_marks": sum(text.count(ch) for ch in ("\ufffe", "\u00ad", "\u0002")),
        "replacement": text.count("\ufffd") + len(re.findall(r"\(cid:\d+\)", text)),
        "broken_words": broken,
    }


def f1(one: Counter[str], other: Counter[str]) -> float:
    if not one and not other:
        return 1.0
    common = sum((one & other).values())
    if not common:
        return 0.0
    precision, recall = common / sum(one.values()), common / sum(other.values())
    return 2 * precision * recall / (precision + recall)


def recall(truth: str, text: str) -> float:
    """The share of the ground truth's words found in the text (multiset, order-free)."""
    want, got = bag(truth), bag(text)
    return sum((want & got).values()) / sum(want.values())


# ---------------------------------------------------------------------------------------------------------------------
# One library on one file, in a child process


def _pages_pypdfium2(path: Path) -> Iterator[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            yield textpage.get_text_bounded()
            textpage.close()
            page.close()
    finally:
        pdf.close()


def _pages_pypdf(path: Path) -> Iterator[str]:
    from pypdf import PdfReader

    for page in PdfReader(path).pages:
        yield page.extract_text()


def _pages_pdfminer(path: Path) -> Iterator[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    for layout in extract_pages(path):
        yield "".join(element.get_text() for element in layout if isinstance(element, LTTextContainer))


def _pages_pdfplumber(path: Path) -> Iterator[str]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        for page in pdf.pages:
            yield page.extract_text() or ""
            page.close()


def _pages_playa(path: Path) -> Iterator[str]:
    import playa

    with playa.open(path) as doc:
        for page in doc.pages:
            yield page.extract_text()


def _pages_pdf_oxide(path: Path) -> Iterator[str]:
    import pdf_oxide

    doc = pdf_oxide.PdfDocument(str(path))
    for index in range(doc.page_count()):
        yield doc.extract_text(index)


def _pages_pdftext(path: Path) -> Iterator[str]:
    # pdftext reads a whole document at once; the time is shared out over its pages.
    from pdftext.extraction import paginated_plain_text_output

    yield from paginated_plain_text_output(str(path))


def _pages_pymupdf(path: Path) -> Iterator[str]:
    import pymupdf

    with pymupdf.open(path) as doc:
        for page in doc:
            yield page.get_text()


READERS: dict[str, Callable[[Path], Iterator[str]]] = {
    "pypdfium2": _pages_pypdfium2,
    "pypdf": _pages_pypdf,
    "pdfminer.six": _pages_pdfminer,
    "pdfplumber": _pages_pdfplumber,
    "playa-pdf": _pages_playa,
    "pdf-oxide": _pages_pdf_oxide,
    "pdftext": _pages_pdftext,
    "pymupdf": _pages_pymupdf,
}


def pdf_worker(library: str, path: Path, out: Path) -> None:
    """Child: import the library, then read every page of one file (timed), write the texts and times as JSON."""
    import_worker(library)
    started, cpu = time.perf_counter(), time.process_time()
    reader = READERS[library]
    result: dict[str, object] = {"pages": [], "error": None}
    try:
        texts = []
        for text in reader(path):
            texts.append(text)
        result["pages"] = texts
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {error}"[:300]
    result["seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = time.process_time() - cpu
    out.write_text(json.dumps(result), encoding="utf-8")


def import_worker(library: str) -> None:
    """Child: import the library only, for the baseline of its peak RSS."""
    modules = {"pdfminer.six": "pdfminer.high_level", "playa-pdf": "playa", "pdf-oxide": "pdf_oxide"}
    modules |= {"pdftext": "pdftext.extraction"}
    __import__(modules.get(library, library))


def run_child(
    args: list[str], timeout: float, stdout: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, int, float, float]:
    """Run a child; (exit code or -9 on timeout, its peak RSS in bytes and CPU seconds from wait4, wall seconds)."""
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(stdout.open("wb")) if stdout else subprocess.DEVNULL
        child = subprocess.Popen(args, stdout=sink, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            child.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
    code = -9 if killed.is_set() else child.returncode
    wall = time.perf_counter() - started
    return code, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime, wall


def me(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.attachment_parsers", *args]


# ---------------------------------------------------------------------------------------------------------------------
# The PDF half


def pdf_files(vault: Path) -> list[Path]:
    return sorted(vault.rglob("*.pdf"))


def look(path: Path, page: int) -> tuple[float, float]:
    """(share of dark pixels on the page rendered at 36 dpi, share of the page under image objects, capped at 1)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    pdf = pdfium.PdfDocument(path)
    try:
        sheet = pdf[page - 1]
        image = sheet.render(scale=0.5).to_pil().convert("L")
        dark = sum(image.histogram()[:200]) / (image.width * image.height)
        width, height = sheet.get_size()
        covered = 0.0
        for picture in sheet.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=15):
            left, bottom, right, top = picture.get_bounds()
            covered += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
        return dark, min(1.0, covered / (width * height))
    finally:
        pdf.close()


def needs_ocr(word_chars: int, image_area: float) -> bool:
    """The rule this benchmark recommends: little dictionary text, and an image under a good part of the page."""
    return word_chars < OCR_THRESHOLD_CHARS and image_area >= IMAGE_AREA


def run_pdf(vault: Path, libraries: list[str], words: set[str], work: Path) -> dict[str, object]:
    files = pdf_files(vault)
    per_lib: dict[str, dict[str, object]] = {}
    texts: dict[str, dict[str, list[str]]] = {}
    for library in libraries:
        _, baseline, _, _ = run_child(me("--import-worker", library), FILE_TIMEOUT_S)
        rows, failures, peak, peak_file, seconds, cpu, pages = [], [], 0, "", 0.0, 0.0, 0
        texts[library] = {}
        for path in files:
            rel = str(path.relative_to(vault))
            out = work / "out.json"
            out.unlink(missing_ok=True)
            code, rss, _, _ = run_child(me("--worker", library, str(path), str(out)), FILE_TIMEOUT_S)
            result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
            if code != 0 or result.get("error"):
                failures.append(f"{rel}: {result.get('error') or ('timeout' if code == -9 else f'exit {code}')}")
            page_texts = [text or "" for text in result.get("pages", [])]
            texts[library][rel] = page_texts
            if rss > peak:
                peak, peak_file = rss, rel
            if page_texts:
                seconds += result["seconds"]
                cpu += result["cpu_seconds"]
                pages += len(page_texts)
            rows.append({"file": rel, "pages": len(page_texts), "seconds": result.get("seconds"), "rss": rss})
        per_lib[library] = {
            "baseline_rss": baseline,
            "peak_rss": peak,
            "peak_file": peak_file,
            "median_rss": statistics.median(row["rss"] for row in rows),
            "seconds": seconds,
            "cpu_seconds": cpu,
            "pages": pages,
            "failures": failures,
            "files": rows,
        }
        print(
            f"{library}: {pages} pages in {seconds:.1f} s ({cpu:.1f} s CPU), peak {peak / 2**20:.0f} MB, "
            f"{len(failures)} failures"
        )

    # Quality, per library, over the pages every library returned.
    quality: dict[str, dict[str, object]] = {}
    page_chars: dict[str, dict[str, list[int]]] = {}
    for library in libraries:
        tokens = found = 0
        raw_tokens = raw_found = 0
        counts: Counter[str] = Counter()
        page_chars[library] = {}
        for rel, page_texts in texts[library].items():
            page_chars[library][rel] = []
            for text in page_texts:
                total, hits, chars = word_stats(text, words)
                tokens, found = tokens + total, found + hits
                raw = list(letter_tokens(text))
                raw_tokens += len(raw)
                raw_found += sum(1 for token in raw if is_word(token, words))
                counts.update(artifacts(text, words))
                page_chars[library][rel].append(chars)
        order_hits = []
        for rel, page, sentence in SENTENCES:
            page_texts = texts[library].get(rel, [])
            text = page_texts[page - 1] if len(page_texts) >= page else ""
            order_hits.append(compact(sentence) in compact(text))
        agreement = []
        for other in libraries:
            if other == library:
                continue
            for rel, page_texts in texts[library].items():
                other_texts = texts[other].get(rel, [])
                for index, text in enumerate(page_texts):
                    if index < len(other_texts):
                        one, two = bag(text), bag(other_texts[index])
                        if one or two:
                            agreement.append(f1(one, two))
        quality[library] = {
            "tokens": tokens,
            "word_share": found / tokens if tokens else 0.0,
            "raw_word_share": raw_found / raw_tokens if raw_tokens else 0.0,
            "chars": sum(len(text) for page_texts in texts[library].values() for text in page_texts),
            "artifacts": dict(counts),
            "order": order_hits,
            "agreement": statistics.fmean(agreement) if agreement else 0.0,
        }

    # Pages under the OCR threshold, by library, with the ink on the rendered page.
    low: dict[str, dict[str, object]] = {}
    for library in libraries:
        for rel, chars in page_chars[library].items():
            for index, count in enumerate(chars):
                if count < OCR_THRESHOLD_CHARS:
                    entry = low.setdefault(f"{rel}#page={index + 1}", {"libraries": {}})
                    entry["libraries"][library] = count
    for key, entry in low.items():
        rel, page = key.rsplit("#page=", 1)
        entry["ink"], entry["image_area"] = look(vault / rel, int(page))
    # Pages whose text layer is there but mostly not words (a poor OCR layer, a font without a usable ToUnicode map).
    garbled: dict[str, dict[str, float]] = {}
    for library in libraries:
        for rel, page_texts in texts[library].items():
            for index, text in enumerate(page_texts):
                tokens, found, _ = word_stats(text, words)
                if tokens >= 20 and found / tokens < GARBLED_SHARE:
                    garbled.setdefault(f"{rel}#page={index + 1}", {})[library] = found / tokens
    return {"libraries": per_lib, "quality": quality, "low_pages": low, "garbled": garbled, "files": len(files)}


# ---------------------------------------------------------------------------------------------------------------------
# The OCR half


def rapidocr_worker(engine: str, listing: Path, out: Path) -> None:
    """Child: load one RapidOCR engine once, read each listed image, write texts and times as JSON."""
    started = time.perf_counter()
    if engine == "rapidocr":
        from rapidocr import RapidOCR

        ocr = RapidOCR(
            params={
                "Global.log_level": "error",
                "EngineConfig.onnxruntime.intra_op_num_threads": 1,
                "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            }
        )

        def read(image: str) -> str:
            return "\n".join(ocr(image).txts or ())

    else:
        from rapidocr_onnxruntime import RapidOCR as LegacyRapidOCR

        legacy = LegacyRapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)

        def read(image: str) -> str:
            found, _ = legacy(image)
            return "\n".join(line[1] for line in found or ())

    loaded = time.perf_counter() - started
    results = []
    for image in json.loads(listing.read_text(encoding="utf-8")):
        began, cpu = time.perf_counter(), time.process_time()
        text = read(image)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        results.append({"image": image, "text": text, "seconds": seconds, "cpu_seconds": cpu})
    out.write_text(json.dumps({"load_seconds": loaded, "results": results}), encoding="utf-8")


def render(vault: Path, rel: str, page: int, dpi: int, work: Path) -> tuple[Path, float]:
    import pypdfium2 as pdfium

    began = time.perf_counter()
    pdf = pdfium.PdfDocument(vault / rel)
    try:
        image = pdf[page - 1].render(scale=dpi / 72).to_pil().convert("L")
    finally:
        pdf.close()
    target = work / f"{Path(rel).stem}-p{page}-{dpi}.png"
    image.save(target)
    return target, time.perf_counter() - began


def run_ocr(vault: Path, engines: list[str], words: set[str], work: Path) -> dict[str, object]:
    import pypdfium2 as pdfium

    items: list[dict[str, object]] = []
    pdf_pages = [key for key in GROUND_TRUTH if key[1]] + IMAGE_PAGES
    for rel, page in pdf_pages:
        for dpi in OCR_DPIS:
            image, seconds = render(vault, rel, page, dpi, work)
            items.append({"source": rel, "page": page, "dpi": dpi, "image": str(image), "render_seconds": seconds})
    for png in sorted((vault / "Attachments").glob("*.png")):
        items.append({"source": str(png.relative_to(vault)), "page": 0, "dpi": None, "image": str(png)})
    # The text layers already in these PDFs, for comparison (the Vicksburg scan has an OCR layer of its own).
    layers = {}
    for rel, page in pdf_pages:
        pdf = pdfium.PdfDocument(vault / rel)
        text = pdf[page - 1].get_textpage().get_text_bounded()
        pdf.close()
        tokens, found, chars = word_stats(text, words)
        layers[f"{rel}#{page}"] = {"text": text, "word_share": found / tokens if tokens else 0.0, "word_chars": chars}

    runs: dict[str, dict[str, object]] = {}
    one_thread = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    for engine in engines:
        outputs: list[dict[str, object]] = []
        if engine.startswith("tesseract"):
            # One process per image, as ingest would run it; --psm 11 (sparse text) is the variant for screenshots.
            peak = 0
            for item in items:
                sink = work / "tesseract.txt"
                args = ["tesseract", str(item["image"]), "stdout", "-l", "eng"]
                args += ["--psm", "11"] if engine == "tesseract-psm11" else []
                args += ["--dpi", str(item["dpi"])] if item["dpi"] else []
                code, rss, cpu, wall = run_child(args, FILE_TIMEOUT_S, stdout=sink, env=one_thread)
                peak = max(peak, rss)
                text = sink.read_text(encoding="utf-8", errors="replace") if code == 0 else ""
                outputs.append({"seconds": wall, "cpu_seconds": cpu, "text": text})
            runs[engine] = {"load_seconds": 0.0, "peak_rss": peak, "outputs": outputs}
        else:
            listing, out = work / "images.json", work / "ocr.json"
            listing.write_text(json.dumps([item["image"] for item in items]), encoding="utf-8")
            out.unlink(missing_ok=True)
            _, rss, _, _ = run_child(me("--ocr-worker", engine, str(listing), str(out)), FILE_TIMEOUT_S * 4)
            result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"results": []}
            runs[engine] = {"load_seconds": result.get("load_seconds"), "peak_rss": rss, "outputs": result["results"]}
        print(f"{engine}: {len(runs[engine]['outputs'])} images, peak {runs[engine]['peak_rss'] / 2**20:.0f} MB")
    for item in items:
        item["image"] = Path(str(item["image"])).name
    return {"items": items, "runs": runs, "layers": layers}


# ---------------------------------------------------------------------------------------------------------------------
# Versions, licences, install sizes


def dist_info(name: str) -> tuple[str, str]:
    try:
        meta = importlib.metadata.metadata(name)
    except importlib.metadata.PackageNotFoundError:
        return "-", "-"
    licence = meta.get("License-Expression") or ""
    if not licence:
        classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
        licence = ", ".join(classifiers) or (meta.get("License") or "").splitlines()[0][:60]
    return meta["Version"], licence


def dist_size(names: list[str]) -> int:
    total = 0
    for name in names:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in dist.files or []:
            with contextlib.suppress(OSError):
                total += file.locate().stat().st_size
    return total


def deb_size(packages: list[str]) -> int:
    try:
        listing = subprocess.run(
            ["dpkg-query", "-W", "-f=${Installed-Size}\n", *packages], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return 0
    return sum(int(line) for line in listing.split() if line.isdigit()) * 1024


def deb_version(package: str) -> str:
    try:
        return subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "-"


# ---------------------------------------------------------------------------------------------------------------------
# Report


def mb(value: float) -> str:
    return f"{value / 2**20:.0f} MB"


def pdf_report(result: dict[str, object]) -> str:
    libraries = result["libraries"]
    quality = result["quality"]
    names = list(libraries)
    rows = []
    for name in names:
        lib, q = libraries[name], quality[name]
        version, licence = dist_info(LIBRARIES[name][0])
        rows.append(
            [
                name + ("" if LIBRARIES[name][1] else " (reference only)"),
                version,
                licence,
                mb(dist_size(FOOTPRINT[name])),
                f"{1000 * lib['cpu_seconds'] / max(lib['pages'], 1):.1f}",
                f"{lib['pages'] / max(lib['cpu_seconds'], 1e-9):.0f}",
                f"{1000 * lib['seconds'] / max(lib['pages'], 1):.1f}",
                mb(lib["baseline_rss"]),
                f"{mb(lib['peak_rss'])} ({Path(lib['peak_file']).name})",
                len(lib["failures"]),
            ]
        )
    speed = table(
        [
            "library",
            "version",
            "licence",
            "installed (with deps)",
            "CPU ms/page",
            "pages/CPU s",
            "wall ms/page",
            "RSS after import",
            "peak RSS (file)",
            "failures",
        ],
        rows,
    )
    rows = []
    for name in names:
        q = quality[name]
        art = q["artifacts"]
        rows.append(
            [
                name,
                f"{q['chars']:,}",
                f"{q['word_share']:.3f}",
                f"{q['raw_word_share']:.3f}",
                art.get("ligatures", 0),
                art.get("hyphen_marks", 0),
                art.get("replacement", 0),
                art.get("broken_words", 0),
                f"{sum(q['order'])}/{len(q['order'])}",
                f"{q['agreement']:.3f}",
            ]
        )
    quality_table = table(
        [
            "library",
            "characters",
            "(a) word share, cleaned",
            "word share, raw",
            "(b) ligature chars",
            "U+FFFE/soft-hyphen marks",
            "U+FFFD + (cid:N)",
            "words broken by a line-end hyphen",
            "(c) sentences in order",
            "(d) mean F1 vs the others",
        ],
        rows,
    )
    order_rows = []
    for index, (rel, page, sentence) in enumerate(SENTENCES):
        marks = ["yes" if quality[name]["order"][index] else "**no**" for name in names]
        order_rows.append([f"{Path(rel).name[:34]} p{page}: {sentence[:48]}…", *marks])
    order = table(["sentence", *names], order_rows)
    low_rows = []
    for key, entry in sorted(result["low_pages"].items()):
        cells = [str(entry["libraries"].get(name, "")) for name in names]
        chars = entry["libraries"].get("pypdfium2", OCR_THRESHOLD_CHARS)
        rule = "**OCR**" if needs_ocr(chars, entry["image_area"]) else "no"
        low_rows.append(
            [key.replace("#page=", " p"), f"{entry['ink']:.3f}", f"{entry['image_area']:.2f}", rule, *cells]
        )
    low = table(["page (blank cell: at or over the threshold)", "ink", "image area", "rule", *names], low_rows)
    garbled_rows = [
        [key.replace("#page=", " p"), *(f"{shares[name]:.2f}" if name in shares else "" for name in names)]
        for key, shares in sorted(result["garbled"].items())
    ]
    garbled = table(["page (blank cell: at or over)", *names], garbled_rows) if garbled_rows else "None."
    failures = [f"- {name}: {failure}" for name in names for failure in libraries[name]["failures"]]
    return "\n\n".join(
        [
            f"{result['files']} PDFs, {max(lib['pages'] for lib in libraries.values())} pages; each file read in a "
            f"child process of its own (peak RSS from wait4, {FILE_TIMEOUT_S:.0f} s bound). Times "
            "include opening the file, not importing the library; CPU time (user + system of the parse) is the figure "
            "to compare, since other work shares the machine and wall time varies with it. RSS after import is the "
            "interpreter plus the library, before any file.",
            "#### Speed, memory, failures\n\n" + speed,
            "#### Text quality\n\n(a) share of letters-only tokens found in /usr/share/dict/words plus the vault "
            "notes' words, after NFKC and joining U+FFFE/soft-hyphen marks (raw: before). (b) counted on the raw "
            "text. (d) bag-of-words F1 per page against each other library, averaged.\n\n" + quality_table,
            "#### Reading order: each sentence contiguous (letters and digits only)?\n\n" + order,
            f"#### Pages under {OCR_THRESHOLD_CHARS} characters of dictionary words\n\nThe number is each library's "
            "count; ink is the share of dark pixels on the page rendered at 36 dpi; image area the share of the page "
            f"under image objects (pypdfium2); rule: OCR when pypdfium2 finds under {OCR_THRESHOLD_CHARS} characters "
            f"of dictionary words and images cover at least {IMAGE_AREA:.0%} of the page.\n\n" + low,
            f"#### Pages of 20 tokens or more whose word share is under {GARBLED_SHARE}\n\n" + garbled,
            "#### Failures\n\n" + ("\n".join(failures) or "None."),
        ]
    )


def ocr_report(result: dict[str, object]) -> str:
    items, runs, layers = result["items"], result["runs"], result["layers"]
    engines = list(runs)

    def mean(values: list[float], digits: int = 2) -> str:
        return f"{statistics.fmean(values):.{digits}f}" if values else "-"

    detail_rows, summary_rows = [], []
    cells: dict[str, list[str]] = {engine: [] for engine in engines}
    for engine in engines:
        outputs = runs[engine]["outputs"]
        cpu: dict[object, list[float]] = {200: [], 300: [], None: []}
        scores: dict[object, list[float]] = {200: [], 300: [], None: []}
        for index, item in enumerate(items):
            if index >= len(outputs):
                cells[engine].append("failed")
                continue
            output = outputs[index]
            cpu[item["dpi"]].append(output["cpu_seconds"])
            truth = GROUND_TRUTH.get((item["source"], item["page"]))
            if truth:
                scores[item["dpi"]].append(recall(truth, output["text"]))
                cells[engine].append(f"{output['cpu_seconds']:.2f} s, recall {scores[item['dpi']][-1]:.3f}")
            else:
                cells[engine].append(f"{output['cpu_seconds']:.2f} s, {len(output['text'].strip())} chars")
        if engine.startswith("tesseract"):
            version = deb_version("tesseract-ocr")
            size = deb_size(["tesseract-ocr", "tesseract-ocr-eng", "libtesseract5", "liblept5"])
            licence = "Apache-2.0 (Leptonica BSD-2-Clause; eng model Apache-2.0)"
        else:
            version, licence = dist_info(engine)
            size = dist_size(FOOTPRINT[engine])
            licence += " (PP-OCR models Apache-2.0, in the wheel)"
        summary_rows.append(
            [
                engine,
                version,
                licence,
                mb(size),
                f"{runs[engine]['load_seconds']:.1f}",
                mean(cpu[200]),
                mean(cpu[300]),
                mean(cpu[None]),
                mb(runs[engine]["peak_rss"]),
                mean(scores[200], 3),
                mean(scores[300], 3),
                mean(scores[None], 3),
            ]
        )
    for index, item in enumerate(items):
        label = Path(str(item["source"])).name + (f" p{item['page']}" if item["page"] else "")
        detail_rows.append([label, item["dpi"] or "-", *(cells[engine][index] for engine in engines)])
    summary = table(
        [
            "engine",
            "version",
            "licence",
            "installed",
            "model load s",
            "CPU s/page, 200 dpi",
            "CPU s/page, 300 dpi",
            "CPU s/PNG",
            "peak RSS",
            "recall, scans 200 dpi",
            "recall, scans 300 dpi",
            "recall, PNGs",
        ],
        summary_rows,
    )
    detail = table(["source", "dpi", *engines], detail_rows)
    layer_rows = []
    for key, truth in GROUND_TRUTH.items():
        if key[1]:
            layer = layers[f"{key[0]}#{key[1]}"]
            layer_rows.append(
                [
                    f"{Path(key[0]).name} p{key[1]}",
                    layer["word_chars"],
                    f"{layer['word_share']:.3f}",
                    f"{recall(truth, layer['text']):.3f}",
                ]
            )
    layer_table = table(["page", "characters of dictionary words", "word share", "recall"], layer_rows)
    by_dpi = {dpi: [item["render_seconds"] for item in items if item["dpi"] == dpi] for dpi in OCR_DPIS}
    render_note = ", ".join(f"{dpi} dpi {mean(seconds)} s" for dpi, seconds in by_dpi.items())
    truths = sum(1 for key in GROUND_TRUTH if key[1]), sum(1 for key in GROUND_TRUTH if not key[1])
    return "\n\n".join(
        [
            "Each engine on one thread (tesseract with OMP_THREAD_LIMIT=1, onnxruntime with one intra- and one "
            "inter-op thread). Tesseract runs once per image, as ingest would call it; its peak RSS is the largest of "
            "those processes. Each RapidOCR runs in one process that loads its models once; its peak RSS is that "
            "process's, Python and onnxruntime included. CPU seconds (user + system) rather than wall time, since "
            "other work shares the machine. Recall is the share of the hand-typed words found, order-free, on the "
            f"{truths[0]} scanned pages and {truths[1]} images with a ground truth (GROUND_TRUTH in the script); "
            f"pypdfium2 renders a page (grey) in {render_note} on average.",
            "#### Summary\n\n" + summary,
            "#### Per page or image (CPU seconds; recall where there is a ground truth, else characters read)\n\n"
            + detail,
            "#### The text layers already in those PDFs (pypdfium2), against the same lines\n\n" + layer_table,
        ]
    )


def write_results(raw: dict[str, object], body: str) -> None:
    stamp = raw.get("measured") or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = raw.get("load") or []
    busy = (
        f" Load average (1, 5, 15 min) {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f} at the start and {load[3]:.1f}, "
        f"{load[4]:.1f}, {load[5]:.1f} at the end: other work shared the machine."
        if len(load) == 6
        else ""
    )
    section = (
        f"<!-- bench:attachment-parsers -->\nRun {stamp} on {machine()}, by `python -m bench.attachment_parsers`."
        f"{busy}\n\n{body.strip()}\n<!-- /bench:attachment-parsers -->"
    )
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# PDF libraries and OCR engines for attachments\n"
    pattern = re.compile(r"<!-- bench:attachment-parsers -->.*?<!-- /bench:attachment-parsers -->", re.DOTALL)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    DOC.write_text(text, encoding="utf-8")


def measure(args: argparse.Namespace) -> dict[str, object]:
    if not WORDS.exists():
        sys.exit("No /usr/share/dict/words: apt-get install wamerican")
    if args.only != "pdf" and "tesseract" in args.engines and not shutil.which("tesseract"):
        sys.exit("No tesseract: apt-get install tesseract-ocr tesseract-ocr-eng")
    words = load_words(args.vault)
    raw: dict[str, object] = {"measured": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "load": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="attachment-parsers-") as scratch:
        work = Path(scratch)
        if args.only != "ocr":
            raw["pdf"] = run_pdf(args.vault, args.libraries, words, work)
        if args.only != "pdf":
            raw["ocr"] = run_ocr(args.vault, args.engines, words, work)
    raw["load"] = [*raw["load"], *os.getloadavg()]
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
    return raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, default=VAULT)
    parser.add_argument("--only", choices=["pdf", "ocr"])
    parser.add_argument("--libraries", nargs="*", default=list(LIBRARIES))
    parser.add_argument(
        "--engines", nargs="*", default=["tesseract", "tesseract-psm11", "rapidocr", "rapidocr-onnxruntime"]
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--from-json", type=Path, help="write the report from an earlier --json, without measuring")
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/attachment-parsers.md")
    parser.add_argument("--worker", nargs=3, metavar=("LIBRARY", "PDF", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--import-worker", metavar="LIBRARY", help=argparse.SUPPRESS)
    parser.add_argument("--ocr-worker", nargs=3, metavar=("ENGINE", "LIST", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        pdf_worker(args.worker[0], Path(args.worker[1]), Path(args.worker[2]))
        return
    if args.import_worker:
        import_worker(args.import_worker)
        return
    if args.ocr_worker:
        rapidocr_worker(args.ocr_worker[0], Path(args.ocr_worker[1]), Path(args.ocr_worker[2]))
        return

    raw = json.loads(args.from_json.read_text(encoding="utf-8")) if args.from_json else measure(args)
    sections = []
    if "pdf" in raw:
        sections.append("### PDF text libraries\n\n" + pdf_report(raw["pdf"]))
    if "ocr" in raw:
        sections.append("### OCR engines\n\n" + ocr_report(raw["ocr"]))
    body = "\n\n".join(sections)
    if args.no_doc:
        print(body)
    else:
        write_results(raw, body)
        print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
