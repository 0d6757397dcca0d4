"""Building a provider from a ModelDefinition: the one place that puts a dialect (its module here
gives the path, the request body and the translator of its stream) on an `HttpProvider`."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from openvaala_lsp.definitions import MODEL_APIS, ModelDefinition
from openvaala_lsp.providers import anthropic, ollama, openai_chat, openai_completions, openai_responses
from openvaala_lsp.providers.base import ModelRequest, Provider, ProviderError
from openvaala_lsp.providers.errors import AUTHENTICATION, BAD_REQUEST
from openvaala_lsp.providers.http import EnvApiKey, FrameDecoder, HttpProvider, ProviderTimeouts, Translator
from openvaala_lsp.providers.retry import RetryPolicy
from openvaala_lsp.providers.sse import NDJSONDecoder, SSEDecoder

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OLLAMA_BASE_URL = "http://127.0.0.1:11434"
DEFAULT_BASE_URLS = {
    "openai-chat": OPENAI_BASE_URL,
    "openai-responses": OPENAI_BASE_URL,
    "openai-completions": OPENAI_BASE_URL,
    "anthropic": ANTHROPIC_BASE_URL,
    "ollama": OLLAMA_BASE_URL,
}
_SSE = {"accept": "text/event-stream"}
_NDJSON = {"accept": "application/x-ndjson"}
F = TypeVar("F")


def make_provider(
    definition: ModelDefinition,
    environ: Mapping[str, str] | None = None,
    timeouts: ProviderTimeouts | None = None,
    *,
    retry: RetryPolicy | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Provider:
    """A provider for the definition's API dialect, with its own long-lived HTTP client (close it
    with `aclose()`). The API key is read from `environ[definition.api_key_env]` (default
    `os.environ`) at each request; a missing variable raises ProviderError(kind="authentication")
    here already. The official endpoints require `api_key_env`; self-hosted ones (a `base_url` is
    given, or Ollama) work without a key."""
    api = definition.api
    if api not in MODEL_APIS:
        raise ProviderError(BAD_REQUEST, f"unknown model api {api!r}; expected one of {', '.join(MODEL_APIS)}")
    base_url = (definition.base_url or DEFAULT_BASE_URLS[api]).rstrip("/")
    environ = os.environ if environ is None else environ
    auth = _auth(definition, environ)

    def http(
        path: str,
        body: Callable[[ModelRequest], dict[str, Any]],
        decoder: Callable[[], FrameDecoder[F]],
        translator: Callable[[], Translator[F]],
        headers: Mapping[str, str] = _SSE,
    ) -> Provider:
        return HttpProvider(
            path=path,
            body=body,
            decoder=decoder,
            translator=translator,
            base_url=base_url,
            headers=headers,
            auth=auth,
            timeouts=timeouts or ProviderTimeouts(),
            retry=retry or RetryPolicy(),
            transport=transport,
        )

    if api == "openai-chat":
        # OpenAI's reasoning models reject the legacy max_tokens; compatible servers only know it.
        official = httpx.URL(base_url).host == httpx.URL(OPENAI_BASE_URL).host
        field = "max_completion_tokens" if official else "max_tokens"
        chat_body = functools.partial(openai_chat.chat_body, max_tokens_field=field)
        return http(openai_chat.PATH, chat_body, SSEDecoder, openai_chat.ChatTranslator)
    if api == "openai-responses":
        return http(
            openai_responses.PATH, openai_responses.responses_body, SSEDecoder, openai_responses.ResponsesTranslator
        )
    if api == "openai-completions":
        return http(
            openai_completions.PATH,
            openai_completions.completion_body,
            SSEDecoder,
            openai_completions.CompletionTranslator,
        )
    if api == "anthropic":
        max_tokens = definition.max_output_tokens or anthropic.DEFAULT_MAX_TOKENS
        messages_body = functools.partial(anthropic.messages_body, default_max_tokens=max_tokens)
        headers = {**_SSE, "anthropic-version": anthropic.API_VERSION}
        return http(anthropic.PATH, messages_body, SSEDecoder, anthropic.MessagesTranslator, headers)
    return http(ollama.PATH, ollama.ollama_body, NDJSONDecoder, ollama.ChatLineTranslator, _NDJSON)


def _auth(definition: ModelDefinition, environ: Mapping[str, str]) -> EnvApiKey | None:
    is_anthropic = definition.api == "anthropic"
    if definition.api_key_env:
        auth = EnvApiKey(
            definition.api_key_env,
            environ,
            header="x-api-key" if is_anthropic else "authorization",
            bearer=not is_anthropic,
        )
        auth.require()  # fail at setup, naming the variable, rather than at the first turn
        return auth
    if definition.base_url is None and definition.api != "ollama":
        ref = f"{definition.ref.provider}/{definition.ref.name}"
        raise ProviderError(
            AUTHENTICATION, f"model {ref} uses the {definition.api} API, which needs a key: set api_key_env"
        )
    return None
