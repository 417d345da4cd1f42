"""The agent loop's tricky parts on their own: one numbering across the turn, fitting a tool's result into the room
left, and holding back a step's text until it is known to be the answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.chat.agent import CUT_NOTE, TurnPassages, _HeldText, fit
from secondbrain.llm.tokens import count_tokens
from secondbrain.note_tools import Found
from secondbrain.note_tools.formatting import passages as passages_text
from secondbrain.note_tools.registry import without_filler
from secondbrain.v1 import retrieval_pb2 as common


def _passage(path: str, start: int, end: int, text: str = "", number: int = 0) -> common.Passage:
    return common.Passage(number=number, note_path=path, start_line=start, end_line=end, text=text or f"{path} text")


def _found(passages: list[common.Passage]) -> Found:
    return Found(render=lambda ps: passages_text(ps, "q"), summary=lambda ps: f"{len(ps)}", passages=tuple(passages))


def test_tool_passages_continue_the_turns_numbers_and_a_passage_it_has_keeps_its_number() -> None:
    retrieval = common.RetrievalResult(passages=[_passage("A.md", 1, 10, number=1), _passage("B.md", 3, 4, number=2)])
    book = TurnPassages(retrieval)

    numbered, new = book.number([_passage("A.md", 2, 5), _passage("C.md", 1, 3), _passage("B.md", 1, 9)])
    assert [(p.note_path, p.number) for p in numbered] == [("A.md", 1), ("C.md", 3), ("B.md", 4)]
    assert [p.number for p in new] == [3, 4], "within A.md's lines 1-10: that passage; B.md 1-9 is wider: a new one"
    assert numbered[0].text == "A.md text", "the turn's passage, as the model will be shown it"

    again, new = book.number([_passage("C.md", 1, 3), _passage("C.md", 2, 3)])
    assert [p.number for p in again] == [3] and new == [], "one passage once, however often it is found"
    assert [p.number for p in retrieval.passages] == [1, 2, 3, 4], "the stored result holds every passage"


def test_fit_drops_whole_passages_from_the_end_then_cuts_a_lone_one_by_lines() -> None:
    long = "\n".join(f"Line {n} of the kitchen note says something about worktops." for n in range(1, 41))
    found = _found([_passage("A.md", 1, 40, long), _passage("B.md", 1, 40, long)])
    whole = count_tokens(found.text())

    assert fit(found, whole) == (list(found.passages), found.text())
    kept, text = fit(found, whole - 10) or ([], "")
    assert [p.note_path for p in kept] == ["A.md"] and count_tokens(text) <= whole - 10

    kept, text = fit(found, 120) or ([], "")
    assert len(kept) == 1 and kept[0].start_line == 1 and 1 <= kept[0].end_line < 40
    assert kept[0].text == "\n".join(long.split("\n")[: kept[0].end_line]) and count_tokens(text) <= 120
    assert fit(found, 5) is None, "not even a line fits"


def test_fit_cuts_a_result_without_passages_and_says_so() -> None:
    found = Found(render=lambda _: "word " * 2000, summary=lambda _: "")
    kept, text = fit(found, 300) or ([], "")
    assert kept == [] and text.endswith(CUT_NOTE) and count_tokens(text) <= 301


@given(
    lines=st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=80), min_size=1, max_size=30),
    limit=st.integers(min_value=1, max_value=600),
)
def test_a_fitted_result_is_within_its_room_and_its_lines_are_a_prefix(lines: list[str], limit: int) -> None:
    passage = _passage("A.md", 5, 5 + len(lines) - 1, "\n".join(lines))
    found = _found([passage])
    fitted = fit(found, limit)
    if fitted is None:
        return
    kept, text = fitted
    assert count_tokens(text) <= limit
    assert passage.text.startswith(kept[0].text) and kept[0].start_line == 5
    assert 5 <= kept[0].end_line <= passage.end_line


def test_a_steps_text_is_held_until_it_is_an_answer() -> None:
    thinking = _HeldText()
    assert thinking.add("Let me look ") == "" and thinking.add("at the kitchen note.") == ""
    assert thinking.text == "Let me look at the kitchen note." and thinking.rest() == thinking.text

    citing = _HeldText()
    assert citing.add("You chose quartz ") == ""
    assert citing.add("[3] after") == "You chose quartz [3] after", "a citation: the answer is being written"
    assert citing.add(" the samples.") == " the samples." and citing.rest() == ""

    long = _HeldText()
    assert long.add("x" * 239) == "" and long.add("y") == "x" * 239 + "y"


def test_filler_passages_are_left_out_but_linked_notes_and_reranked_lists_are_not() -> None:
    def passage(number: int, fused: float, **fields: object) -> common.Passage:
        return common.Passage(number=number, note_path=f"n{number}.md", fused_score=fused, **fields)

    found = [passage(1, 0.5), passage(2, 0.2), passage(3, 0.149), passage(4, 0.0, via_link=True)]
    assert [p.number for p in without_filler(found)] == [1, 2, 4]
    reranked = [passage(1, 0.5, rerank_score=-1.0), passage(2, 0.01, rerank_score=-3.0)]
    assert without_filler(reranked) == reranked
    assert without_filler([]) == []
