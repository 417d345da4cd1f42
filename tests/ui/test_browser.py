"""The web UI in a real browser (Debian's Chromium, driven by Playwright) against the whole stack: Envoy serving the
built UI and grpc-web, the services on port 0, a local LLM server answering at a visible pace.

Screenshots of the chat page and the settings modal are saved under build/screenshots/ (not committed).
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Dialog, Page, expect

from secondbrain.chat.v1 import chat_service_pb2 as chat
from tests.chat.test_agent import AGENT_NOTES, KITCHEN, QUOTE
from tests.gateway.conftest import Gateway
from tests.ui.chat_steps import ask, open_chat
from tests.ui.conftest import SCREENSHOTS, settle
from tests.wire import Reply
from tests.wire.script import ToolCall

QUESTION = "How often do I water the tomatoes?"
# The UI joins heading paths with this.
NEXT = "\u203a"


@pytest.mark.timeout(180)
async def test_ask_cite_change_persona_and_find_the_conversation_after_a_reload(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    llm = gateway.chat.llm
    deltas = ["Every morning ", "before nine, ", "and the basil ", "less often [1]."]
    llm.script.push(Reply(deltas=deltas, delay=0.4))

    await open_chat(page)
    panel = page.locator(".chat-page")
    await ask(page, QUESTION)

    # The answer streams in: part of it shows, with the Stop button, before the rest has arrived.
    answer = page.get_by_test_id("answer").last
    await expect(answer).to_contain_text("Every morning")
    await expect(page.get_by_role("button", name="Stop")).to_be_visible()
    assert "less often" not in await answer.inner_text(), "the first words showed before the last were written"
    await expect(answer).to_contain_text("less often", timeout=15_000)
    await expect(page.get_by_role("button", name="Send")).to_be_visible()

    # How the passages were found is there on request. (Asked before the passage is opened: a click outside the
    # passage panel now closes it.)
    await answer.get_by_role("button", name="How were these found?").click()
    await expect(answer).to_contain_text("Vector search: ran")
    await expect(answer).to_contain_text(QUESTION)
    # The condense outcome and its reason (the test vault turns condensing off), and the panel is in view.
    plan = answer.get_by_test_id("plan")
    await expect(plan.locator(".condense")).to_have_text(f"Searched as typed: condensing is off.\u201c{QUESTION}\u201d")
    await expect(plan).to_be_in_viewport()

    # A citation opens the passage it cites.
    await answer.locator("button.cite").first.click()
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage).to_contain_text("Projects/Garden.md")
    await expect(passage).to_contain_text("Water the tomatoes every morning")
    await expect(passage).to_contain_text(f"Garden {NEXT} Watering")
    await expect(passage).to_contain_text("lines")
    # The vault's folder is its name in Obsidian.
    await expect(passage.get_by_role("link", name="Open in Obsidian")).to_have_attribute(
        "href", "obsidian://open?vault=vault&file=Projects%2FGarden"
    )
    await page.screenshot(path=SCREENSHOTS / "chat-page.png")
    await passage.get_by_role("button", name="Close passage").click()

    # Settings: choose the gardener persona; the next conversation uses it.
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Chat settings")
    await expect(settings).to_be_visible()
    await settings.get_by_label("Persona").select_option("gardener")
    # Save and Cancel in view without scrolling, however long the form (found by a user at 1280x800).
    await expect(settings.get_by_role("button", name="Save")).to_be_in_viewport()
    await page.screenshot(path=SCREENSHOTS / "settings-modal.png")
    await settings.get_by_role("button", name="Save").click()
    await expect(settings).to_be_hidden()
    # Saving only the persona leaves the system prompt the default, so a later improvement to it still arrives.
    saved = (await gateway.chat.stub.GetSettings(chat.GetSettingsRequest(), timeout=10)).settings
    assert saved.persona_id == "gardener" and saved.system_prompt_is_default

    await page.get_by_role("button", name="+ New conversation").click()
    await expect(panel.get_by_label("Persona", exact=True)).to_have_value("gardener")
    llm.script.push(Reply(deltas=["Mornings, lad [1]."]))
    await ask(page, "And the soil?")
    await expect(page.get_by_test_id("answer").last).to_contain_text("Mornings, lad")
    system = gateway.chat.answer_requests()[-1].json["messages"][0]["content"]
    assert "Speak as a head gardener with forty years" in system, "the persona chosen in settings reached the model"

    # After a reload, the page is still the conversation it was in, both conversations are in the list, and the
    # first still has its cited answer.
    address = page.url
    await page.reload()
    assert page.url == address
    await expect(page.get_by_test_id("answer").last).to_contain_text("Mornings, lad")
    conversations = page.locator("nav.conversations li")
    await expect(conversations).to_have_count(2)
    # Under the day they last changed, so look-alike titles are told apart by when.
    await expect(page.locator("nav.conversations .day h2")).to_have_text(["Today"])
    await expect(conversations.first).to_contain_text("And the soil?")
    # Each with the first words of its first answer, plain (no [1]), so look-alike titles are told apart by what.
    await expect(conversations.locator(".preview")).to_have_text(
        ["Mornings, lad.", "Every morning before nine, and the basil less often."]
    )
    await page.screenshot(path=SCREENSHOTS / "conversation-list.png")
    await page.get_by_role("link", name=QUESTION).click()
    restored = page.get_by_test_id("answer").last
    await expect(restored).to_contain_text("Every morning before nine")
    await expect(restored.locator(".text button.cite")).to_have_count(1)


@pytest.mark.timeout(180)
async def test_agent_steps_show_fold_and_cite_what_the_tools_read(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    stack = gateway.chat
    for path, text in AGENT_NOTES.items():
        stack.write(path, text)
    await stack.ingest()
    # Agent mode in the settings, one passage per retrieval: the turn's own is [1], the tools' come after it.
    await stack.stub.UpdateSettings(
        chat.UpdateSettingsRequest(
            settings=chat.Settings(mode="agent", passages=1), update_mask={"paths": ["mode", "passages"]}
        ),
        timeout=10,
    )
    await open_chat(page)
    agent_toggle = page.get_by_role("checkbox", name="Agent")
    await expect(agent_toggle).to_be_checked()

    # The settings show the mode; choosing one search there turns the composer's toggle off.
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Chat settings")
    await expect(settings.get_by_label("Let the model search and read notes (agent)")).to_be_checked()
    await settings.get_by_label("Answer from one search").check()
    await settings.get_by_role("button", name="Save").click()
    await expect(settings).to_be_hidden()
    assert (await stack.stub.GetSettings(chat.GetSettingsRequest(), timeout=10)).settings.mode == "rag"
    await expect(agent_toggle).not_to_be_checked()

    # The toggle asks for agent mode for this one message. The model searches, then reads two notes, slowly.
    await agent_toggle.check()
    search = ToolCall("search_notes", {"query": "worktop"}, id="call_search")
    read_kitchen = ToolCall("read_note", {"path": KITCHEN}, id="call_kitchen")
    read_quote = ToolCall("read_note", {"path": QUOTE}, id="call_quote")
    stack.llm.script.push(
        Reply(deltas=["Let me look."], tool_calls=[search]),
        Reply(deltas=["Reading."], delay=1.5, tool_calls=[read_kitchen]),
        Reply(deltas=["And the quote."], delay=1.5, tool_calls=[read_quote]),
        Reply(deltas=["You chose pale grey quartz [2]; ", "the quote assumed ", "a laminate worktop [3]."], delay=0.5),
    )
    await ask(page, "What did I decide about the kitchen worktop, and does the quote agree?")

    # While the model works, the steps are open, one line each, with the passages a step added as citations.
    answer = page.get_by_test_id("answer").last
    steps = answer.locator("details.agent-steps")
    await expect(steps.locator("summary")).to_have_text("2 steps · working…", timeout=15_000)
    await expect(steps).to_have_js_property("open", True)
    lines = steps.locator("li")
    await expect(lines.nth(0)).to_contain_text("Searched 'worktop'")
    await expect(lines.nth(1)).to_contain_text(f"Read {KITCHEN} lines 1-9")
    await expect(lines.nth(1).locator("button.cite")).to_have_text("[2]")
    await page.screenshot(path=SCREENSHOTS / "agent-steps-open.png")

    # Once the answer is written, they fold into one line above it.
    await expect(answer).to_contain_text("a laminate worktop", timeout=15_000)
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    answer = page.get_by_test_id("answer").last
    steps = answer.locator("details.agent-steps")
    await expect(steps.locator("summary")).to_have_text("3 steps")
    await expect(steps).to_have_js_property("open", False)
    await expect(steps.locator("li").nth(2)).to_be_hidden()
    assert stack.answer_requests()[-1].json.get("tools"), "the turn ran in agent mode, as the toggle asked"
    await page.screenshot(path=SCREENSHOTS / "agent-steps-collapsed.png")

    # A citation of a passage a tool read opens it, as one of the retrieval's does.
    await answer.locator(".text button.cite", has_text="[3]").click()
    passage = page.get_by_role("dialog", name="Passage 3")
    await expect(passage).to_contain_text(QUOTE)
    await expect(passage).to_contain_text("laminate worktop at 900 pounds")
    await passage.get_by_role("button", name="Close passage").click()

    # After a reload the stored answer has its steps, folded, and its citations still open their passages.
    await page.reload()
    await page.locator("nav.conversations li a.title").first.click()
    restored = page.get_by_test_id("answer").last
    steps = restored.locator("details.agent-steps")
    await expect(steps).to_have_js_property("open", False)
    await steps.locator("summary").click()
    await expect(steps.locator("li").nth(2)).to_contain_text(f"Read {QUOTE}")
    await steps.locator("li").nth(1).get_by_role("button", name="[2]").click()
    passage = page.get_by_role("dialog", name="Passage 2")
    await expect(passage).to_contain_text(KITCHEN)
    await expect(passage).to_contain_text("pale grey quartz")
    await page.screenshot(path=SCREENSHOTS / "agent-steps-restored.png")


async def test_a_missing_provider_and_a_stop_show_as_a_person_would_want(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    llm = gateway.chat.llm
    llm.script.push(Reply(deltas=[f"word{i} " for i in range(60)], delay=0.2))
    await open_chat(page)
    await ask(page, QUESTION)
    answer = page.get_by_test_id("answer").last
    await expect(answer).to_contain_text("word1")
    await page.screenshot(path=SCREENSHOTS / "streaming.png")
    await page.get_by_role("button", name="Stop").click()
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    # A stop is the person's own doing: a calm "Stopped", not the service's cancel message as a red error.
    stopped = page.get_by_test_id("answer").last
    await expect(stopped.get_by_role("status")).to_have_text("Stopped")
    await expect(stopped.get_by_role("alert")).to_have_count(0)
    await expect(page.get_by_role("alert")).to_have_count(0)
    assert "cancelled" not in await stopped.inner_text()
    await page.screenshot(path=SCREENSHOTS / "stopped.png")

    # The provider turns away the key: the message says which variable to fix.
    llm.script.push(Reply(status=401, error_type="authentication_error", error_message="Incorrect API key"))
    await ask(page, "And the basil?")
    alert = page.get_by_test_id("answer").last.get_by_role("alert")
    await expect(alert).to_contain_text("OPENAI_API_KEY")


async def test_search_and_index_status_pages(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.get_by_label("Search", exact=True).fill("water")
    await page.get_by_label("Folders").select_option("Projects")
    await page.get_by_role("button", name="Search").click()
    hits = page.get_by_test_id("hit")
    await expect(hits).to_have_count(1)
    await expect(hits.first).to_contain_text("Projects/Garden.md")
    # The snippet's **match** markers are highlights, not asterisks.
    await expect(hits.first.locator(".snippet mark").first).to_have_text(re.compile("water", re.IGNORECASE))
    assert "*" not in await hits.first.locator(".snippet").inner_text()

    await page.get_by_role("link", name="Index").click()
    await expect(page.get_by_test_id("notes")).to_have_text("3")
    await expect(page.locator(".status-page")).to_contain_text("Every file is indexed.")

    # A match the note has in bold: highlighted, inside the note's bold.
    gateway.chat.write(
        "Home/Kitchen.md", "# Kitchen\n\nWe chose the pale grey **worktop** in quartz from [[Suppliers#Stone|Costa]].\n"
    )
    await gateway.chat.ingest()
    await page.get_by_role("link", name="Search").click()
    await page.get_by_label("Search", exact=True).fill("worktop")
    await page.get_by_role("button", name="Search").click()
    snippet = hits.filter(has_text="Home/Kitchen.md").locator(".snippet")
    await expect(snippet.locator("mark")).to_have_text("worktop")
    await expect(snippet).to_contain_text("the pale grey worktop in quartz from Costa")
    assert "*" not in await snippet.inner_text()
    await page.screenshot(path=SCREENSHOTS / "search-snippet.png")

    # A word one note holds lists that note and says so (found by a user: `quartz` listed every demo note).
    await page.get_by_label("Search", exact=True).fill("quartz")
    await page.get_by_role("button", name="Search").click()
    await expect(page.get_by_test_id("summary")).to_have_text("1 note contains “quartz”.")
    await expect(hits).to_have_count(1)
    await expect(hits.first).to_contain_text("Home/Kitchen.md")
    # Only the searched word is highlighted; the note's own bold stays bold (found by a user: it was highlighted).
    await expect(hits.first.locator(".snippet mark")).to_have_text("quartz")
    await expect(hits.first.locator(".snippet strong")).to_have_text("worktop")
    # A wikilink shows as the words Obsidian shows, marked as a link, never its brackets (found by a user).
    await expect(hits.first.locator(".snippet .wikilink")).to_have_text("Costa")
    assert "[[" not in await hits.first.locator(".snippet").inner_text()
    await page.screenshot(path=SCREENSHOTS / "search-one-note.png")
    # A word no note holds, and nothing near it: said plainly, no list of neighbours.
    await page.get_by_label("Search", exact=True).fill("zucchini")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator(".search-page")).to_contain_text(
        "No note contains “zucchini”, and none is close to it in meaning."
    )
    await expect(hits).to_have_count(0)


CALENDAR = """# Sowing calendar

