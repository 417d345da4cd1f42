"""What `ask`, `search` and `retrieve` print, as a person reads it at a terminal (a pseudo-terminal of 60 columns)
and as a program reads it from a pipe: rendered markdown wrapped at words, wrapped lines under their bullet; and plain
text, no colour codes, no line broken by the printer."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.console import Console

from secondbrain.cli.terminal import MarkdownStream, hanging, markdown, snippet_text
from tests.command import run_secondbrain
from tests.wire import OpenAIServer, Reply

COLUMNS = 60
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")

ANSWER = (
    "## The kitchen\n\n"
    "The **oak worktop** cost 14,380 in the end [1], and the tiles were matched to the wall by the carpenter [2].\n\n"
    "- the worktop: oiled oak, fitted in March after a long wait for the supplier\n"
    "- the tiles: `zellige`, hand made\n"
)
NOTE = (
    "---\ntags: [house, kitchen, renovation, budget, decisions]\n---\n"
    "# Kitchen Renovation\n\n## Worktop and tiles\n\n"
    "We chose the **oak worktop** in the end, after the quartz samples were matched against the wall colour and "
    "rejected by the carpenter; the final bill for the kitchen was 14,380.\n"
)


def at_terminal(args: list[str], env: dict[str, str], columns: int = COLUMNS) -> tuple[int, str, str]:
    """The command with its stdout on a pseudo-terminal of `columns` (stderr a pipe): exit code, the lines seen on
    the terminal (colour codes left out), stderr."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {key: value for key, value in env.items() if key not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        [sys.executable, "-m", "secondbrain", *args], stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    seen = bytearray()
    try:
        while select.select([master], [], [], 120)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the command has closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        stderr = process.stderr.read().decode() if process.stderr else ""
        code = process.wait(60)
    finally:
        os.close(master)
        if process.returncode is None:
            process.kill()
    assert seen, "nothing on the terminal"
    return code, ANSI.sub("", seen.decode()).replace("\r\n", "\n"), stderr


def _words(text: str) -> list[str]:
    return re.findall(r"[\w,.\[\]-]+", text)


@pytest.fixture
async def answering(service_env: dict[str, str], tmp_path: Path):
    """A vault with one note, indexed; `ask` answered by a scripted model on OpenAI's wire."""
    vault = tmp_path / "vault"
    (vault / "Home").mkdir(parents=True)
    (vault / "Home" / "Kitchen Renovation.md").write_text(NOTE, encoding="utf-8")
    (vault / "secondbrain.json").write_text(
        json.dumps({"chat": {"default_provider": "openai"}, "retrieve": {"condense": False}})
    )
    async with OpenAIServer() as llm:
        env = {key: value for key, value in service_env.items() if not key.endswith("_API_KEY")}
        env.update(SECONDBRAIN_VAULT=str(vault), OPENAI_API_KEY="sk-test-cli-0123456789", OPENAI_BASE_URL=llm.base_url,
                   SECONDBRAIN_CHAT_PORT="9", SECONDBRAIN_RETRIEVE_PORT="9", SECONDBRAIN_INGEST_PORT="9")  # fmt: skip
        code, _, stderr = await run_secondbrain("ingest", env=env)
        assert code == 0, stderr
        yield llm, env


def _answer_deltas() -> list[str]:
    """The answer in pieces that end mid-word and mid-block, as a model streams."""
    return [ANSWER[i : i + 17] for i in range(0, len(ANSWER), 17)]


async def test_ask_at_a_terminal_renders_the_markdown_wrapped_at_words(answering) -> None:
    llm, env = answering
    llm.script.push(Reply(deltas=_answer_deltas()))
    # In a thread: the scripted model answers on this test's event loop.
    code, screen, stderr = await asyncio.to_thread(at_terminal, ["ask", "What did the kitchen cost?", "--rag"], env)
    assert code == 0, stderr
    lines = screen.splitlines()
    assert all(len(line.rstrip()) <= COLUMNS for line in lines), screen
    # Rendered: no markdown markers left, the citations as written.
    assert "**" not in screen and "##" not in screen and "`" not in screen, screen
    assert "The kitchen" in lines[0] and "[1]" in screen and "[2]" in screen, screen
    # Wrapped at words: every word of the answer is whole on some line (found by a user: "mat/ch" at 120 columns).
    words = set(_words(screen))
    expected = [word for word in _words(re.sub(r"[*#`]", "", ANSWER)) if word != "-"]
    assert [word for word in expected if word not in words] == [], screen
    # A wrapped list item goes on under its text, not at column 0 or under the bullet.
    item = next(i for i, line in enumerate(lines) if "• the worktop" in line)
    indent = lines[item].index("the worktop")
    assert lines[item + 1].startswith(" " * indent) and lines[item + 1][indent] != " ", screen
    # The sources: each under the answer, a wrapped one under its own text.
    source = next(i for i, line in enumerate(lines) if line.startswith("  [1] "))
    assert "Kitchen Renovation > Worktop and tiles" in lines[source], screen
    assert lines[source + 1].startswith(" " * 6) and lines[source + 1][6] != " ", screen
    # One blank line between blocks, as in the note.
    assert "\n\n\n" not in screen.replace(" ", ""), screen


