"""The connection check: one tiny streamed request through the runtime's own provider code, so a
model that passes here works the same way in a conversation.

No retries and short deadlines: the user is waiting and wants the failure, not a backoff. The
embedded model's server is started for the check and stopped after it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Mapping

import attrs

from openvaala_lsp import paths
from openvaala_lsp.definitions import LocalServer, ModelDefinition
from openvaala_lsp.model import Content
from openvaala_lsp.providers.base import Completed, Message, ModelRequest, Provider, ProviderError, TextDelta
from openvaala_lsp.providers.errors import (
    AUTHENTICATION,
    BAD_REQUEST,
    CONNECTION,
    INSUFFICIENT_QUOTA,
    NOT_FOUND,
    RATE_LIMITED,
    TIMEOUT,
)
from openvaala_lsp.providers.factory import DEFAULT_BASE_URLS, make_provider
from openvaala_lsp.providers.http import ProviderTimeouts
from openvaala_lsp.providers.retry import RetryPolicy

PROMPT = "Reply with OK"
# room for a reasoning model to think briefly and still answer; the reply itself is not required
MAX_OUTPUT_TOKENS = 32
TIMEOUTS = ProviderTimeouts(connect=5.0, read=60.0, write=10.0, pool=5.0, first_event=60.0, idle=30.0)
DEADLINE = 90.0  # the whole request, after the embedded server (if any) has started
LOCAL_MODEL_INSTALL = "pip install 'openvaala-lsp[local-model]'"


@attrs.frozen(kw_only=True)
class CheckResult:
    ok: bool
    reply: str = ""
    finish_reason: str = ""
    kind: str = ""  # the ProviderError kind of a failure
    message: str = ""
    hint: str = ""  # what the user can do about the failure

    def describe(self) -> str:
        if self.ok:
            if self.reply.strip():
                return f"ok, the model replied {self.reply.strip()[:80]!r}"
            return f"ok, connected (no text within {MAX_OUTPUT_TOKENS} tokens; finish: {self.finish_reason})"
        return f"{self.kind}: {self.message}" + (f"\n  {self.hint}" if self.hint else "")


def local_model_missing(spec: LocalServer) -> str | None:
    """Why the embedded model cannot start here, or None; looks for the modules without importing them."""
    missing = [name for name in ("llama_cpp", spec.package.replace("-", "_")) if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f"the embedded model needs {', '.join(missing)}: install it with `{LOCAL_MODEL_INSTALL}`"


async def check_model(definition: ModelDefinition, environ: Mapping[str, str] | None = None) -> CheckResult:
    from openvaala_lsp.runtime.model_clients import LocalModelServer  # only when checking

    environ = os.environ if environ is None else environ
    server: LocalModelServer | None = None
    target = definition
    try:
        if definition.local_server is not None:
            missing = local_model_missing(definition.local_server)
            if missing:
                return CheckResult(ok=False, kind=CONNECTION, message=missing)
            server = LocalModelServer(definition.local_server, definition.ref.name)
            target = attrs.evolve(definition, base_url=await server.ensure(), local_server=None)
        provider = make_provider(target, environ=environ, timeouts=TIMEOUTS, retry=RetryPolicy(max_retries=0))
        try:
            async with asyncio.timeout(DEADLINE):
                reply, finish = await _ask(provider, target.ref.name)
        finally:
            await provider.aclose()
    except ProviderError as error:
        hint = _hint(definition, target, error.kind, environ)
        return CheckResult(ok=False, kind=error.kind, message=error.message, hint=hint)
    except TimeoutError:
        message = f"no complete answer within {DEADLINE:g} s"
        return CheckResult(ok=False, kind=TIMEOUT, message=message, hint=_hint(definition, target, TIMEOUT, environ))
    finally:
        if server is not None:
            await server.stop()
    return CheckResult(ok=True, reply=reply, finish_reason=finish)


async def _ask(provider: Provider, model: str) -> tuple[str, str]:
    request = ModelRequest(
        model=model,
        messages=[Message(role="user", content=[Content(type="text", text=PROMPT)])],
        max_output_tokens=MAX_OUTPUT_TOKENS,
    )
    text: list[str] = []
    finish = ""
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, Completed):
            finish = event.finish_reason
    return "".join(text), finish


def _hint(configured: ModelDefinition, definition: ModelDefinition, kind: str, environ: Mapping[str, str]) -> str:
    """`definition` is what was called: `configured` with the embedded server's URL filled in."""
    if configured.local_server is not None:
        return f"see {paths.state_dir() / 'llama-server.log'}"
    url = definition.base_url or DEFAULT_BASE_URLS.get(definition.api, "")
    env = definition.api_key_env
    if kind == AUTHENTICATION:
        if env and not environ.get(env, "").strip():
            return f"export {env}=<your key> in the shell that runs openvaala (and your editor)"
        if env:
            return f"the server refused the key in {env}; check that it is a valid key for {url}"
        return "the server wants an API key: set up the model with the name of the variable that holds it"
    if kind == NOT_FOUND:
        pull = f" (`ollama pull {definition.ref.name}`)" if definition.api == "ollama" else ""
        return f"check the model name {definition.ref.name!r}{pull} and the base URL {url}"
    if kind == CONNECTION:
        serve = " (start it with `ollama serve`)" if definition.api == "ollama" else ""
        return f"nothing answers at {url}: is the server running{serve} and the URL right?"
    if kind == TIMEOUT:
        return f"{url} did not answer in time: check the URL, then retry"
    if kind == INSUFFICIENT_QUOTA:
        return "the account has no credit or quota left"
    if kind == RATE_LIMITED:
        return "rate limited: retry in a moment"
    if kind == BAD_REQUEST:
        return "the server rejected the request: check the model name and the API dialect (--api)"
    return ""