| month | sow or plant |
| ------------ | ------------------------------------------ |
| March        | sow broad beans outdoors                   |
| June         | sow French beans; plant courgettes         |

- Ask [[People/Marta|Marta]] for the courgette seedlings she grows
  on her windowsill every spring.
- Order the seed potatoes in January.

The beans go in the bed by the fence,
where they had sun all last summer.
"""


@pytest.mark.timeout(180)
async def test_tables_lists_and_wikilinks_render_in_snippets_and_in_the_passage(gateway: Gateway, page: Page) -> None:
    """Found by a user: snippets flattened a table to `| month | ... |---|` and a list into one line; the passage
    panel showed raw `[[links]]`. Both show the note as Obsidian renders it."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    gateway.chat.write("Areas/Calendar.md", CALENDAR)
    # Notes hard-wrapped in an editor: the vault's Obsidian settings join the lines of a paragraph.
    gateway.chat.write(".obsidian/app.json", '{"strictLineBreaks": true}')
    await gateway.chat.ingest()
    hits = page.get_by_test_id("hit")

    # A match in a table row: the row, under its table's header, the match highlighted in its cell.
    await page.get_by_label("Search", exact=True).fill("French")
    await page.get_by_role("button", name="Search").click()
    snippet = hits.filter(has_text="Areas/Calendar.md").locator(".snippet")
    await expect(snippet.locator("th")).to_have_text(["month", "sow or plant"])
    await expect(snippet.locator("td")).to_have_text(["June", "sow French beans; plant courgettes"])
    await expect(snippet.locator("td mark")).to_have_text("French")
    assert "|" not in await snippet.inner_text() and "---" not in await snippet.inner_text()
    await page.screenshot(path=SCREENSHOTS / "search-snippet-table.png")

    # A match in a list item: the item as a list, its wrapped line joined, the wikilink as the words Obsidian shows.
    await page.get_by_label("Search", exact=True).fill("windowsill")
    await page.get_by_role("button", name="Search").click()
    snippet = hits.filter(has_text="Areas/Calendar.md").locator(".snippet")
    await expect(snippet.locator("li")).to_have_text(
        "Ask Marta for the courgette seedlings she grows on her windowsill every spring."
    )
    await expect(snippet.locator("li .wikilink")).to_have_text("Marta")
    await expect(snippet.locator("li mark")).to_have_text("windowsill")
    await page.screenshot(path=SCREENSHOTS / "search-snippet-list.png")

    # The passage panel renders the same note: a table, a list, a wikilink, never their markdown.
    gateway.chat.llm.script.push(Reply(deltas=["Sow French beans in June [1]."]))
    await open_chat(page)
    await ask(page, "When do I sow French beans?")
    answer = page.get_by_test_id("answer").last
    await expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    await answer.locator("button.cite").first.click()
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage).to_contain_text("Areas/Calendar.md")
    text = passage.locator(".passage-text")
    await expect(text.locator("th")).to_have_text(["month", "sow or plant"])
    await expect(text.locator("tbody tr")).to_have_count(2)
    await expect(text.locator("li")).to_have_count(2)
    await expect(text.locator(".wikilink")).to_have_text("Marta")
    for markdown in ("|", "[[", "- "):
        assert markdown not in await text.inner_text()
    wrapped = text.locator("p", has_text="The beans go in the bed")
    await expect(wrapped).to_have_css("white-space", "normal")
    assert "\n" not in await wrapped.inner_text(), "the wrapped line is joined"
    await page.screenshot(path=SCREENSHOTS / "passage-table-list-wikilink.png")