async def test_ask_into_a_pipe_prints_the_answer_as_written(answering) -> None:
    llm, env = answering
    llm.script.push(Reply(deltas=_answer_deltas()))
    code, stdout, stderr = await run_secondbrain("ask", "What did the kitchen cost?", "--rag", env=env)
    assert code == 0, stderr
    assert "\x1b" not in stdout
    # The model's markdown, whole: no line broken at 80 columns, nothing added inside it.
    assert stdout.startswith(ANSWER), stdout
    assert any(re.fullmatch(r"  \[1\] Kitchen Renovation > Worktop and tiles  Home/Kitchen Renovation.md:\d+-\d+", line)
               for line in stdout.splitlines()), stdout  # fmt: skip


async def test_search_at_a_terminal_keeps_a_wrapped_snippet_under_its_note(answering) -> None:
    _, env = answering
    code, screen, stderr = await asyncio.to_thread(at_terminal, ["search", "quartz samples"], env)
    assert code == 0, stderr
    lines = [line.rstrip() for line in screen.splitlines()]
    assert lines[0].startswith("1. Kitchen Renovation"), screen
    assert all(len(line) <= COLUMNS for line in lines), screen
    # Every line after the first, the tag line's and the snippet's, starts under the title.
    assert len(lines) >= 4 and all(line.startswith("   ") and line[3] != " " for line in lines[1:] if line), screen
    assert "**" not in screen and "oak worktop" in screen, "the note's bold as bold"
    assert set(_words("#house #kitchen #renovation #budget #decisions")) <= set(_words(screen)), screen


async def test_search_and_retrieve_into_a_pipe_keep_each_line_whole(answering) -> None:
    _, env = answering
    code, stdout, stderr = await run_secondbrain("search", "quartz samples", env=env)
    assert code == 0, stderr
    lines = stdout.splitlines()
    assert lines[0] == (
        "1. Kitchen Renovation  Home/Kitchen Renovation.md  #house #kitchen #renovation #budget #decisions"
    ), stdout
    assert lines[1].startswith("   We chose the **oak worktop** in the end, after the quartz samples were matched")
    assert len(lines) == 2 and "\x1b" not in stdout, stdout
    code, stdout, stderr = await run_secondbrain("retrieve", "What did the kitchen cost?", env=env)
    assert code == 0, stderr
    assert any(re.fullmatch(r"\[1\] Kitchen Renovation > Worktop and tiles  Home/Kitchen Renovation.md:\d+-\d+", line)
               for line in stdout.splitlines()), stdout  # fmt: skip
    assert NOTE.splitlines()[-1] in stdout.splitlines(), "the passage's long line whole"
    assert stdout.splitlines()[-1].startswith("1 passage in "), stdout


# -- the renderers, at a forced terminal of a given width ------------------------------------------------------


def test_a_streamed_answer_is_rendered_a_block_at_a_time_and_a_code_block_whole() -> None:
    console = Console(force_terminal=True, width=40, record=True)
    stream = MarkdownStream(console)
    for piece in ["Intro [1].\n", "\n```\nline one\n", "\n", "line two\n```\n", "\n- a", " bullet"]:
        stream.write(piece)
    rendered_before_the_end = console.export_text(clear=False)
    stream.close()
    shown = console.export_text()
    assert "Intro [1]." in rendered_before_the_end and "line two" in rendered_before_the_end
    assert "bullet" not in rendered_before_the_end, "a block still being written waits"
    assert "```" not in shown and "• a bullet" in shown and "line one" in shown, shown


def test_into_a_pipe_the_renderers_write_plain_text() -> None:
    console = Console(force_terminal=False, width=40, record=True)
    console.soft_wrap = True
    snippet = "a **bold** word that goes on well past forty columns of text"
    start = snippet.index("word")
    shown = snippet_text(console, snippet, [(start, start + 4)], "bold")
    console.print(hanging(console, "1.", "Title  Path.md  #a #b #c #d #e #f #g #h", shown))
    console.print(markdown(console, "# Heading\n\n**bold**"))
    assert console.export_text() == (
        f"1. Title  Path.md  #a #b #c #d #e #f #g #h\n   {snippet}\n# Heading\n\n**bold**\n"
    )


def test_a_snippet_s_highlight_stays_on_its_words_when_the_markers_are_left_out() -> None:
    console = Console(force_terminal=True, width=80)
    snippet = "- Water the **tomatoes** and the `beans` from [[Rain Butt|the butt]] daily"

    def span(part: str) -> tuple[int, int]:
        return snippet.index(part), snippet.index(part) + len(part)

    ranges = [span("tomatoes"), span("daily"), span("`beans`"), span("[[Rain Butt|the butt]]")]
    text = snippet_text(console, snippet, ranges, "reverse")
    assert text.plain == "• Water the tomatoes and the beans from the butt daily"
    marked = [text.plain[span.start : span.end] for span in text.spans if span.style == "reverse"]
    assert marked == ["tomatoes", "daily", "beans", "the butt"], "a range over the markers too: their text"
