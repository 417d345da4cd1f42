"""The answers themselves, not only the retrieval under them: `secondbrain eval --answers` on each vault's own
questions (the demo vault, Obsidian Help, Rust by Example) and on the two blind sets, with no API key, so the quoting
provider answers through a chat service started in the process, as on a fresh install. Written to
docs/benchmarks.md. Uses the data directories of bench/vault_questions.py (an index already built there is
reused)."""

from __future__ import annotations

import asyncio
import os

from bench.report import table, write_section
from bench.vault_questions import DATA_DIR, VAULTS
from secondbrain.cli.eval_services import run_eval
from secondbrain.config import load_config
from secondbrain.evaluation.answers import AnswerScores
from secondbrain.evaluation.run import Report

# What a fresh install without a key answers with: no provider's key is seen.
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TOGETHER_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_URL")


async def measure(data: str, vault: os.PathLike[str], questions: os.PathLike[str]) -> Report:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SECONDBRAIN_DATA_DIR"] = str(DATA_DIR / data)
    os.environ["SECONDBRAIN_VAULT"] = str(vault)
    return await run_eval(
        load_config(), qa=questions, vault=vault, beir=None, split="test", arms=["hybrid"], limit=None,
        as_json=False, answers=True,
    )  # fmt: skip


def _row(label: str, scores: AnswerScores) -> list[str]:
    return [
        label,
        str(scores.questions),
        f"{scores.cites_expected:.2f}",
        f"{scores.only_expected:.2f}",
        f"{scores.contains_hint:.2f} ({scores.hinted})" if scores.hinted else "-",
    ]


async def main() -> None:
    for variable in KEY_VARIABLES:
        os.environ.pop(variable, None)
    rows, providers = [], set()
    for name, data, vault, questions in VAULTS:
        report = await measure(data, vault, questions)
        assert report.answers is not None
        providers.add(report.answers.provider)
        rows.append(_row(f"**{name}**", report.answers.overall))
        rows += [_row(f"{name}: {kind}", scores) for kind, scores in report.answers.per_kind.items()]
    body = "\n".join([
        "Each vault's own questions, and the blind sets (written from the notes alone, never tuned on), asked "
        "through the chat service (ChatService.Answer, a follow-up with its "
        f"history), with no API key: the answers are the quoting provider's ({', '.join(sorted(providers))}). Per "
        "answer: does it cite a passage of an expected note, does it cite only expected notes, and does it contain "
        "the question's `answer_hint` (words a right answer contains, written from the note; in brackets, how many "
        "questions have one). An answer that finds nothing to quote names the closest notes with their numbers, "
        "which counts as citing them.",
        "",
        table(["questions", "n", "cites an expected note", "cites only expected notes", "contains the hint"], rows),
    ])  # fmt: skip
    write_section("answers", "Answers with no key: `eval --answers`", body)
    print(body)


if __name__ == "__main__":
    asyncio.run(main())
