"""The README and docs/ hold together: every relative link and #anchor resolves (a file that exists, a heading's
GitHub slug in the target), every page in docs/ can be reached from the README, the README stays one screen long,
and what it tells a newcomer to type or set is real (make targets, the VAULT variable, the providers' key variables,
the address `make run` prints)."""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from secondbrain.config import DEFAULT_PORTS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# One screen: what it is, a picture, the commands, where to open it, the vault, a key, and the links to the rest.
README_LINE_BUDGET = 60
# Raw HTML in the markdown (the README's picture) links by src or href.
HTML_LINK = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def parse(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))


def _inline_tokens(tokens: list[Token]) -> list[Token]:
    return [child for token in tokens if token.type == "inline" for child in token.children or []]


def links(path: Path) -> list[str]:
    """Every link target written in the page: markdown links and the src/href of its raw HTML (code is not read)."""
    found = [str(token.attrs["href"]) for token in _inline_tokens(parse(path)) if token.type == "link_open"]
    html = [token.content for token in parse(path) if token.type == "html_block"]
    html += [token.content for token in _inline_tokens(parse(path)) if token.type == "html_inline"]
    found += [target for block in html for target in HTML_LINK.findall(block)]
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lower case, punctuation and symbols dropped, a hyphen for each
    space."""
    kept = "".join(
        char
        for char in heading.lower()
        if char.isalnum() or char in "-_ " or unicodedata.category(char).startswith("M")
    )
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, a repeated one numbered as GitHub numbers it (-1, -2, ...)."""
    tokens = parse(path)
    seen: dict[str, int] = {}
    result = set()
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        text = "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


@dataclass(frozen=True)
class Broken:
    page: str
    target: str
    why: str


def broken_links(page: Path, root: Path = ROOT) -> list[Broken]:
    """Each relative link of `page` whose file does not exist (or is outside `root`), or whose #anchor no heading of
    its target has."""
    problems = []
    for target in links(page):
        if EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        where = page.relative_to(root).as_posix()
        if not resolved.is_relative_to(root):
            problems.append(Broken(where, target, "points outside the repository"))
        elif not resolved.exists():
            problems.append(Broken(where, target, "no such file"))
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(Broken(where, target, f"no heading of {resolved.relative_to(root)} has this anchor"))
    return problems


def reachable_from_readme() -> set[Path]:
    """The markdown pages a reader can reach by following links from the README."""
    reached, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for target in links(page):
            file_part = target.partition("#")[0]
            if EXTERNAL.match(target) or not file_part.endswith(".md"):
                continue
            linked = (page.parent / file_part).resolve()
            if linked.is_file() and linked not in reached:
                reached.add(linked)
                todo.append(linked)
    return reached


def readme_code() -> str:
    """What the README shows to type: its code blocks and inline code."""
    tokens = parse(README)
    blocks = [token.content for token in tokens if token.type in ("fence", "code_block")]
    return "\n".join(blocks + [token.content for token in _inline_tokens(tokens) if token.type == "code_inline"])


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_finds_a_missing_file_a_missing_anchor_and_a_way_out(tmp_path: Path) -> None:
    # The check above passes on a page with no links, or on a checker that reads none: it is shown to catch each kind.
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## The `eval --answers` flag: yes\n", encoding="utf-8")
    page.write_text(
        "# Page\n\n[fine](other.md#the-eval---answers-flag-yes) [self](#page) [gone](missing.md) "
        "[no anchor](other.md#nowhere) [out](../elsewhere.md)\n\n"
        '<img src="images/none.png">\n\n`[in code](gone.md)`\n',
        encoding="utf-8",
    )
    found = {(problem.target, problem.why) for problem in broken_links(page, root=tmp_path)}
    assert found == {
        ("missing.md", "no such file"),
        ("images/none.png", "no such file"),
        ("other.md#nowhere", "no heading of other.md has this anchor"),
        ("../elsewhere.md", "points outside the repository"),
    }


def test_the_readme_links_to_the_rest() -> None:
    # A reader reaches each page of docs/ from the README, directly or through another page.
    unreached = {page.relative_to(ROOT).as_posix() for page in pages()} - {
        page.relative_to(ROOT).as_posix() for page in reachable_from_readme()
    }
    assert unreached == set()
    linked = {target.partition("#")[0] for target in links(README)}
    assert {"docs/configuration.md", "docs/api.md", "docs/architecture.md", "docs/deploy.md"} <= linked


def test_the_readme_is_one_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINE_BUDGET, f"README.md is {len(lines)} lines; move the detail to docs/"


def test_the_commands_the_readme_shows_are_make_targets() -> None:
    code = readme_code()
    shown = set(re.findall(r"\bmake ([a-z][a-z-]*)", code))
    assert {"run", "test"} <= shown
    assert shown <= makefile_targets(), shown - makefile_targets()
    # `make run VAULT=...` is the Makefile's own variable, the one it passes to `secondbrain up --vault`.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for variable in re.findall(r"\bmake run ([A-Z_]+)=", code):
        assert re.search(rf"^{variable} \?=", makefile, re.MULTILINE), variable
        assert f'--vault "$({variable})"' in makefile


def test_the_keys_the_readme_names_are_the_providers_own() -> None:
    endpoints = json.loads((ROOT / "src/secondbrain/providers/endpoints.json").read_text(encoding="utf-8"))
    known = {
        entry[field] for entry in endpoints.values() for field in ("api_key_env", "base_url_env") if field in entry
    }
    named = set(re.findall(r"\b[A-Z][A-Z0-9_]*_(?:API_KEY|URL)\b", readme_code()))
    assert named, "the README names no key"
    assert named <= known, named - known


def test_the_address_the_readme_says_to_open_is_the_one_up_prints() -> None:
    # `up` says "Open <envoy's URL> in a browser" (cli/supervisor.py); Envoy listens on loopback, port 8080 by default.
    supervisor = (ROOT / "src/secondbrain/cli/supervisor.py").read_text(encoding="utf-8")
    assert 'f"Open {gateway.url} in a browser' in supervisor
    readme = README.read_text(encoding="utf-8")
    assert f"Open http://127.0.0.1:{DEFAULT_PORTS['gateway']}/ in a browser" in readme
