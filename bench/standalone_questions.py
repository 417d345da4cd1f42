"""Standalone questions asked mid-conversation, and follow-ups (issue 46, 1): our hybrid arm before and after a change
to how a message is joined with its conversation, beside the peer pipelines of bench/peers.py.

Ours is `secondbrain eval --json` run once per set and per checkout (the before from a worktree of the earlier
commit), its output kept in a directory as `<label>--<set>.json`; the peers are run here, each built once per vault
and scored on every set of that vault by the evaluation's own `score_arm`. Then one table per set:

    python -m bench.standalone_questions peers OUT          # writes OUT/peers--<set>.json
    python -m bench.standalone_questions table OUT before after    # labels in order, the before first
    python -m bench.standalone_questions summary OUT before after  # one line per set

The sets (every set with conversations in it) are `SETS`; their vaults as in bench/vault_questions.py.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bench.peers import PEERS, with_history
from secondbrain.evaluation.questions import load_qa
from secondbrain.evaluation.ranking import DEPTH
from secondbrain.evaluation.run import score_arm

ROOT = Path(__file__).resolve().parents[1]
SHARED_VAULTS = ROOT.parent / "shared" / "data" / "vaults"
DEMO = ROOT / "demo" / "vault"
DATA = ROOT / "tests" / "data"
# vault -> its sets with conversations: (the set's name in the tables, its file).
SETS: dict[Path, list[tuple[str, Path]]] = {
    DEMO: [
        ("demo vault, own (make eval)", DEMO / ".secondbrain" / "eval.jsonl"),
        ("demo vault, standalone (dev)", DEMO / ".secondbrain" / "standalone-dev.jsonl"),
        ("demo vault, standalone (test)", DEMO / ".secondbrain" / "standalone-test.jsonl"),
        ("demo vault, time-eval", DEMO / ".secondbrain" / "time-eval.jsonl"),
    ],
    SHARED_VAULTS / "obsidian-help": [
        ("Obsidian Help, own", DATA / "obsidian-help-eval.jsonl"),
        ("Obsidian Help, blind", DATA / "obsidian-help-blind.jsonl"),
        ("Obsidian Help, follow-ups (dev)", DATA / "obsidian-help-followups-dev.jsonl"),
        ("Obsidian Help, standalone (dev)", DATA / "obsidian-help-standalone-dev.jsonl"),
        ("Obsidian Help, standalone (test)", DATA / "obsidian-help-standalone-test.jsonl"),
    ],
    SHARED_VAULTS / "rust-by-example": [
        ("Rust by Example, own", DATA / "rust-by-example-eval.jsonl"),
        ("Rust by Example, blind", DATA / "rust-by-example-blind.jsonl"),
        ("Rust by Example, follow-ups (dev)", DATA / "rust-by-example-followups-dev.jsonl"),
        ("Rust by Example, standalone (dev)", DATA / "rust-by-example-standalone-dev.jsonl"),
        ("Rust by Example, standalone (test)", DATA / "rust-by-example-standalone-test.jsonl"),
    ],
}
MEASURES = ("ndcg@10", "recall@5", "mrr@10")


def peers(out: Path) -> None:
    """Each peer over each vault once, scored on every set of the vault, as typed and with the earlier user turns."""
    for vault, sets in SETS.items():
        loaded = [(file, load_qa(file)) for _, file in sets]
        results: dict[Path, dict] = {file: {"arms": {}, "per_kind": {}} for file, _ in loaded}
        for name, (make, _) in PEERS.items():
            started = time.perf_counter()
            peer = make(vault)
            print(f"{name} over {vault.name}: built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
            for file, questions in loaded:
                for history in (False, True):
                    rankings = {
                        q.id: peer.rank(with_history(q) if history else q.text, DEPTH) for q in questions.questions
                    }
                    label = f"peer: {name}" + (" + history" if history else "")
                    arm = score_arm(label, "", questions.questions, rankings, 0.0)
                    results[file]["arms"][label] = arm.overall
                    results[file]["per_kind"][label] = arm.per_kind
        for file, result in results.items():
            (out / f"peers--{file.stem}.json").write_text(json.dumps(result, indent=2))


def table(out: Path, *labels: str, names: dict[str, str] | None = None) -> str:
    """Per set: our hybrid arm under each label (the first the before, the last the kept rule), lexical and vector
    under the first and last, the standalone and follow-up questions apart, and the peers."""
    names = names or {}
    parts = []
    for sets in SETS.values():
        for title, file in sets:
            ours = {label: json.loads((out / f"{label}--{file.stem}.json").read_text()) for label in labels}
            other = json.loads((out / f"peers--{file.stem}.json").read_text())
            last = ours[labels[-1]]
            kinds = [k for k in ("standalone", "follow-up") if k in last["per_kind"]["hybrid"]]
            header = ["arm", *MEASURES, *(f"{k} ({last['kinds'][k]}) nDCG@10 / R@5" for k in kinds)]
            rows = []
            for arm in ("hybrid", "lexical", "vector"):
                # Every label's hybrid arm; the single arms only before and after.
                shown = labels if arm == "hybrid" else (labels[0], labels[-1])
                for label in shown:
                    report = ours[label]
                    name = f"{arm}, {names.get(label, label)}"
                    rows.append(_row(name, report["arms"][arm], report["per_kind"][arm], kinds))
            for arm, overall in other["arms"].items():
                rows.append(_row(arm, overall, other["per_kind"][arm], kinds))
            parts += [f"**{title}**: {last['questions']} questions.", "", _markdown(header, rows), ""]
    return "\n".join(parts)


def summary(out: Path, *labels: str, names: dict[str, str] | None = None) -> str:
    """One line per set: hybrid nDCG@10 / Recall@5 under each label, the standalone and follow-up questions' nDCG@10
    under the first and last, and the best peer arm."""
    names = names or {}
    header = ["set", "n", *(f"hybrid, {names.get(label, label)}" for label in labels)]
    header += ["standalone", "follow-ups", "best peer"]
    rows = []
    for sets in SETS.values():
        for title, file in sets:
            ours = [json.loads((out / f"{label}--{file.stem}.json").read_text()) for label in labels]
            other = json.loads((out / f"peers--{file.stem}.json").read_text())
            cells = [title, str(ours[-1]["questions"])]
            cells += [f"{r['arms']['hybrid']['ndcg@10']:.3f} / {r['arms']['hybrid']['recall@5']:.3f}" for r in ours]
            for kind in ("standalone", "follow-up"):
                first, last = (r["per_kind"]["hybrid"].get(kind) for r in (ours[0], ours[-1]))
                count = ours[-1]["kinds"].get(kind, 0)
                cells.append(f"{first['ndcg@10']:.3f} → {last['ndcg@10']:.3f} ({count})" if first and last else "")
            best = max(other["arms"], key=lambda arm: other["arms"][arm]["ndcg@10"])
            overall = other["arms"][best]
            cells.append(f"{overall['ndcg@10']:.3f} / {overall['recall@5']:.3f} ({best.removeprefix('peer: ')})")
            rows.append(cells)
    return _markdown(header, rows)


def _row(name: str, overall: dict, per_kind: dict, kinds: list[str]) -> list[str]:
    cells = [f"{overall[m]:.3f}" for m in MEASURES]
    cells += [f"{per_kind[k]['ndcg@10']:.3f} / {per_kind[k]['recall@5']:.2f}" for k in kinds]
    return [name, *cells]


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


if __name__ == "__main__":
    command, directory, *labels = sys.argv[1:]
    if command == "peers":
        peers(Path(directory))
    elif command == "summary":
        print(summary(Path(directory), *labels))
    else:
        print(table(Path(directory), *labels))
