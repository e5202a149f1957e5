"""The one-line warning for a model that cannot read images or PDFs (DESIGN §21) comes
however the prompt carries them: `attachments=`, `images=`, or a user message (object or
OpenAI dict) holding image or document blocks; a prompt of text only, or a model that
reads them, gives none."""

from __future__ import annotations

import warnings

import pytest

from yiemagent import Agent
from yiemagent.ai.attachments import AttachmentWarning
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types.messages import DocumentContent, ImageContent, TextContent, UserMessage
from yiemagent.types.model import Model

PNG_DATA = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
IMAGE = ImageContent(PNG_DATA, "image/png")


@pytest.mark.parametrize("way", ["images", "message", "openai_dict", "document"])
async def test_images_in_the_prompt_warn_however_they_come(way: str) -> None:
    fm = FauxModel(["A dot."])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    prompt = {
        "images": lambda: agent.prompt("What is this?", images=[IMAGE]),
        "message": lambda: agent.prompt(UserMessage([TextContent("What is this?"), IMAGE])),
        "openai_dict": lambda: agent.prompt(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG_DATA}"},
                    },
                ],
            }
        ),
        "document": lambda: agent.prompt(
            UserMessage([TextContent("Read it."), DocumentContent("JVBERi0xLjQK", name="a.pdf")])
        ),
    }[way]
    with pytest.warns(AttachmentWarning, match="cannot read (images|PDFs)"):
        answer = await prompt()
    assert answer.text == "A dot."


async def test_text_only_prompts_and_seeing_models_warn_nothing() -> None:
    fm = FauxModel(["ok", "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    vision = Agent(
        model=Model(id="v", provider="faux", api="faux", input=("text", "image", "pdf")),
        stream_fn=fm.stream_fn,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await agent.prompt(UserMessage("just words"))
        await vision.prompt(UserMessage([TextContent("What is this?"), IMAGE]))
