"""How many passages `retrieve_passages` (MCP, and the agent's tool) gives, and whether leaving out the filler ever
drops a note that answers: each question of the vaults' sets (follow-ups left out: the tool takes a standalone
question) retrieved as the tool retrieves it, then cut at each share of the best passage's fused score. The share
is chosen on our own sets; the blind sets are run at the chosen share only. Written to docs/benchmarks.md. Uses the
data directories of bench/vault_questions.py (an index already built there is reused)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from rich.console import Console

from bench.report import table, write_section
from bench.vault_questions import DATA_DIR, VAULTS
from secondbrain.config import load_config
from secondbrain.evaluation.questions import load_qa
from secondbrain.note_tools import registry
from secondbrain.retrieve.commands import retrieve_service
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common

SHARES = (0.0, 0.2, 0.3, 0.4, 0.5)
DEFAULT_PASSAGES = 8  # the tool's default


async def retrieved(data: str, vault: Path, questions: Path) -> list[tuple[set[str], list[common.Passage]]]:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SECONDBRAIN_DATA_DIR"] = str(DATA_DIR / data)
    os.environ["SECONDBRAIN_VAULT"] = str(vault)
    found = []
    async with retrieve_service(load_config(), None, Console(stderr=True)) as retrieve:
        for question in load_qa(questions).questions:
            if question.history:
                continue
            options = pb.RetrieveOptions(max_passages=DEFAULT_PASSAGES, condense=False)
            call = retrieve.Retrieve(pb.RetrieveRequest(query=question.text, options=options), timeout=120)
            passages = [event.passage async for event in call if event.HasField("passage")]
            found.append((set(question.relevant), passages))
    return found


def row(name: str, share: float, found: list[tuple[set[str], list[common.Passage]]]) -> list[object]:
    registry.FILLER_SHARE = share
    kept_all = count = chars = 0
    for relevant, passages in found:
        kept = registry.without_filler(passages)
        kept_all += ({p.note_path for p in kept} & relevant) == ({p.note_path for p in passages} & relevant)
        count += len(kept)
        chars += sum(len(p.text) for p in kept)
    n = len(found)
    return [name, len(found), f"{share:.1f}", f"{kept_all / n:.3f}", f"{count / n:.1f}", f"{chars / n:,.0f}"]


async def main() -> None:
    chosen = registry.FILLER_SHARE
    rows = []
    for name, data, vault, questions in VAULTS:
        found = await retrieved(data, vault, questions)
        shares = (0.0, chosen) if "blind" in name else SHARES
        rows += [row(name, share, found) for share in shares]
    registry.FILLER_SHARE = chosen
    body = "\n".join([
        f"`retrieve_passages` asks for {DEFAULT_PASSAGES} passages by default and leaves out those whose fused score "
        f"is under a share of the best passage's (now {chosen}; 0 keeps them all). Per question: does every expected "
        "note the passages held stay, how many passages, how many characters. The share was chosen on the own sets; "
        "the blind sets ran at the chosen share once.",
        "",
        table(["questions", "n", "share", "expected notes all kept", "passages", "characters"], rows),
    ])  # fmt: skip
    write_section("filler", "Filler passages left out of retrieve_passages", body)
    print(body)


if __name__ == "__main__":
    asyncio.run(main())
