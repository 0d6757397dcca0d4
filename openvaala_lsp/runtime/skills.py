"""Skills: only names and descriptions go into the prompt; the model reads a body with the `skill`
tool when it needs it, from inside the skill's own directory only (the folder its file was found in:
the file must still be there, not a link out of it, when it is read) and never from what no tool may
read (`protected.py`) but the user's own skills folder."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from openvaala_lsp import paths
from openvaala_lsp.config import read_skill_body
from openvaala_lsp.definitions import AgentDefinition, Definitions, Skill
from openvaala_lsp.tools.base import DEFAULT_TIME_LIMIT, ToolContext, ToolOutput
from openvaala_lsp.tools.protected import Protected

SKILL_TOOL = "skill"


def agent_skills(definitions: Definitions, agent: AgentDefinition | None) -> list[Skill]:
    """The skills an agent may use: all of them, or the ones its definition names."""
    if agent is None or agent.skills is None:
        return list(definitions.skills)
    wanted = set(agent.skills)
    return [skill for skill in definitions.skills if skill.name in wanted]


def skills_prompt(skills: list[Skill]) -> str:
    if not skills:
        return ""
    listed = "\n".join(f"- {skill.name}: {skill.description}" for skill in skills)
    return f"Skills you can use (call the `{SKILL_TOOL}` tool with a skill's name to read its instructions):\n{listed}"


class SkillTool:
    name = SKILL_TOOL
    description = "Reads the full instructions of one of the listed skills. Call it before using the skill."

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = {skill.name: skill for skill in skills}
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": sorted(self.skills)}},
            "required": ["name"],
        }

    def time_limit(self, arguments: dict[str, Any]) -> float:
        return DEFAULT_TIME_LIMIT

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        name = arguments.get("name")
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            return ToolOutput(text=f"no such skill: {name!r}; skills: {', '.join(sorted(self.skills))}", is_error=True)
        if skill.body is not None:
            return ToolOutput(text=skill.body)

        try:
            return ToolOutput(text=await asyncio.to_thread(read_skill_body, confined(skill, context.protected)))
        except (OSError, ValueError) as exc:  # unreadable, not UTF-8, neither body nor path, or refused
            return ToolOutput(text=f"the skill {skill.name} could not be read: {exc}", is_error=True)


def confined(skill: Skill, protected: Protected) -> Skill:
    """The skill with its file's real path, or ValueError if that lies outside the skill's directory
    or in what no tool may read."""
    if skill.path is None:
        return skill
    if not os.path.isabs(skill.path):
        raise ValueError(f"its path is not absolute: {skill.path}")
    real = os.path.realpath(skill.path)
    directory = os.path.realpath(os.path.dirname(skill.path))
    if not real.startswith(directory.rstrip("/") + "/"):
        raise ValueError(f"its file leads out of its directory ({directory}) to {real}")
    holder = protected.unreadable_at(real)
    own = os.path.realpath(paths.config_dir() / "skills")  # the user's skills, under openvaala's own folder
    if holder is not None and not real.startswith(own + "/"):
        raise ValueError(f"its file {real} is protected: it lies in {holder}, which no tool may read")
    return Skill(name=skill.name, description=skill.description, path=real)
