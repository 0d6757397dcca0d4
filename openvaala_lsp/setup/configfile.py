"""The config files the command line looks at, read and written through the config loader, so the
setup and the doctor see exactly what the runtime loads.

The user file is `paths.config_dir() / "config.toml"`; a project may add `.openvaala/config.toml`.
Models are `[[models]]` tables in the protocol's wire names (`baseUrl`, `apiKeyEnv`, ...). API keys
never go into a file, only `apiKeyEnv`, the name of the variable that holds the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from openvaala_lsp import paths
from openvaala_lsp.config import write_user_config
from openvaala_lsp.config.tomlfile import load_toml_file
from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.protocol.converter import unstructure, wire_name
from openvaala_lsp.setup.presets import SetupError

CONFIG_NAME = "config.toml"
PROJECT_CONFIG = Path(".openvaala") / CONFIG_NAME


def user_config_path(config_dir: Path | None = None) -> Path:
    return (config_dir or paths.config_dir()) / CONFIG_NAME


def project_config_path(directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / PROJECT_CONFIG


@attrs.define(kw_only=True)
class ConfigFile:
    path: Path
    exists: bool = False
    models: list[ModelDefinition] = attrs.Factory(list)
    problems: list[str] = attrs.Factory(list)  # a file with problems contributes no model, as in the runtime


def read_config(path: Path) -> ConfigFile:
    definitions, errors = load_toml_file(path, user=path == user_config_path())
    return ConfigFile(
        path=path,
        exists=path.exists(),
        models=definitions.models if definitions is not None else [],
        problems=[_located(error.line, error.field, error.message) for error in errors],
    )


def _located(line: int | None, field: str | None, message: str) -> str:
    return ": ".join(part for part in (f"line {line}" if line else "", field or "", message) if part)


def model_entry(definition: ModelDefinition) -> dict[str, Any]:
    """The `[[models]]` table of a definition: the wire form without `None` fields, keys in the
    order of the definition's fields."""
    wire: dict[str, Any] = unstructure(definition)
    order = [wire_name(field.name) for field in attrs.fields(ModelDefinition)]
    return {key: wire[key] for key in order if key in wire}


def save_model(definition: ModelDefinition, config_dir: Path | None = None) -> Path:
    """The one write of the command line: adds the model to the user config, replacing an entry
    with the same ref in place (a new one goes last; the first model is the default)."""
    try:
        return write_user_config({"models": [model_entry(definition)]}, config_dir=config_dir)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
