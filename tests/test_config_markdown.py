"""Markdown agents and skills from `.openvaala/`, `.agents/`, `.claude/` and the user's config dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from openvaala_lsp.config import load_definitions, read_skill_body
from openvaala_lsp.definitions import Skill
from openvaala_lsp.model import ModelRef


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("OPENVAALA_HOME", str(path))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_claude_code_agent_with_tool_names_mapped(user: Path, folder: Path) -> None:
    write(
        folder / ".claude" / "agents" / "review.md",
        """\
---
name: code-reviewer
description: Reviews code for quality.
model: anthropic/claude-sonnet-4
tools: Read, Grep, Glob, Bash(git diff:*), Edit, MultiEdit, Write, WebFetch, mcp__github__list_prs
skills: [testing]
mcpServers:
  - github
---
You are a senior reviewer.

Be kind.
""",
    )
    loaded = load_definitions([str(folder)])
    assert loaded.errors == []
    [agent] = loaded.definitions.agents
    assert agent.name == "code-reviewer"
    assert agent.description == "Reviews code for quality."
    assert agent.default_model == ModelRef(provider="anthropic", name="claude-sonnet-4")
    assert agent.tools == [
        "read_file",
        "grep",
        "glob",
        "shell",
        "edit",
        "write_file",
        "WebFetch",
        "mcp__github__list_prs",
    ]
    assert agent.skills == ["testing"]
    assert agent.mcp_servers == ["github"]
    assert agent.instructions == "You are a senior reviewer.\n\nBe kind."
    assert folder / ".claude" / "agents" / "review.md" in loaded.sources


def test_agent_defaults(user: Path, folder: Path) -> None:
    write(folder / ".agents" / "agents" / "plain.md", "Just a prompt.\n")
    write(folder / ".agents" / "agents" / "listed.md", "---\ntools:\n  - Bash\n  - shell\nmodel: inherit\n---\n")
    loaded = load_definitions([str(folder)])
    assert loaded.errors == []
    listed, plain = loaded.definitions.agents
    assert (plain.name, plain.description, plain.instructions, plain.tools) == ("plain", None, "Just a prompt.", None)
    # `inherit` (and Claude Code's aliases) name no provider: the conversation's model is used
    assert (listed.name, listed.tools, listed.default_model, listed.instructions) == ("listed", ["shell"], None, None)


def test_front_matter_that_strict_yaml_refuses_still_loads(user: Path, folder: Path) -> None:
    write(
        folder / ".claude" / "agents" / "helper.md",
        "---\nname: helper\ndescription: Use when asked. Examples: <example>user: hi</example>\n"
        "tools: Read\n---\nHelp.\n",
    )
    [agent] = load_definitions([str(folder)]).definitions.agents
    assert agent.description == "Use when asked. Examples: <example>user: hi</example>"
    assert agent.tools == ["read_file"]


@pytest.mark.parametrize(
    ("front", "line", "field", "message"),
    [
        ("name: a\nmodel: gpt-4o\n", 3, "model", "expected \"provider/name\", got 'gpt-4o'"),
        ("name: a\ntools: {Read: yes}\n", 3, "tools", "expected a list of names or a comma-separated string"),
        ("description: [1, 2]\n", 2, "description", "expected string, got array"),
        ("name: 7\n", 2, "name", "expected string, got number"),
    ],
)
def test_agent_errors_name_file_line_and_key(
    user: Path, folder: Path, front: str, line: int, field: str, message: str
) -> None:
    path = write(folder / ".openvaala" / "agents" / "a.md", f"---\n{front}---\nbody\n")
    loaded = load_definitions([str(folder)])
    assert loaded.definitions.agents == []
    [error] = loaded.errors
    assert (error.path, error.line, error.field, error.message) == (path, line, field, message)
    assert str(error) == f"{path}:{line}: {field}: {message}"


def test_unclosed_front_matter_is_an_error(user: Path, folder: Path) -> None:
    path = write(folder / ".claude" / "agents" / "a.md", "---\nname: a\nbody\n")
    [error] = load_definitions([str(folder)]).errors
    assert (error.path, error.line, error.field) == (path, 1, None)
    assert "not closed" in error.message


def agent_file(path: Path, description: str) -> None:
    write(path, f"---\nname: same\ndescription: {description}\n---\n")


def test_agent_precedence(user: Path, folder: Path, tmp_path: Path) -> None:
    agent_file(user / "agents" / "same.md", "user")
    assert load_definitions([str(folder)]).definitions.agents[0].description == "user"
    expected = []
    for source in (".claude", ".agents", ".openvaala"):
        agent_file(folder / source / "agents" / "same.md", source)
        expected.append(load_definitions([str(folder)]).definitions.agents[0].description)
    assert expected == [".claude", ".agents", ".openvaala"]
    # the scope's own config.toml is the most deliberate definition of all
    write(folder / ".openvaala" / "config.toml", '[[agents]]\nname = "same"\ndescription = "toml"\n')
    assert load_definitions([str(folder)]).definitions.agents[0].description == "toml"
    # a later workspace folder's lowest source still beats an earlier folder
    other = tmp_path / "other"
    agent_file(other / ".claude" / "agents" / "x.md", "other")
    assert [a.description for a in load_definitions([str(folder), str(other)]).definitions.agents] == ["other"]


def skill(root: Path, directory: str, front: str, body: str = "Do the thing.\n") -> Path:
    return write(root / directory / "SKILL.md", f"---\n{front}---\n{body}")


def test_skills_are_discovered_without_their_bodies(user: Path, folder: Path) -> None:
    path = skill(folder / ".claude" / "skills", "pdf", "description: Work with PDF files\n", "Use pdftotext.\n")
    skill(folder / ".agents" / "skills", "named-dir", "name: renamed\ndescription: Has a name\n")
    (folder / ".agents" / "skills" / "not-a-skill").mkdir()
    loaded = load_definitions([str(folder)])
    assert loaded.errors == []
    assert loaded.definitions.skills == [  # .claude is read first (lowest), so comes first
        Skill(name="pdf", description="Work with PDF files", path=str(path.resolve())),
        Skill(
            name="renamed", description="Has a name", path=str((folder / ".agents/skills/named-dir/SKILL.md").resolve())
        ),
    ]
    assert all(s.body is None for s in loaded.definitions.skills)
    # the body is read when asked for: an edit after loading is what the model gets
    path.write_text("---\ndescription: Work with PDF files\n---\n\nUse pypdf instead.\n")
    assert read_skill_body(loaded.definitions.skills[0]) == "Use pypdf instead."
    assert read_skill_body(Skill(name="inline", description="d", body="inline body")) == "inline body"
    with pytest.raises(ValueError, match="neither a body nor a path"):
        read_skill_body(Skill(name="none", description="d"))


def test_skill_without_description_is_an_error_and_skipped(user: Path, folder: Path) -> None:
    path = skill(folder / ".openvaala" / "skills", "vague", "name: vague\n")
    skill(folder / ".openvaala" / "skills", "fine", "description: fine\n")
    loaded = load_definitions([str(folder)])
    assert [s.name for s in loaded.definitions.skills] == ["fine"]
    [error] = loaded.errors
    assert (error.path, error.field, error.message) == (path, "description", "required field missing")


def test_skill_precedence(user: Path, folder: Path) -> None:
    skill(user / "skills", "s", "description: user\n")
    skill(folder / ".claude" / "skills", "s", "description: claude\n")
    skill(folder / ".agents" / "skills", "s", "description: agents\n")
    assert [s.description for s in load_definitions([str(folder)]).definitions.skills] == ["agents"]
    skill(folder / ".openvaala" / "skills", "s", "description: openvaala\n")
    assert [s.description for s in load_definitions([str(folder)]).definitions.skills] == ["openvaala"]


def test_claude_home_skills_only_without_openvaala_home(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_home = tmp_path / "fake-home"
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENVAALA_HOME", raising=False)
    skill(fake_home / ".claude" / "skills", "mine", "description: from ~/.claude\n")
    skill(fake_home / ".claude" / "skills", "both", "description: from ~/.claude\n")
    skill(tmp_path / "xdg" / "openvaala" / "skills", "both", "description: from config dir\n")
    names = {s.name: s.description for s in load_definitions([str(folder)]).definitions.skills}
    assert names == {"mine": "from ~/.claude", "both": "from config dir"}
    monkeypatch.setenv("OPENVAALA_HOME", str(tmp_path / "isolated"))
    assert load_definitions([str(folder)]).definitions.skills == []
