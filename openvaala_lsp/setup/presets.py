"""The providers the setup offers, with the defaults it proposes.

OpenAI defaults to the Responses API: it is OpenAI's API for its reasoning models (gpt-5 family) and
keeps their reasoning across turns; `--api openai-chat` picks Chat Completions instead.
"""

from __future__ import annotations

import re

import attrs

from openvaala_lsp.definitions import MODEL_APIS, ModelDefinition, embedded_model
from openvaala_lsp.model import ModelRef
from openvaala_lsp.providers.factory import OLLAMA_BASE_URL

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen(kw_only=True)
class Preset:
    key: str  # the `--provider` value
    label: str
    short: str  # in display names
    ref_provider: str  # ModelRef.provider of the models it makes
    api: str
    model: str | None  # None: the user must name one
    base_url: str | None  # None: the dialect's official endpoint (or, when `asks_base_url`, must be given)
    asks_base_url: bool
    key_env: str | None  # the proposed variable; None: no key by default
    context_window: int
    window_hint: str = ""


PRESETS: tuple[Preset, ...] = (
    Preset(
        key="openai",
        short="OpenAI",
        label="OpenAI",
        ref_provider="openai",
        api="openai-responses",
        model="gpt-5-mini",
        base_url=None,
        asks_base_url=False,
        key_env="OPENAI_API_KEY",
        context_window=400_000,
    ),
    Preset(
        key="anthropic",
        short="Anthropic",
        label="Anthropic",
        ref_provider="anthropic",
        api="anthropic",
        model="claude-sonnet-4-5",
        base_url=None,
        asks_base_url=False,
        key_env="ANTHROPIC_API_KEY",
        context_window=200_000,
    ),
    Preset(
        key="ollama",
        short="Ollama",
        label="Ollama (a local or remote Ollama server)",
        ref_provider="ollama",
        api="ollama",
        model="llama3.2",
        base_url=OLLAMA_BASE_URL,
        asks_base_url=True,
        key_env=None,
        # Ollama truncates prompts beyond its num_ctx silently, so the window must not exceed it
        context_window=4096,
        window_hint="Ollama's default num_ctx; raise it on the server with OLLAMA_CONTEXT_LENGTH",
    ),
    Preset(
        key="openai-compatible",
        short="OpenAI-compatible",
        label="Another OpenAI-compatible server (vLLM, llama.cpp, LM Studio, OpenRouter, ...)",
        ref_provider="openai-compatible",
        api="openai-chat",
        model=None,
        base_url=None,
        asks_base_url=True,
        key_env=None,
        context_window=32_768,
        window_hint="what the server was started with",
    ),
    Preset(
        key="local",
        short="local",
        label="The embedded local model (Gemma 3 270M base, offline, no account: for trying openvaala, not real work)",
        ref_provider="local",
        api=embedded_model().api,
        model="gemma3-270m",
        base_url=None,
        asks_base_url=False,
        key_env=None,
        context_window=4096,
    ),
)
BY_KEY = {preset.key: preset for preset in PRESETS}


class SetupError(Exception):
    """A setting the user must fix; the message says how."""


def build_definition(
    preset: Preset,
    *,
    model: str | None = None,
    api: str | None = None,
    base_url: str | None = None,
    key_env: str | None = None,
    context_window: int | None = None,
) -> ModelDefinition:
    """The definition for the answers; None answers take the preset's defaults. `key_env=""` means
    no key."""
    if preset.key == "local":
        return embedded_model()  # fixed: its package, chat format and window belong together
    model = model or preset.model
    if not model:
        raise SetupError(f"{preset.key} needs a model name (--model)")
    api = api or preset.api
    if api not in MODEL_APIS:
        raise SetupError(f"unknown API {api!r}; expected one of {', '.join(MODEL_APIS)}")
    base_url = (base_url or preset.base_url or "").rstrip("/") or None
    if preset.asks_base_url and base_url is None:
        raise SetupError(f"{preset.key} needs the server's base URL (--base-url), e.g. http://127.0.0.1:8000/v1")
    if base_url is not None:
        check_url(base_url)
    env = preset.key_env if key_env is None else key_env
    if env:
        check_env_name(env)
    window = preset.context_window if context_window is None else context_window
    if window <= 0:
        raise SetupError("the context window must be a positive number of tokens")
    where = f" at {base_url}" if base_url and base_url != preset.base_url else ""
    return ModelDefinition(
        ref=ModelRef(provider=preset.ref_provider, name=model),
        api=api,
        base_url=base_url,
        api_key_env=env or None,
        context_window=window,
        display_name=f"{model} ({preset.short}{where})",
    )


def check_url(url: str) -> None:
    if not re.match(r"https?://[^/\s]+", url):
        raise SetupError(f"{url!r} is not an http:// or https:// URL")


def check_env_name(name: str) -> None:
    if ENV_NAME.fullmatch(name):
        return
    if len(name) >= 16 and " " not in name:
        # never echo it: it may be the key itself
        raise SetupError(
            "that looks like an API key, not a variable name: give the NAME of the environment variable "
            "that holds the key (e.g. OPENAI_API_KEY); the key itself is never written to the config"
        )
    raise SetupError(f"{name!r} is not an environment variable name (letters, digits and _)")
