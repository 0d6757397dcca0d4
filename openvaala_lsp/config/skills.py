"""Agent Skills: a directory with a `SKILL.md`. Only name and description are loaded up front (they
go into the prompt); the body is read when the model asks for the skill."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from openvaala_lsp.definitions import Definitions, Skill
from openvaala_lsp.protocol.converter import ParamsError, structure

from . import frontmatter
from .errors import ConfigError, split_problem
from .tomlscan import parse_wire_path


def load_skill_file(path: Path) -> tuple[Skill | None, list[ConfigError]]:
    try:
        matter = frontmatter.read(path, with_body=False)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [ConfigError(path=path, line=None, field=None, message=f"cannot read: {exc}")]
    if matter.error:
        return None, [ConfigError(path=path, line=1, field=None, message=matter.error)]
    description = matter.data.get("description")
    if description is None or description == "":
        # the description is all the model sees of a skill: without one it would never be used
        return None, [ConfigError(path=path, line=1, field="description", message="required field missing")]
    wire = {
        "name": matter.data.get("name") or path.parent.name,
        "description": description,
        "path": str(path.resolve()),
    }
    try:
        return structure(wire, Skill), []
    except ParamsError as exc:
        errors = []
        for problem in exc.problems:
            wire_path, message = split_problem(problem)
            key = str((parse_wire_path(wire_path) or ("name",))[0])
            errors.append(ConfigError(path=path, line=matter.lines.get(key), field=key, message=message))
        return None, errors


def leaves(path: str, directory: Path) -> bool:
    """Whether the file at `path` lies outside `directory`, both taken as real paths (links followed)."""
    return not os.path.realpath(path).startswith(os.path.realpath(directory).rstrip("/") + "/")


def skills_within(definitions: Definitions, folder: Path, config_file: Path) -> tuple[Definitions, list[ConfigError]]:
    """A project file's skills without those whose file lies outside the project's folder (each an error)."""
    kept, errors = [], []
    for index, skill in enumerate(definitions.skills):
        if skill.path is not None and leaves(skill.path, folder):
            message = f"the skill's file {os.path.realpath(skill.path)} lies outside {folder}: left out"
            errors.append(ConfigError(path=config_file, line=None, field=f"$.skills[{index}].path", message=message))
        else:
            kept.append(skill)
    return attrs.evolve(definitions, skills=kept), errors


def read_skill_body(skill: Skill) -> str:
    """The skill's instructions: its inline `body`, else the markdown after its file's front matter."""
    if skill.body is not None:
        return skill.body
    if skill.path is None:
        raise ValueError(f"skill {skill.name!r} has neither a body nor a path")
    return frontmatter.read(Path(skill.path)).body.strip()
