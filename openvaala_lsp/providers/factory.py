"""Building a provider from a ModelDefinition."""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from openvaala_lsp.definitions import MODEL_APIS, ModelDefinition
from openvaala_lsp.providers.anthropic import API_VERSION, DEFAULT_MAX_TOKENS, AnthropicProvider
from openvaala_lsp.providers.base import Provider, ProviderError
from openvaala_lsp.providers.errors import AUTHENTICATION, BAD_REQUEST
from openvaala_lsp.providers.http import EnvApiKey, ProviderTimeouts, StreamingHttp
from openvaala_lsp.providers.ollama import OllamaProvider
from openvaala_lsp.providers.openai_chat import OpenAIChatProvider
from openvaala_lsp.providers.openai_completions import OpenAICompletionsProvider
from openvaala_lsp.providers.openai_responses import OpenAIResponsesProvider
from openvaala_lsp.providers.retry import RetryPolicy

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
_SSE_ACCEPT = {"accept": "text/event-stream"}


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

    def http(headers: Mapping[str, str]) -> StreamingHttp:
        return StreamingHttp(
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
        return OpenAIChatProvider(http(_SSE_ACCEPT), max_tokens_field=field)
    if api == "openai-responses":
        return OpenAIResponsesProvider(http(_SSE_ACCEPT))
    if api == "openai-completions":
        return OpenAICompletionsProvider(http(_SSE_ACCEPT))
    if api == "anthropic":
        return AnthropicProvider(
            http({**_SSE_ACCEPT, "anthropic-version": API_VERSION}),
            default_max_tokens=definition.max_output_tokens or DEFAULT_MAX_TOKENS,
        )
    return OllamaProvider(http({"accept": "application/x-ndjson"}))


def _auth(definition: ModelDefinition, environ: Mapping[str, str]) -> EnvApiKey | None:
    anthropic = definition.api == "anthropic"
    if definition.api_key_env:
        auth = EnvApiKey(
            definition.api_key_env,
            environ,
            header="x-api-key" if anthropic else "authorization",
            bearer=not anthropic,
        )
        auth.require()  # fail at setup, naming the variable, rather than at the first turn
        return auth
    if definition.base_url is None and definition.api != "ollama":
        ref = f"{definition.ref.provider}/{definition.ref.name}"
        raise ProviderError(
            AUTHENTICATION, f"model {ref} uses the {definition.api} API, which needs a key: set api_key_env"
        )
    return None
