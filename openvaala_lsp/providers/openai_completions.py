"""OpenAI Completions (`POST {base}/completions`), the text endpoint that base models need: models
without instruction tuning or a chat template (the embedded Gemma 3 270M) echo a chat-formatted
prompt instead of answering it. Spoken by llama.cpp's servers, vLLM and OpenAI's legacy endpoint.

The conversation becomes a plain transcript, which a base model continues as the next speaker:

    <instructions>

    User: <primer question>
    Assistant: <primer answer>
    ...
    User: <message>
    Assistant:

Stop sequences end the answer where the model would start the next turn. Tools are not offered (a
transcript has no place for them and a base model cannot call them); earlier tool calls and results
are left out. Chunks carry `choices[0].text`; usage comes in a final `choices: []` chunk when the
server honours `stream_options` (llama.cpp does not: the runtime then estimates it); `data: [DONE]`
ends the stream.
"""

from __future__ import annotations

from typing import Any

from openvaala_lsp.providers.base import Completed, Message, ModelRequest, StreamEvent, TextDelta
from openvaala_lsp.providers.openai_chat import ChunkTranslator
from openvaala_lsp.providers.wire import joined_text, string, text_with_image_notes

PATH = "/completions"
USER = "User:"
ASSISTANT = "Assistant:"
# Without examples a base model often repeats the question or rambles on as someone else; two short
# exchanges show it the format, and a two-sentence answer there gets answers of more than a few words.
PRIMER = (
    ("Hi!", "Hello! How can I help you?"),
    (
        "What is a verb?",
        "A verb is a word that describes an action, such as run, read or write. Most sentences have one.",
    ),
)
# where the model would go on to write the next turn itself
STOP = ("\n" + USER, "\n" + ASSISTANT)
# Completions servers default to 16 tokens, too few for any answer.
DEFAULT_MAX_TOKENS = 512
# Greedy decoding gave Gemma 3 270M's most sensible answers; sampled ones wandered off the question.
# The frequency penalty is OpenAI's standard guard against greedy loops (llama-cpp-python's server
# also applies its own repeat penalty, 1.1 by default).
TEMPERATURE = 0.0
FREQUENCY_PENALTY = 0.3


def transcript(request: ModelRequest) -> str:
    """The prompt: instructions, the primer, then each user and assistant message as a turn, ending
    with the assistant's label for the model to continue."""
    turns = [f"{USER} {question}\n{ASSISTANT} {answer}" for question, answer in PRIMER]
    speaker = ""
    for message in request.messages:
        text = _text(message)
        if not text:
            continue
        if message.role == "user":
            turns.append(f"{USER} {text}")
            speaker = USER
        elif speaker == USER:
            turns[-1] += f"\n{ASSISTANT} {text}"
            speaker = ASSISTANT
        else:  # an answer with no question of its own (e.g. after tool results, which are left out)
            turns.append(f"{ASSISTANT} {text}")
            speaker = ASSISTANT
    if speaker == USER:
        turns[-1] += f"\n{ASSISTANT}"
    else:
        turns.append(ASSISTANT)
    head = [request.instructions.strip()] if request.instructions.strip() else []
    return "\n\n".join([*head, *turns])


def _text(message: Message) -> str:
    if message.role == "user":
        return text_with_image_notes(message.content).strip()
    if message.role == "assistant":
        return joined_text(message.content).strip()  # tool calls and reasoning have no place here
    return ""  # tool results: the model never saw the calls


def completion_body(request: ModelRequest) -> dict[str, Any]:
    return {
        "model": request.model,
        "prompt": transcript(request),
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
        "stop": list(STOP),
        "temperature": TEMPERATURE,
        "frequency_penalty": FREQUENCY_PENALTY,
    }


class CompletionTranslator(ChunkTranslator):
    """Completion chunks to TextDeltas. The answer follows `Assistant:` after a space and ends before
    the newline of the next turn's label: leading whitespace is dropped, and whitespace is held back
    until more text follows it, so the streamed deltas add up to the trimmed answer."""

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        self._held = ""

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> None:
        text = string(choice, "text") or ""
        self._finish_reason = string(choice, "finish_reason") or self._finish_reason
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        body = text.rstrip()
        if body:
            events.append(TextDelta(text=self._held + body))
            self._held = text[len(body) :]
        else:
            self._held += text

    def _complete(self) -> list[StreamEvent]:
        return [Completed(finish_reason=self._finish_reason or "stop", usage=self._usage)]
