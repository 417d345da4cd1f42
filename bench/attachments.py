"""Attachments (issue 48), in one run on the attachments vault (../shared/data/vaults/attachments):

- ingest: a first sync from an empty index, with OCR and without (`ingest.ocr` false), timed, its pages a second, and
  the peak memory of the ingest process together with its parsing worker (polled);
- retrieval: our arms against the peer script a user could write (markdown as text and each PDF page's text with
  pypdfium2, no OCR; rank_bm25 and the bundled MiniLM over 200-word windows, rolled up to files, RRF k = 60), on the
  dev set (tests/data/attachments-dev.jsonl, where variants are chosen) and the test set
  (tests/data/attachments-test.jsonl, frozen before anything ran on it), per kind of question, per type of file, and
  page-level recall@5 (a hit needs the right page). Leads carry a paired bootstrap 95% interval.

Written to docs/benchmarks.md. `python -m bench.attachments` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil

from bench.peers import CANDIDATE_WINDOWS, STRIDE_WORDS, WINDOW_WORDS, _tokens, bundled_model_path, roll_up, rrf
from bench.report import table, write_section
from bench.vault_questions import lead
from secondbrain.cli.eval_services import run_eval
from secondbrain.config import load_config
from secondbrain.evaluation.metrics import page_recall
from secondbrain.evaluation.questions import QuestionSet, load_qa, page_unit
from secondbrain.evaluation.ranking import DEPTH
from secondbrain.evaluation.run import ArmResult, Report, score_arm

ROOT = Path(__file__).resolve().parents[1]
VAULT = ROOT.parent / "shared" / "data" / "vaults" / "attachments"
SETS = [
    ("dev", ROOT / "tests" / "data" / "attachments-dev.jsonl"),
    ("test", ROOT / "tests" / "data" / "attachments-test.jsonl"),
]
DATA_DIR = Path.home() / ".cache" / "secondbrain-bench" / "attachments"
ARMS = ["lexical", "vector", "hybrid"]


@dataclass(frozen=True)
class PageWindow:
    path: str
    text: str
    page: int | None


class AttachmentScriptPeer:
    """The script a user could write for a vault with PDFs: markdown read as text, PDFs page by page with pypdfium2
    (no OCR: a scanned page is empty to it), nothing else read; BM25 and MiniLM over 200-word windows of each, each
    arm rolled up to files, RRF of the two. A window keeps its page, so its page ranking can be scored too."""

    def __init__(self, vault: Path) -> None:
        from rank_bm25 import BM25Okapi
        from sentence_transformers import SentenceTransformer

        self.windows = list(_peer_windows(vault))
        self.bm25 = BM25Okapi([_tokens(w.text) for w in self.windows])
        self.model = SentenceTransformer(bundled_model_path(), device="cpu", local_files_only=True)
        self.vectors = self.model.encode(
            [w.text for w in self.windows], batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )

    def rank(self, text: str) -> tuple[list[str], list[str]]:
        lexical = np.argsort(-self.bm25.get_scores(_tokens(text)), kind="stable")[:CANDIDATE_WINDOWS]
        query = self.model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
        vector = np.argsort(-(self.vectors @ query), kind="stable")[:CANDIDATE_WINDOWS]
        files = rrf(roll_up(self.windows, lexical), roll_up(self.windows, vector))[:DEPTH]  # type: ignore[arg-type]
        pages = rrf(self._pages(lexical), self._pages(vector))
        return files, pages

    def _pages(self, order: np.ndarray) -> list[str]:
        seen: dict[str, None] = {}
        for index in order:
            window = self.windows[index]
            if window.page is not None:
                seen.setdefault(page_unit(window.path, window.page), None)
        return list(seen)


def _peer_windows(vault: Path):  # noqa: ANN202 - PageWindow, one by one
    import pypdfium2

    for file in sorted(vault.rglob("*")):
        relative = file.relative_to(vault)
        if any(part.startswith(".") for part in relative.parts) or not file.is_file():
            continue
        path, title = relative.as_posix(), file.stem
        if file.suffix.lower() == ".md":
            pieces = [(file.read_text(encoding="utf-8", errors="replace"), None)]
        elif file.suffix.lower() == ".pdf":
            document = pypdfium2.PdfDocument(file)
            pieces = [(document[i].get_textpage().get_text_bounded(), i + 1) for i in range(len(document))]
        else:
            continue
        for text, page in pieces:
            words = text.split()
            for start in range(0, max(len(words) - (WINDOW_WORDS - STRIDE_WORDS), 1), STRIDE_WORDS):
                yield PageWindow(path, f"{title}\n{' '.join(words[start : start + WINDOW_WORDS])}", page)


def peer_arm(peer: AttachmentScriptPeer, questions: QuestionSet) -> ArmResult:
    started = time.perf_counter()
    files, pages = {}, {}
    for question in questions.questions:
        files[question.id], pages[question.id] = peer.rank(question.text)
    result = score_arm(
        "peer: script",
        "markdown and pypdfium2 page text, rank_bm25 + MiniLM over 200-word windows, RRF",
        questions.questions,
        files,
        time.perf_counter() - started,
    )
    result.page_recall = page_recall(questions.questions, pages)
    return result


# Ingest -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IngestRun:
    label: str
    seconds: float
    peak_rss: int
    pages: int
    summary: str


def pdf_pages(vault: Path) -> int:
    import pypdfium2

    return sum(len(pypdfium2.PdfDocument(file)) for file in vault.rglob("*.pdf"))


def ingest_once(label: str, ocr: bool, pages: int) -> IngestRun:
    """A first sync of a copy of the vault (its own settings say whether OCR runs) into an empty index."""
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-attachments-") as scratch:
        vault = Path(scratch, "vault")
        shutil.copytree(VAULT, vault)
        (vault / "secondbrain.json").write_text(json.dumps({"ingest": {"ocr": ocr}}))
        env = {**os.environ, "SECONDBRAIN_DATA_DIR": str(Path(scratch, "data")), "SECONDBRAIN_VAULT": str(vault)}
        env.pop("DATABASE_URL", None)
        command = [sys.executable, "-m", "secondbrain", "ingest", str(vault)]
        started = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        peak = _peak_tree_rss(child)
        output = child.communicate()[0]
        seconds = time.perf_counter() - started
    synced = next((line for line in output.splitlines() if line.startswith("Synced")), output.strip()[-300:])
    return IngestRun(label, seconds, peak, pages, synced)


def _peak_tree_rss(child: subprocess.Popen[str]) -> int:
    """The highest RSS of `child` and its own processes (the parsing worker, tesseract) together, polled every 0.2 s;
    the embedded PostgreSQL, a server of its own, is not counted."""
    peak = 0
    watched = psutil.Process(child.pid)
    while child.poll() is None:
        try:
            tree = [watched, *(p for p in watched.children(recursive=True) if "postgres" not in p.name())]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.2)
    return peak


# The run ------------------------------------------------------------------------------------------------------------


async def evaluate(questions: Path) -> Report:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SECONDBRAIN_DATA_DIR"] = str(DATA_DIR)
    os.environ["SECONDBRAIN_VAULT"] = str(VAULT)
    return await run_eval(
        load_config(), qa=questions, vault=VAULT, beir=None, split="test", arms=ARMS, limit=None, as_json=False
    )


def set_section(name: str, report: Report) -> list[str]:
    kinds, types = list(report.kinds), list(report.types)
    rows = [
        [
            arm.name,
            f"{arm.overall['ndcg@10']:.3f}",
            f"{arm.overall['recall@5']:.3f}",
            f"{arm.page_recall:.3f}" if arm.page_recall is not None else "",
            *(f"{arm.per_kind[k]['recall@5']:.2f}" for k in kinds),
        ]
        for arm in report.arms
    ]
    by_type = [
        [arm.name, *(f"{arm.per_type[t]['recall@5']:.2f} / {arm.per_type[t]['ndcg@10']:.2f}" for t in types)]
        for arm in report.arms
    ]
    arms = {arm.name: arm for arm in report.arms}
    hybrid = arms["hybrid"]
    missed = "; ".join(f"{m.id} ({m.question})" for m in hybrid.misses) or "none"
    return [
        f"**{name}**: {report.questions} questions, {report.paged} naming their pages.",
        "",
        table(
            ["arm", "ndcg@10", "recall@5", "page recall@5", *(f"{k} ({report.kinds[k]})" for k in kinds)],
            rows,
        ),
        "",
        "By the type of file that answers each question (recall@5 / nDCG@10):",
        "",
        table(["arm", *(f"{t} ({report.types[t]})" for t in types)], by_type),
        "",
        f"Hybrid nDCG@10 over the peer script: {lead(hybrid, arms['peer: script'])}. Missed by hybrid: {missed}.",
        "",
    ]


async def main() -> None:
    if not VAULT.is_dir():
        raise SystemExit(f"{VAULT} is not here: this benchmark reads the shared attachments vault")
    pages = pdf_pages(VAULT)
    runs = [ingest_once("with OCR", True, pages), ingest_once("without OCR", False, pages)]
    parts = [
        __doc__.split("\n\n", 1)[1].split("Written to")[0].strip(),
        "",
        f"Ingest, a first sync of the whole vault ({pages} PDF pages) into an empty index, embedding included:",
        "",
        table(
            ["run", "seconds", "PDF pages a second", "peak RSS (ingest and its worker)", "sync"],
            [
                [r.label, f"{r.seconds:.1f}", f"{r.pages / r.seconds:.1f}", f"{r.peak_rss / 1024**2:.0f} MB", r.summary]
                for r in runs
            ],
        ),
        "",
    ]
    peer = AttachmentScriptPeer(VAULT)
    for name, path in SETS:
        report = await evaluate(path)
        report.arms.append(peer_arm(peer, load_qa(path)))
        parts += set_section(f"{name} set ({path.name})", report)
    write_section("attachments", "Attachments: ingest, and retrieval beside a peer script", "\n".join(parts))


if __name__ == "__main__":
    asyncio.run(main())
