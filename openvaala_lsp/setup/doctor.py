"""`openvaala doctor`: what is configured and whether it works. Key values are never shown.

The database and host probes are passive: the database is opened read-only for an instant, and the
host is judged by its pid file, so neither can disturb a runtime that is starting or running.
"""

from __future__ import annotations

import asyncio
import os
import re
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from openvaala_lsp import __version__, paths
from openvaala_lsp.checkpoints import git
from openvaala_lsp.definitions import EMBEDDED_MODEL_NOTE, LocalServer, ModelDefinition
from openvaala_lsp.protocol.errors import NoModelConfigured
from openvaala_lsp.providers.factory import DEFAULT_BASE_URLS
from openvaala_lsp.setup.check import CheckResult, check_model, local_model_missing
from openvaala_lsp.setup.configfile import ConfigFile, project_config_path, read_config, user_config_path
from openvaala_lsp.telemetry.settings import describe, read_settings
from openvaala_lsp.tools import sandbox

NO_MODEL = NoModelConfigured.default_message  # the runtime's words, so users meet one message
EMBEDDED_PACKAGE = LocalServer().package
_LOCK_HOLDER = re.compile(r"held in (?P<holder>.+?) \(PID (?P<pid>\d+)\)")


@attrs.define(kw_only=True)
class Configured:
    label: str  # "user" or "project"
    file: ConfigFile


def read_all(directory: Path | None = None) -> list[Configured]:
    return [
        Configured(label="user", file=read_config(user_config_path())),
        Configured(label="project", file=read_config(project_config_path(directory))),
    ]


def effective_models(configured: list[Configured]) -> list[tuple[str, ModelDefinition]]:
    """(source label, model) as the runtime merges them: a later file's model with the same ref
    replaces the earlier one, in the earlier one's place."""
    by_ref: dict[tuple[str, str], tuple[str, ModelDefinition]] = {}
    for entry in configured:
        for model in entry.file.models:
            by_ref[(model.ref.provider, model.ref.name)] = (entry.label, model)
    return list(by_ref.values())


def status(say: Callable[[str], None], environ: Mapping[str, str], configured: list[Configured]) -> bool:
    """Config files and models without any request; True when nothing is wrong so far."""
    healthy = _files(say, configured)
    models = effective_models(configured)
    if not models:
        say(NO_MODEL)
        return False
    say("models (the first is the default):")
    for label, model in models:
        say(f"  {_name(model)}  [{label}] {_where(model)}")
        if model.local_server is not None and model.local_server.package == EMBEDDED_PACKAGE:
            say(textwrap.fill(EMBEDDED_MODEL_NOTE, width=100, initial_indent="    ", subsequent_indent="    "))
        problem = _readiness(model, environ)
        say(f"    {problem or _ready_text(model)}")
        healthy = healthy and problem is None
    return healthy


def doctor(say: Callable[[str], None], environ: Mapping[str, str], *, offline: bool) -> int:
    say(f"openvaala {__version__}")
    configured = read_all()
    healthy = status(say, environ, configured)
    models = [model for _, model in effective_models(configured)]
    if models and not offline:
        say("checking each model with one tiny request...")
        for model, result in zip(models, asyncio.run(_check_all(models, environ)), strict=True):
            say(f"  {_name(model)}: {_indent(result.describe())}")
            healthy = healthy and result.ok
    elif models:
        say("not checking whether the models answer (--offline)")
    database, database_ok = database_status(paths.database_path())
    say(f"database: {database}")
    host = host_status()
    if host is not None:
        say(f"runtime host: {host}")
    say(f"sandbox: {sandbox_status()}")
    say(f"checkpoints: {checkpoints_status()}")
    say(f"telemetry: {telemetry_status(environ)}")
    say("everything configured works" if healthy and database_ok else "problems found (see above)")
    return 0 if healthy and database_ok else 1


def sandbox_status() -> str:
    """Whether shell commands can run in the sandbox here; when not, what happens instead (a warning,
    not a failure: commands still run, after the user allows each)."""
    state = sandbox.state()
    if state.usable:
        return f"{state.reason}: shell commands write only the workspace and have no network unless allowed"
    return f"WARNING: cannot start ({state.reason}); each shell command asks before it runs unsandboxed"


