"""Settings and options through gRPC: defaults from the vault, FieldMask updates, validation naming the choices."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.chat.settings import DEFAULT_SYSTEM_PROMPT
from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import ChatStack, kinds


async def update(stack: ChatStack, paths: list[str] | None = None, reset: bool = False, **values) -> pb.Settings:
    request = pb.UpdateSettingsRequest(
        settings=pb.Settings(**values), update_mask={"paths": paths or []}, reset_system_prompt=reset
    )
    return (await stack.stub.UpdateSettings(request, timeout=10)).settings


async def refused(stack: ChatStack, paths: list[str], **values) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await update(stack, paths, **values)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return raised.value.details()


async def test_defaults_come_from_the_vault_and_the_shipped_prompt(stack: ChatStack) -> None:
    settings = (await stack.stub.GetSettings(pb.GetSettingsRequest(), timeout=10)).settings
    assert (settings.provider, settings.model, settings.persona_id) == ("openai", "gpt-5.4-mini", "")
    assert settings.system_prompt == DEFAULT_SYSTEM_PROMPT and settings.system_prompt_is_default
    assert (settings.passages, settings.alternates, settings.rerank, settings.rerank_model) == (8, True, False, "")


async def test_options_list_every_provider_the_personas_and_the_defaults(stack: ChatStack) -> None:
    options = await stack.stub.GetOptions(pb.GetOptionsRequest(), timeout=10)
    providers = {p.id: p for p in options.providers}
    assert {"anthropic", "openai", "together", "openrouter", "ollama", "extractive"} <= set(providers)
    assert providers["openai"].available and providers["anthropic"].available
    assert not providers["together"].available and providers["together"].unavailable_reason == "set TOGETHER_API_KEY"
    assert providers["anthropic"].default_model in [m.id for m in providers["anthropic"].models]
    assert all(m.context_window > 0 for m in providers["openai"].models)
    assert [(p.id, p.name, p.role) for p in options.personas] == [
        ("assistant", "Assistant", "Answers from your notes, citing them."),
        ("gardener", "Gardener", "Answers like a patient head gardener."),
    ]
    assert options.personas[1].source == ".claude/agents/gardener.md"
    assert options.defaults.provider == "openai" and options.defaults.system_prompt_is_default


async def test_a_masked_update_changes_only_the_named_fields_and_persists(stack: ChatStack) -> None:
    settings = await update(stack, ["provider", "passages"], provider="anthropic", passages=3, alternates=False)
    assert (settings.provider, settings.model) == ("anthropic", "claude-sonnet-5-5"), "the provider's default model"
    assert settings.passages == 3 and settings.alternates, "alternates was not in the mask"
    settings = await update(stack, ["model"], model="claude-haiku-5-5")
    assert (settings.provider, settings.model) == ("anthropic", "claude-haiku-5-5")
    again = (await stack.stub.GetSettings(pb.GetSettingsRequest(), timeout=10)).settings
    assert again == settings


async def test_an_empty_mask_sets_every_field_and_blank_means_the_default(stack: ChatStack) -> None:
    await update(stack, ["provider", "passages"], provider="anthropic", passages=3)
    settings = await update(stack, persona_id="gardener", rerank=True, rerank_model="rerank-v3.5")
    assert (settings.provider, settings.model) == ("openai", "gpt-5.4-mini"), "blank provider: the default again"
    assert settings.passages == 8, "0 passages: the default"
    assert (settings.persona_id, settings.rerank, settings.rerank_model) == ("gardener", True, "rerank-v3.5")
    assert not settings.alternates, "an empty mask sets every field, false included"


async def test_unknown_provider_model_or_persona_is_refused_naming_the_choices(stack: ChatStack) -> None:
    message = await refused(stack, ["provider"], provider="mistral-cloud")
    assert "mistral-cloud" in message and "anthropic" in message and "openai" in message
    message = await refused(stack, ["provider"], provider="together")
    assert "TOGETHER_API_KEY" in message
    message = await refused(stack, ["model"], model="gpt-2")
    assert "gpt-2" in message and "gpt-5.4-mini" in message
    message = await refused(stack, ["provider", "model"], provider="anthropic", model="gpt-5.4-mini")
    assert "claude-sonnet-5-5" in message
    message = await refused(stack, ["persona_id"], persona_id="pirate")
    assert "pirate" in message and "assistant" in message and "gardener" in message
    for passages in (51, -1):
        assert "1 to 50" in await refused(stack, ["passages"], passages=passages)
    assert "system_prompt_is_default" in await refused(stack, ["system_prompt_is_default"])
    settings = (await stack.stub.GetSettings(pb.GetSettingsRequest(), timeout=10)).settings
    assert (settings.provider, settings.model, settings.persona_id) == ("openai", "gpt-5.4-mini", "")


async def test_the_system_prompt_is_editable_and_resets_to_the_default(stack: ChatStack) -> None:
    settings = await update(stack, ["system_prompt"], system_prompt="Answer in French. Cite as [n].")
    assert settings.system_prompt == "Answer in French. Cite as [n]." and not settings.system_prompt_is_default
    await stack.ask("How often do I water the tomatoes?")
    system = stack.answer_requests()[-1].json["messages"][0]["content"]
    assert system.startswith("Answer in French.") and "Projects/Garden.md" in system

    settings = await update(stack, ["passages"], reset=True, passages=2)
    assert settings.system_prompt == DEFAULT_SYSTEM_PROMPT and settings.system_prompt_is_default
    assert settings.passages == 2


async def test_the_vault_can_set_the_default_prompt(stack: ChatStack) -> None:
    await stack.configure(chat={"system_prompt": "Answer as a patient tutor."})
    settings = (await stack.stub.GetSettings(pb.GetSettingsRequest(), timeout=10)).settings
    assert settings.system_prompt == "Answer as a patient tutor." and settings.system_prompt_is_default


async def test_the_retrieval_knobs_reach_the_retrieve_service(stack: ChatStack) -> None:
    await update(stack, ["passages"], passages=1)
    _, events = await stack.ask("How often do I water the tomatoes?")
    assert kinds(events)[-1] == "done"
    retrieval = events[0].sources.retrieval
    assert retrieval.plan.max_passages == 1 and len(retrieval.passages) == 1

    await update(stack, ["rerank"], rerank=True)
    _, events = await stack.ask("How often do I water the tomatoes?")
    plan = events[0].sources.retrieval.plan
    assert not plan.reranked and "TOGETHER_API_KEY" in plan.rerank_skipped_reason, "asked for, so retrieve says why not"


async def test_the_default_prompt_sent_back_unchanged_stays_the_default(stack: ChatStack) -> None:
    # A form that saves every field sends the default prompt back as shown (its trailing newline may be lost): that
    # is not a custom prompt, or later improvements to the default would never reach this install.
    saved = await update(
        stack, ["persona_id", "system_prompt"], persona_id="", system_prompt=DEFAULT_SYSTEM_PROMPT.strip()
    )
    assert saved.system_prompt_is_default and saved.system_prompt == DEFAULT_SYSTEM_PROMPT
    custom = await update(stack, ["system_prompt"], system_prompt=DEFAULT_SYSTEM_PROMPT + "\nAlso be brief.")
    assert not custom.system_prompt_is_default
