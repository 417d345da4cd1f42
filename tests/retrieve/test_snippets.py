"""A search hit's snippet: the block around the match, shaped as the note writes it (pure functions, no database)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.snippets import SNIPPET_CHARS, build
from secondbrain.retrieve.store import MATCH_START, MATCH_STOP

KITCHEN = """## Decisions

- **Worktop**: oak was rejected because it needs oiling every few months; we chose a 30 mm quartz composite in
  pale grey. Decided on 12 January after the showroom visit with Marta.
- **Layout**: keep the sink under the window so the plumbing does not move; the hob moves to the island.

| month | job |
| ----- | :-: |
| June  | sow French beans |

The budget is 14,000 euros,
appliances included, and the
fitter starts in March.

```python
water(tomatoes, litres=2)
```"""


def marked(*words: str) -> str:
    """A ts_headline excerpt that marked `words`."""
    return " … ".join(f"{MATCH_START}{word}{MATCH_STOP} more words" for word in words)


def shown(text: str, ranges: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in ranges]


def test_a_list_item_is_its_marker_and_its_wrapped_lines_joined() -> None:
    text, ranges = build(KITCHEN, marked("quartz"), None)
    assert text == (
        "- **Worktop**: oak was rejected because it needs oiling every few months; we chose a 30 mm quartz composite "
        "in pale grey. Decided on 12 January after the showroom visit with Marta."
    )
    assert shown(text, ranges) == ["quartz"]


def test_a_match_on_a_wrapped_line_of_an_item_shows_the_whole_item() -> None:
    text, ranges = build(KITCHEN, marked("Marta"), None)
    assert text.startswith("- **Worktop**: oak") and text.endswith("with Marta.")
    assert shown(text, ranges) == ["Marta"]


def test_a_table_row_comes_with_the_header_and_the_padding_goes() -> None:
    text, ranges = build(KITCHEN, marked("French"), "french beans")
    assert text == "| month | job |\n|---|:---:|\n| June | sow French beans |"
    assert shown(text, ranges) == ["French beans"]


def test_a_match_in_the_header_shows_the_first_row() -> None:
    text, _ = build(KITCHEN, marked("month"), None)
    assert text == "| month | job |\n|---|:---:|\n| June | sow French beans |"


def test_a_hard_wrapped_paragraph_is_one_line() -> None:
    text, ranges = build(KITCHEN, marked("fitter"), None)
    assert text == "The budget is 14,000 euros, appliances included, and the fitter starts in March."
    assert shown(text, ranges) == ["fitter"]


def test_a_line_of_code_is_inline_code() -> None:
    text, ranges = build(KITCHEN, marked("litres"), None)
    assert text == "`water(tomatoes, litres=2)`"
    assert shown(text, ranges) == ["litres"]


def test_every_occurrence_is_marked_and_words_are_whole() -> None:
    text, ranges = build("Tomatoes: water the tomatoes, not the tomatoesque ones.", marked("tomatoes"), None)
    assert shown(text, ranges) == ["Tomatoes", "tomatoes"]


def test_a_note_found_by_meaning_shows_its_first_block() -> None:
    text, ranges = build(KITCHEN, None, None)
    assert text == "Decisions" and ranges == []


def test_a_long_paragraph_is_cut_around_the_match_at_words() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    text, ranges = build(f"{words} target {words}", marked("target"), None)
    assert text.startswith("… ") and text.endswith(" …") and len(text) <= SNIPPET_CHARS + 4
    assert shown(text, ranges) == ["target"]


@given(st.text(max_size=400), st.text(min_size=1, max_size=12))
def test_any_text_gives_a_snippet_whose_ranges_are_inside_it(source: str, word: str) -> None:
    text, ranges = build(source, marked(word), word if word in source else None)
    assert all(0 <= start < end <= len(text) for start, end in ranges)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
