"""parse_note: front matter, title, tags and wikilinks as a person wrote them, and no input makes it fail."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from secondbrain.ingest.note import WikiLink, parse_note

VAULT = Path(__file__).parent.parent / "data" / "vault"


def read(path: str) -> str:
    return (VAULT / path).read_text(encoding="utf-8")


# --- front matter and title -------------------------------------------------------------------------------------


def test_fixture_home_note() -> None:
    note = parse_note("Home.md", read("Home.md"))
    assert note.title == "Home"
    assert note.aliases == ["Start here", "Index"]
    assert note.frontmatter["created"] == "2024-03-01", "dates become ISO strings so the front matter is JSON"
    assert note.tags == ["hub", "meta", "inbox", "project/active"]
    assert note.body_start_line == 9
    assert note.body.startswith("# Home\n\nWelcome")
    assert note.warnings == []
    assert [(link.target, link.heading, link.alias, link.is_embed) for link in note.links] == [
        ("Projects/Plan", "", "the plan", False),
        ("Reading List", "Books", "", False),
        ("attachments/diagram.png", "", "", True),
    ]
    assert [link.line for link in note.links] == [11, 12, 14]


def test_body_is_exactly_the_lines_after_the_front_matter() -> None:
    text = "---\ntitle: T\n---\nfirst\n\nlast\n"
    note = parse_note("a.md", text)
    assert note.body == "first\n\nlast\n"
    assert note.body_start_line == 4
    assert note.frontmatter == {"title": "T"}
    assert note.content_hash == hashlib.sha256(text.encode()).hexdigest()


def test_front_matter_may_close_with_dots() -> None:
    note = parse_note("a.md", "---\ntitle: Dots\n...\nbody\n")
    assert (note.title, note.body, note.body_start_line) == ("Dots", "body\n", 4)


def test_empty_front_matter_is_an_empty_mapping() -> None:
    note = parse_note("a.md", "---\n---\nbody")
    assert (note.frontmatter, note.body, note.warnings) == ({}, "body", [])


def test_malformed_front_matter_warns_and_stays_out_of_the_body() -> None:
    note = parse_note("Malformed.md", read("Malformed.md"))
    assert note.frontmatter == {}
    assert note.tags == [], "tags from a broken block are not trusted"
    assert note.title == "Malformed front matter"
    assert note.body_start_line == 5
    assert "unclosed" not in note.body, "the block is not prose even when it is not YAML"
    assert len(note.warnings) == 1
    assert note.warnings[0].startswith("malformed front matter (line ")


def test_front_matter_that_is_not_a_mapping_is_ignored_with_a_warning() -> None:
    note = parse_note("List.md", "---\n- a\n- b\n---\ntext\n")
    assert note.frontmatter == {}
    assert note.body == "text\n"
    assert "not a mapping" in note.warnings[0]


def test_unterminated_front_matter_is_read_as_body() -> None:
    text = "---\ntitle: Never closed\n\n# Heading\n"
    note = parse_note("Open.md", text)
    assert note.frontmatter == {}
    assert note.body == text
    assert note.body_start_line == 1
    assert note.title == "Heading"
    assert "unterminated front matter" in note.warnings[0]


def test_a_yaml_alias_bomb_is_refused_not_expanded() -> None:
    bomb = "\n".join(
        ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
        + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]" for i in range(8)]
    )
    note = parse_note("Bomb.md", f"---\n{bomb}\n---\nbody\n")
    assert note.frontmatter == {}
    assert "too large" in note.warnings[0]


def test_title_falls_back_to_the_first_h1_then_the_file_name() -> None:
    assert parse_note("x.md", "intro\n\n## Sub\n\n# The Title #\n").title == "The Title"
    assert parse_note("x.md", "```\n# not a title\n```\n# Real\n").title == "Real"
    assert parse_note("Folder/My Note.md", "no heading here").title == "My Note"
    assert parse_note("Folder/My Note.md", "---\ntitle: 42\n---\n").title == "My Note"


def test_aliases_accept_a_string_or_a_list_under_either_key() -> None:
    assert parse_note("a.md", "---\naliases: Smith, Jane\n---\n").aliases == ["Smith, Jane"]
    assert parse_note("a.md", "---\nalias: [One, Two, One]\n---\n").aliases == ["One", "Two"]


# --- tags -------------------------------------------------------------------------------------------------------


def test_front_matter_tags_as_a_string_split_on_commas_and_spaces() -> None:
    assert parse_note("a.md", "---\ntags: 'one, #two three'\n---\n").tags == ["one", "two", "three"]
    assert parse_note("a.md", "---\ntag: solo\n---\n").tags == ["solo"]
    assert parse_note("Projects/Plan.md", read("Projects/Plan.md")).tags == ["project", "planning", "todo"]


def test_inline_tags_follow_obsidian_rules() -> None:
    body = (
        "#start of line, mid #tag-with_dash and #a/b/c, unicode #café #日本語\n"
        "# Heading is not a tag\n"
        "## Heading with #inheading\n"
        "issue #123, http://x.org/#frag, [[Note#Heading]] and [[#Local]], foo#bar, (#paren)\n"
        "`#inline-code` ``#double `#still-code` code``\n"
        "right after code `x`#glued, after a link [[Note]]#glued too, and after a space `x` #spaced\n"
        "```\n#fenced\n```\n"
        "~~~\n#tilde\n~~~\n"
    )
    assert parse_note("a.md", body).tags == ["start", "tag-with_dash", "a/b/c", "café", "日本語", "inheading", "spaced"]


def test_tags_are_deduplicated_case_insensitively_keeping_the_first_spelling() -> None:
    note = parse_note("a.md", "---\ntags: [Project]\n---\n#project #PROJECT #Other #other\n")
    assert note.tags == ["Project", "Other"]


# --- links ------------------------------------------------------------------------------------------------------


def test_every_wikilink_form_in_file_order_with_file_lines() -> None:
    text = (
        "---\nrelated: '[[From Properties]]'\n---\n"
        "[[Note]] and [[Note#Heading]]\n"
        "[[Folder/Note|shown]] then [[Note#Heading|alias]]\n"
        "![[image.png]] ![[Doc#Part]]\n"
        "| table | [[Cell\\|escaped alias]] |\n"
    )
    links = parse_note("a.md", text).links
    assert links == [
        WikiLink("From Properties", "", "", False, 2),
        WikiLink("Note", "", "", False, 4),
        WikiLink("Note", "Heading", "", False, 4),
        WikiLink("Folder/Note", "", "shown", False, 5),
        WikiLink("Note", "Heading", "alias", False, 5),
        WikiLink("image.png", "", "", True, 6),
        WikiLink("Doc", "Part", "", True, 6),
        WikiLink("Cell", "", "escaped alias", False, 7),
    ]


def test_links_inside_code_are_not_links() -> None:
    text = "`[[inline]]` and ``[[double]]``\n```\n[[fenced]]\n```\n> ~~~\n> [[quoted fence]]\n> ~~~\n[[real]]\n"
    assert [link.target for link in parse_note("a.md", text).links] == ["real"]


def test_a_code_span_inside_a_link_is_the_links_own_text() -> None:
    note = parse_note("a.md", "See [[Format `code` blocks#Inline `x`|the `x` form]].\n")
    assert [(link.target, link.heading, link.alias) for link in note.links] == [
        ("Format `code` blocks", "Inline `x`", "the `x` form")
    ]


def test_an_unterminated_fence_hides_the_rest_of_the_note() -> None:
    note = parse_note("a.md", "[[before]]\n```\n[[inside]] #inside\n")
    assert [link.target for link in note.links] == ["before"]
    assert note.tags == []


def test_same_note_heading_link_has_an_empty_target() -> None:
    assert parse_note("a.md", "see [[#Setup]]").links == [WikiLink("", "Setup", "", False, 1)]
    assert parse_note("a.md", "[[ ]] [[|x]]").links == []


# --- robustness -------------------------------------------------------------------------------------------------


def test_line_endings_are_normalised_but_the_hash_is_of_the_raw_text() -> None:
    text = "---\r\ntitle: T\r\n---\r\nline [[A]]\rline [[B]]\r\n"
    note = parse_note("a.md", text)
    assert note.body == "line [[A]]\nline [[B]]\n"
    assert [link.line for link in note.links] == [4, 5]
    assert note.content_hash == hashlib.sha256(text.encode()).hexdigest()


def test_persona_definition_parses_like_any_note() -> None:
    note = parse_note(".claude/agents/researcher.md", read(".claude/agents/researcher.md"))
    assert note.frontmatter == {
        "name": "Researcher",
        "description": "Finds and cites the notes that answer a question.",
    }
    assert note.body.startswith("You are a careful researcher.")


def test_a_one_megabyte_hostile_note_parses() -> None:
    # How fast is measured in bench/, not asserted here: these machines are too noisy for timed assertions.
    hostile = (
        "word #tag [[Link#Head|alias]] `code` ``` ` `` " * 4
        + "[[" * 20
        + "`" * 30
        + " #" * 30
        + "\n"
        + "plain prose line with a #tag and [[Link]]\n" * 5
    )
    text = "---\ntitle: Big\n---\n" + hostile * (1_000_000 // len(hostile))
    single_line = "`a` ``b`` " * 100_000 + "[[" * 50_000
    for sample in (text, single_line):
        note = parse_note("Big.md", sample)
        assert note.body


# Lines built from the pieces that matter to the parser, so fences, front matter and links meet often.
MARKDOWNISH = st.lists(
    st.sampled_from([*"ab #-[]|!`~>\n:.*\\/1\t\r", "---\n", "```", "[[", "]]", "\ufeff", "title: x\n"]), max_size=60
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), MARKDOWNISH))
def test_never_raises_and_keeps_its_invariants(text: str) -> None:
    note = parse_note("Any.md", text)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    assert note.body == "\n".join(lines[note.body_start_line - 1 :]) or text.startswith("\ufeff")
    for link in note.links:
        assert 1 <= link.line <= len(lines)
        assert "[[" in lines[link.line - 1]
        # Its text is the note's own, never what masking put in place of code.
        assert all(part in lines[link.line - 1] for part in (link.target, link.heading, link.alias))
    assert len({tag.casefold() for tag in note.tags}) == len(note.tags)
    assert all(tag and not tag.startswith("#") for tag in note.tags)


def test_a_front_matter_over_the_limit_is_not_read_and_says_so() -> None:
    block = "title: Planted\nrelated: '[[Elsewhere]]'\n" + "".join(f"key{i}: some value\n" for i in range(5_000))
    note = parse_note("a.md", f"---\n{block}---\n# Compost\n\nSee [[Garden]].\n")
    assert note.title == "Compost" and note.frontmatter == {}
    assert [link.target for link in note.links] == ["Garden"], "no link of the unread block"
    assert note.warnings == [
        f"the front matter is {len(block) - 1:,} bytes, over the 65,536-byte limit (ingest.max_front_matter_bytes): "
        "not read, so its title, tags, aliases, links and dates are ignored; the body is indexed"
    ]
    read = parse_note("a.md", f"---\n{block}---\n# Compost\n", max_front_matter_bytes=len(block))
    assert read.title == "Planted" and len(read.frontmatter) == 5_002 and not read.warnings
