"""Where definitions come from, from lowest to highest precedence.

The user scope (config dir) comes first, then each workspace folder in order. Inside a scope,
`.claude/` < `.agents/` < `.openvaala/` markdown, then the scope's `config.toml` over all of them:
a definition written in our own file is the most deliberate one.
"""

from __future__ import annotations

from pathlib import Path

import attrs

FOLDER_DIRS = (".claude", ".agents", ".openvaala")  # lowest first


@attrs.frozen
class Scope:
    config_file: Path
    agent_dirs: tuple[Path, ...]  # lowest first
    skill_dirs: tuple[Path, ...]


def scopes(folders: list[Path], config_dir: Path, claude_home: Path | None) -> list[Scope]:
    user_skills = (claude_home / "skills",) if claude_home else ()
    user = Scope(
        config_file=config_dir / "config.toml",
        agent_dirs=(config_dir / "agents",),
        skill_dirs=(*user_skills, config_dir / "skills"),
    )
    projects = [
        Scope(
            config_file=folder / ".openvaala" / "config.toml",
            agent_dirs=tuple(folder / d / "agents" for d in FOLDER_DIRS),
            skill_dirs=tuple(folder / d / "skills" for d in FOLDER_DIRS),
        )
        for folder in folders
    ]
    return [user, *projects]


def markdown_files(directory: Path) -> list[Path]:
    """`*.md` right in `directory`; hidden names are editor droppings (`.#agent.md`)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix == ".md" and not p.name.startswith(".") and p.is_file())


def skill_dirs(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if not p.name.startswith(".") and p.is_dir())