async def test_search_by_dates_and_each_note_shows_its_day(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    gateway.chat.write("Journal/2026-01-20.md", "# 20 January 2026\n\nChose the quartz worktop.\n")
    gateway.chat.write("Journal/2026-03-02.md", "# 2 March 2026\n\nThe worktop was fitted.\n")
    gateway.chat.write("Kitchen/Worktop quotes.md", "---\ndate: 2026-01-22\n---\n# Worktop quotes\n\nQuartz 1,900.\n")
    await gateway.chat.ingest()
    hits = page.get_by_test_id("hit")
    await page.get_by_label("Search", exact=True).fill("worktop")
    await page.get_by_label("Dated from").fill("2026-01-01")
    await page.get_by_label("Dated to").fill("2026-01-31")
    await page.get_by_role("button", name="Search").click()
    await expect(hits).to_have_count(2)
    daily = hits.filter(has_text="Journal/2026-01-20.md")
    quotes = hits.filter(has_text="Kitchen/Worktop quotes.md")
    # The daily note's path already says its day: no chip repeats it. The note its front matter dates has one.
    await expect(daily.locator(".date-chip")).to_have_count(0)
    chip = quotes.locator(".date-chip")
    await expect(chip).to_contain_text("2026")
    await expect(chip).to_have_attribute("title", "Dated by its front matter date")
    # The search's words are marked in a dated search too; the screenshot waits for them (it once caught the first
    # results as plain text, taken while the renderer was still loading).
    await expect(daily.locator("mark")).to_have_text("worktop")
    await page.screenshot(path=SCREENSHOTS / "search-dated.png")
    # Without the range, every day is found.
    await page.get_by_label("Dated to").fill("")
    await page.get_by_label("Dated from").fill("")
    await page.get_by_role("button", name="Search").click()
    await expect(hits).to_have_count(3)
    # On a 390 px screen the filters fold under a button; open, the day fields fit, nothing wider than the screen.
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(page.get_by_label("Dated from")).not_to_be_in_viewport()
    await page.get_by_role("button", name="Filters").click()
    for label in ("Dated from", "Dated to"):
        await expect(page.get_by_label(label)).to_be_in_viewport()
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await page.screenshot(path=SCREENSHOTS / "search-dated-390.png")


async def test_last_week_in_a_question_is_the_browsers_last_week(gateway: Gateway, page: Page) -> None:
    """The UI sends the browser's own now with its offset: "last week" is the week before the asker's today, the
    plan says which days, and the passage cited is that week's, with its day."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    gateway.chat.write("Journal/2026-11-10.md", "# 10 November 2026\n\nWe decided on a quartz worktop.\n")
    gateway.chat.write("Journal/2026-11-25.md", "# 25 November 2026\n\nWe decided on an oak worktop instead.\n")
    await gateway.chat.ingest()
    await page.clock.set_fixed_time("2026-11-30T18:00:00Z")
    gateway.chat.llm.script.push(Reply(deltas=["Oak, decided on 25 November [1]."]))
    await open_chat(page)
    await ask(page, "What did we decide about the worktop last week?")
    answer = page.get_by_test_id("answer").last
    await expect(answer).to_contain_text("Oak, decided on 25 November")
    await answer.get_by_role("button", name="How were these found?").click()
    await expect(answer.get_by_test_id("plan").locator(".time-scope")).to_have_text(
        "Notes dated 23\u201329 November 2026."
    )
    await answer.locator("button.cite").first.click()
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage).to_contain_text("Journal/2026-11-25.md")
    await expect(passage).to_contain_text("oak worktop")
    # One line is "line 3"; the day is said by the path and the heading, not a third time by a chip.
    await expect(passage.locator(".lines")).to_have_text("line 3")
    await expect(passage.locator(".date-chip")).to_have_count(0)
    await page.screenshot(path=SCREENSHOTS / "chat-last-week.png")


async def test_a_service_that_is_down_is_said_plainly(gateway: Gateway, page: Page) -> None:
    await gateway.chat.stop_chat()
    await open_chat(page)
    await expect(page.get_by_role("alert").first).to_contain_text("not reachable")


async def test_conversations_can_be_renamed_and_deleted(gateway: Gateway, page: Page) -> None:
    await open_chat(page)
    await ask(page, QUESTION)
    await expect(page.get_by_role("button", name="Send")).to_be_visible()
    item = page.locator("nav.conversations li").first
    await expect(item).to_contain_text(QUESTION)

    await item.hover()
    await item.get_by_role("button", name=f"Rename {QUESTION}").click()
    title = page.get_by_label(f"New title for {QUESTION}")
    await title.fill("Watering")
    await title.press("Enter")
    await expect(item).to_contain_text("Watering")
    stored = await gateway.chat.stub.ListConversations(chat.ListConversationsRequest(), timeout=10)
    assert [c.title for c in stored.conversations] == ["Watering"]

    page.once("dialog", lambda dialog: dialog.accept())
    await item.hover()
    await item.get_by_role("button", name="Delete Watering").click()
    await expect(page.locator("nav.conversations li")).to_have_count(0)
    stored = await gateway.chat.stub.ListConversations(chat.ListConversationsRequest(), timeout=10)
    assert list(stored.conversations) == []


def _dark(value: str) -> bool:
    """Whether a computed `rgb(r, g, b)` colour is dark."""
    r, g, b = (int(part) for part in re.findall(r"\d+", value)[:3])
    return (r + g + b) / 3 < 80


@pytest.mark.timeout(180)
async def test_answers_render_markdown_with_citations_and_cited_sources_first(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    deltas = [
        "Water **daily**, before nine [1]:\n\n",
        "- the tomatoes every *morning*\n",
        "- the basil less often [1][2]\n\n",
        "A reminder script:\n\n```sh\nwater --beds all  # see [1]\n```\n\nAnd `[1]` in code stays text.",
    ]
    gateway.chat.llm.script.push(Reply(deltas=deltas, delay=0.1))
    await open_chat(page)
    await ask(page, QUESTION)
    answer = page.get_by_test_id("answer").last
    await expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    await expect(answer).to_contain_text("stays text")

    text = answer.locator(".text")
    await expect(text.locator("strong")).to_have_text("daily")
    await expect(text.locator("em")).to_have_text("morning")
    await expect(text.locator("li")).to_have_count(2)
    await expect(text.locator("pre code")).to_contain_text("water --beds all  # see [1]")
    assert "**" not in await text.inner_text()
    assert "```" not in await text.inner_text()
    # [1] in prose is a citation button; inside code, it is code.
    await expect(text.locator("button.cite")).to_have_count(3)
    await expect(text.locator("pre button, code button")).to_have_count(0)

    # The code block copies its code.
    await text.get_by_role("button", name="Copy code").click()
    await expect(text.get_by_role("button", name="Copy code")).to_have_text("Copied")
    assert await page.evaluate("navigator.clipboard.readText()") == "water --beds all  # see [1]\n"

    # The cited source is listed first; the others retrieved are folded away.
    cited = answer.get_by_role("list", name="Cited sources")
    await expect(cited.locator("li")).to_have_count(2)
    await expect(cited.locator("li").first).to_contain_text("[1] Projects/Garden.md")
    also = answer.locator("details.also-retrieved")
    await expect(also).to_have_js_property("open", False)
    await expect(also.locator("summary")).to_have_text(re.compile(r"^\d+ also retrieved$"))
    await also.locator("summary").click()
    await expect(also.get_by_role("button").first).to_be_visible()
    await page.screenshot(path=SCREENSHOTS / "markdown-answer.png")

    # A citation in a list item opens its passage, rendered as markdown too.
    await text.locator("li button.cite").first.click()
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage).to_contain_text("Water the tomatoes every morning")
    assert "##" not in await passage.locator(".passage-text").inner_text()
    assert not refused, f"the gateway's content security policy blocked part of the chat: {refused}"


@pytest.mark.timeout(180)
async def test_a_notes_html_shows_as_text_and_runs_nothing(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    stack = gateway.chat
    stack.write(
        "Notes/Zanzibar.md",
        "# Zanzibar\n\nThe zanzibar ferry leaves at noon.\n\n"
        "<img src=x onerror=alert(1)>\n\n"
        "<script>window.pwned = true; alert(2)</script>\n\n"
        'Inline <img src=y onerror="window.pwned = true"> too, and **bold**.\n',
    )
    await stack.ingest()
    dialogs: list[str] = []

    async def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", on_dialog)
    stack.llm.script.push(Reply(deltas=["The ferry leaves at noon [1]. <img src=z onerror=alert(3)>"]))
    await open_chat(page)
    await ask(page, "When does the zanzibar ferry leave?")
    answer = page.get_by_test_id("answer").last
    await expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    await expect(answer).to_contain_text("<img src=z onerror=alert(3)>")

    source = answer.locator(".sources li", has_text="Notes/Zanzibar.md").locator("button.cite")
    if not await source.is_visible():
        await answer.locator("details.also-retrieved summary").click()
    await source.click()
    passage = page.get_by_role("dialog", name=re.compile(r"^Passage \d+$"))
    text = passage.locator(".passage-text")
    await expect(text).to_contain_text("<img src=x onerror=alert(1)>")
    await expect(text).to_contain_text("<script>window.pwned = true; alert(2)</script>")
    await expect(text).to_contain_text('<img src=y onerror="window.pwned = true">')
    await expect(text.locator("strong")).to_have_text("bold")
    await page.screenshot(path=SCREENSHOTS / "passage-html-as-text.png")

    assert await page.locator("img").count() == 0, "no img element came from a note or an answer"
    assert await page.locator("#root script").count() == 0
    assert await page.evaluate("window.pwned") is None, "nothing from the note ran"
    assert dialogs == [], f"the note's script ran: {dialogs}"


@pytest.mark.timeout(180)
async def test_escape_and_a_click_outside_close_the_passage_and_the_settings(gateway: Gateway, page: Page) -> None:
    gateway.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    await open_chat(page)
    await ask(page, QUESTION)
    answer = page.get_by_test_id("answer").last
    await expect(answer.locator(".text button.cite")).to_have_count(1, timeout=15_000)

    passage = page.get_by_role("dialog", name="Passage 1")
    await answer.locator(".text button.cite").click()
    await expect(passage).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(passage).to_be_hidden()

    # A click outside it closes it too; the chat stays open.
    await answer.locator(".text button.cite").click()
    await expect(passage).to_be_visible()
    await page.locator(".messages").click(position={"x": 10, "y": 10})
    await expect(passage).to_be_hidden()
    await expect(page.get_by_label("Your question")).to_be_visible()

    settings = page.get_by_role("dialog", name="Chat settings")
    await page.get_by_role("button", name="Settings").click()
    await expect(settings).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(settings).to_be_hidden()
    await page.get_by_role("button", name="Settings").click()
    await expect(settings).to_be_visible()
    await page.mouse.click(5, 5)  # the backdrop
    await expect(settings).to_be_hidden()
    await expect(page.get_by_label("Your question")).to_be_visible()


@pytest.mark.timeout(180)
async def test_a_390_px_screen_asks_and_answers_with_the_composer_in_view(gateway: Gateway, page: Page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.set_viewport_size({"width": 390, "height": 844})
    gateway.chat.llm.script.push(
        Reply(deltas=["Every **morning** before nine, ", "and the basil less often [1]."], delay=0.2)
    )
    await open_chat(page)
    composer = page.get_by_label("Your question")
    await expect(composer).to_be_in_viewport()
    # The conversation list is a drawer, closed until its button opens it.
    drawer = page.get_by_role("navigation", name="Conversations")
    await expect(drawer).to_be_hidden()

    await ask(page, QUESTION)
    await expect(page.get_by_role("button", name="Stop")).to_be_in_viewport()
    answer = page.get_by_test_id("answer").last
    await expect(answer).to_contain_text("less often", timeout=15_000)
    await expect(page.get_by_role("button", name="Send")).to_be_in_viewport()
    await expect(composer).to_be_in_viewport()
    await expect(page.get_by_role("button", name="Conversations")).to_be_in_viewport()
    await expect(page.get_by_role("button", name="Settings")).to_be_in_viewport()
    await expect(page.get_by_role("link", name="Open chat")).to_be_in_viewport()
    # Nothing is wider than the screen.
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    assert await page.evaluate("document.querySelector('.chat-page').scrollWidth") <= 390
    await page.screenshot(path=SCREENSHOTS / "narrow-390.png")

    # Settings' Save is in reach without scrolling at 390 px too.
    await page.get_by_role("button", name="Settings").click()
    settings = page.get_by_role("dialog", name="Chat settings")
    await expect(settings.get_by_role("button", name="Save")).to_be_in_viewport()
    await page.screenshot(path=SCREENSHOTS / "narrow-390-settings.png")
    await settings.get_by_role("button", name="Cancel").click()
    await expect(settings).to_be_hidden()

    # The passage opens over the conversation, its close button in reach.
    await answer.locator(".text button.cite").click()
    passage = page.get_by_role("dialog", name="Passage 1")
    await expect(passage.get_by_role("button", name="Close passage")).to_be_in_viewport()
    await page.screenshot(path=SCREENSHOTS / "narrow-390-passage.png")
    await page.keyboard.press("Escape")
    await expect(passage).to_be_hidden()

    # The drawer holds the conversation; a click beside it closes it.
    await page.get_by_role("button", name="Conversations").click()
    await expect(drawer).to_be_visible()
    await expect(drawer.locator("li").first).to_contain_text(QUESTION)
    await expect(drawer.get_by_role("button", name="+ New conversation")).to_be_in_viewport()
    await settle(page)
    await page.screenshot(path=SCREENSHOTS / "narrow-390-drawer.png")
    await page.mouse.click(380, 400)
    await expect(drawer).to_be_hidden()
    # Choosing a conversation in it closes it too.
    await page.get_by_role("button", name="Conversations").click()
    await drawer.get_by_role("link", name=QUESTION, exact=True).click()
    await expect(drawer).to_be_hidden()
    await expect(page.get_by_test_id("answer").last).to_contain_text("Every morning before nine")


@pytest.mark.timeout(180)
async def test_a_dark_system_gets_the_dark_palette_and_the_tab_an_icon(browser: Browser, gateway: Gateway) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="dark")
    try:
        page = await context.new_page()
        await page.goto(gateway.envoy_url)
        icon = page.locator('link[rel="icon"]')
        await expect(icon).to_have_attribute("href", "/favicon.svg")
        served = await page.request.get(f"{gateway.envoy_url}/favicon.svg")
        assert served.status == 200 and served.headers["content-type"].startswith("image/svg+xml")

        assert _dark(await page.evaluate("getComputedStyle(document.documentElement).backgroundColor"))
        await page.get_by_label("Search", exact=True).fill("water")
        await page.get_by_role("button", name="Search").click()
        await expect(page.get_by_test_id("hit").first.locator("mark").first).to_be_visible()
        await page.screenshot(path=SCREENSHOTS / "dark-search.png")
        gateway.chat.llm.script.push(Reply(deltas=["Every **morning** before nine [1].\n\n`water --all`"]))
        await open_chat(page)
        await ask(page, QUESTION)
        await expect(page.get_by_test_id("answer").last).to_contain_text("water --all", timeout=15_000)
        assert _dark(await page.evaluate("getComputedStyle(document.querySelector('.chat-top')).backgroundColor"))
        await page.get_by_test_id("answer").last.locator(".text button.cite").click()
        await page.screenshot(path=SCREENSHOTS / "dark-chat.png")
    finally:
        await context.close()


async def test_the_model_chip_names_the_model_and_escape_keeps_a_half_typed_question(
    gateway: Gateway, page: Page
) -> None:
    await open_chat(page)
    # The model chip names the model as the presets do, not by its ids.
    chip = page.locator(".chat-top button.chip")
    await expect(chip).to_have_text("GPT-5.4 mini")
    await expect(chip).to_have_attribute("title", "OpenAI · GPT-5.4 mini (change in settings)")
    # The chat is a page now: Escape with nothing open over it leaves the page, and the question, as they were.
    address = page.url
    await page.get_by_label("Your question").fill("How often do I")
    await page.keyboard.press("Escape")
    await expect(page.get_by_label("Your question")).to_have_value("How often do I")
    assert page.url == address
