"""Folder and tag filters: what `Filters.parse` accepts and how it normalises it, and what the filter clause keeps,
in every search mode (on a real PostgreSQL)."""

from __future__ import annotations

import asyncpg
import pytest

from secondbrain.errors import InvalidInput
from secondbrain.retrieve.filters import MAX_FILTERS, Filters
from secondbrain.retrieve.modes import MODES, Mode
from secondbrain.retrieve.store import Params
from tests.retrieve.notes import note, paths, write


def test_folders_and_tags_are_normalised_and_deduplicated() -> None:
    filters = Filters.parse(["/Projects/Alpha/", "Projects/Alpha", " Areas "], ["#Project/Alpha", "project/alpha/"])
    assert filters == Filters(("Projects/Alpha", "Areas"), ("project/alpha",))
    assert not Filters.parse() and Filters.parse(tags=["x"])


@pytest.mark.parametrize(
    ("folders", "tags", "words"),
    [
        (["../secrets"], [], "without '..'"),
        (["Projects/./Alpha"], [], "not a vault folder"),
        (["/"], [], "not a vault folder"),
        (["a\\b"], [], "not a vault folder"),
        ([], ["#"], "is not a tag"),
        ([], ["two words"], "is not a tag"),
        (["f"] * (MAX_FILTERS + 1), [], f"at most {MAX_FILTERS}"),
    ],
)
def test_a_filter_that_is_not_a_folder_or_tag_says_how_to_write_it(
    folders: list[str], tags: list[str], words: str
) -> None:
    with pytest.raises(InvalidInput, match=words):
        Filters.parse(folders, tags)


def test_the_clause_numbers_its_parameters_after_the_statement_s_and_escapes_like() -> None:
    p = Params()
    assert p.add("first") == "$1"
    clause = p.filters(Filters(("100%_done",), ("project",)), "f")
    assert clause == (
        "f.path LIKE ANY($2::text[]) AND EXISTS (SELECT 1 FROM unnest(f.tags) AS tag "
        "WHERE lower(tag) = ANY($3::text[]) OR lower(tag) LIKE ANY($4::text[]))"
    )
    assert p.values == ["first", ["100\\%\\_done/%"], ["project"], ["project/%"]]
    assert Params().filters(Filters(), "f") == "true"


@pytest.mark.parametrize("mode", MODES)
async def test_folder_and_hierarchical_tag_filters(pool: asyncpg.Pool, mode: Mode) -> None:
    await write(
        pool,
        note("Projects/Alpha/plan.md", "budget plan", tags=["project/alpha"], chunks=[([], "budget plan", 0.5)]),
        note("Projects/Beta/plan.md", "budget plan", tags=["Project/Beta"], chunks=[([], "budget plan", 0.6)]),
        note("Areas/home.md", "budget plan", tags=["area", "projects"], chunks=[([], "budget plan", 0.9)]),
        note("ProjectsArchive/old.md", "budget plan", tags=["project"], chunks=[([], "budget plan", 0.8)]),
    )

    async def found(**filters: list[str]) -> list[str]:
        return sorted(await paths(pool, "budget", mode, filters=Filters.parse(**filters)))

    assert await found() == [
        "Areas/home.md",
        "Projects/Alpha/plan.md",
        "Projects/Beta/plan.md",
        "ProjectsArchive/old.md",
    ]
    assert await found(folders=["Projects"]) == ["Projects/Alpha/plan.md", "Projects/Beta/plan.md"]
    assert await found(folders=["Projects/Alpha/"]) == ["Projects/Alpha/plan.md"]
    assert await found(tags=["#project"]) == [
        "Projects/Alpha/plan.md",
        "Projects/Beta/plan.md",
        "ProjectsArchive/old.md",
    ]
    assert await found(tags=["project/beta"]) == ["Projects/Beta/plan.md"]
    assert await found(folders=["Areas"], tags=["project"]) == []


def test_file_types_are_named_plainly_and_select_their_extensions() -> None:
    filters = Filters.parse(file_types=[" PDF", "image", "pdf"])
    assert filters.file_types == ("pdf", "image") and bool(filters)
    assert filters.suffixes == (".pdf", ".png", ".jpg", ".jpeg", ".webp")
    with pytest.raises(InvalidInput, match="'pdfs' is not a type of file: use note, pdf, image, canvas"):
        Filters.parse(file_types=["pdfs"])
    p = Params()
    assert p.filters(Filters.parse(file_types=["note", "canvas"]), "f") == "lower(f.path) LIKE ANY($1::text[])"
    assert p.values == [["%.md", "%.canvas"]]


@pytest.mark.parametrize("mode", MODES)
async def test_a_file_type_filter_keeps_the_files_of_that_type(pool: asyncpg.Pool, mode: Mode) -> None:
    await write(
        pool,
        note("Notes/rates.md", "discount rates", chunks=[([], "discount rates", 0.5)]),
        note("Reports/Rates Memo.PDF", "discount rates", chunks=[([], "discount rates", 0.6)]),
        note("Boards/rates.canvas", "discount rates", chunks=[([], "discount rates", 0.7)]),
    )

    async def found(*types: str) -> list[str]:
        return sorted(await paths(pool, "discount", mode, filters=Filters.parse(file_types=list(types))))

    assert await found("pdf") == ["Reports/Rates Memo.PDF"]
    assert await found("note", "canvas") == ["Boards/rates.canvas", "Notes/rates.md"]
    assert await found("spreadsheet") == []