def telemetry_status(environ: Mapping[str, str]) -> str:
    """Whether a runtime host started in this environment would export telemetry, and where."""
    return describe(read_settings(user_config_path(), environ), environ)


def checkpoints_status() -> str:
    """Whether turns are checkpointed (git found): a warning, not a failure, when they cannot be."""
    state = git.state()
    if state.usable:
        return f"{state.reason} at {state.executable}: each turn's changes can be diffed and reverted"
    return f"WARNING: {state.reason}; turn diffs of shell commands and revertTurn need git"


async def _check_all(models: list[ModelDefinition], environ: Mapping[str, str]) -> list[CheckResult]:
    return list(await asyncio.gather(*(check_model(model, environ) for model in models)))


def _files(say: Callable[[str], None], configured: list[Configured]) -> bool:
    say("config files:")
    healthy = True
    for entry in configured:
        file = entry.file
        if not file.exists:
            say(f"  {entry.label:8} {file.path} (not found)")
            continue
        count = len(file.models)
        say(f"  {entry.label:8} {file.path} ({count} model{'' if count == 1 else 's'})")
        for problem in file.problems:
            say(f"    problem: {problem}")
            healthy = False
    return healthy


def _name(model: ModelDefinition) -> str:
    return f"{model.ref.provider}/{model.ref.name}"


def _where(model: ModelDefinition) -> str:
    if model.local_server is not None:
        return f"embedded ({model.local_server.package})"
    return f"{model.api} at {model.base_url or DEFAULT_BASE_URLS.get(model.api, '?')}"


def _readiness(model: ModelDefinition, environ: Mapping[str, str]) -> str | None:
    """What stops the model before any request, or None."""
    if model.local_server is not None:
        if model.local_server.package == EMBEDDED_PACKAGE and model.api == "openai-chat":
            # what `openvaala setup` wrote before the embedded model was prompted as a base model
            return (
                "sends chat requests, which this base model answers by echoing them; "
                "update the entry with `openvaala setup --provider local`"
            )
        return local_model_missing(model.local_server)
    if model.api_key_env and not environ.get(model.api_key_env, "").strip():
        return f"key: {model.api_key_env} is NOT set; export {model.api_key_env}=<your key>"
    if not model.api_key_env and model.base_url is None and model.api != "ollama":
        return "key: no apiKeyEnv, but the official endpoint needs a key"
    return None


def _ready_text(model: ModelDefinition) -> str:
    if model.local_server is not None:
        return "llama.cpp and the model package are installed"
    if model.api_key_env:
        return f"key: {model.api_key_env} is set"
    return "key: none needed"


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


def database_status(path: Path) -> tuple[str, bool]:
    """(description, usable). In use by a runtime is normal: DuckDB lets one process hold the file."""
    if not path.exists():
        return f"{path} (not created yet; made on first use)", True
    import duckdb

    try:
        connection = duckdb.connect(str(path), read_only=True, config={"autoinstall_known_extensions": False})
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            return f"{path} (cannot open: {exc})", False
        match = _LOCK_HOLDER.search(str(exc))
        holder = f" (pid {match['pid']}, {match['holder']})" if match else ""
        return f"{path} (locked: in use by a running openvaala runtime{holder})", True
    except duckdb.Error as exc:
        return f"{path} (cannot open: {exc})", False
    connection.close()
    size = path.stat().st_size
    return f"{path} ({size / 1e6:.1f} MB, not in use)", True


def host_status() -> str | None:
    """The runtime host's state from its pid file; None when this install has no host."""
    try:
        from openvaala_lsp.rundir import run_dir
    except ImportError:
        return None
    run = run_dir()
    try:
        with open(run.pid_file) as pid_file:
            pid = int(pid_file.read().strip())
    except (OSError, ValueError):
        return "not running (editors start it on demand)"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"not running (stale pid file {run.pid_file})"
    except PermissionError:
        pass  # alive, owned by someone else
    return f"running (pid {pid}), socket {run.socket}"
