"""Skills: only names and descriptions go into the prompt; the model reads a body with the `skill`
tool when it needs it."""

from __future__ import annotations

import asyncio
from typing import Any

from openvaala_lsp.definitions import AgentDefinition, Definitions, Skill
from openvaala_lsp.tools.base import ToolContext, ToolOutput

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

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        name = arguments.get("name")
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            return ToolOutput(text=f"no such skill: {name!r}; skills: {', '.join(sorted(self.skills))}", is_error=True)
        if skill.body is not None:
            return ToolOutput(text=skill.body)
        from openvaala_lsp.config import read_skill_body  # the files' reader: see DefinitionsSource._watcher

        try:
            return ToolOutput(text=await asyncio.to_thread(read_skill_body, skill))
        except (OSError, ValueError) as exc:  # unreadable, not UTF-8, or neither body nor path
            return ToolOutput(text=f"the skill {skill.name} could not be read: {exc}", is_error=True)
