"""Hot reload of configuration files, and saving into the user's file."""

from __future__ import annotations

import asyncio
import os
import tomllib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from openvaala_lsp.config import DefinitionsWatcher, LoadedDefinitions, load_definitions, write_user_config
from openvaala_lsp.config.tomlwrite import dumps

TIMEOUT = 10.0  # generous: only a broken watcher ever waits this long


class Reports:
    """Collects what the watcher reports; `until` waits for a load that satisfies a condition."""

    def __init__(self) -> None:
        self.loads: list[LoadedDefinitions] = []
        self._changed = asyncio.Event()

    async def __call__(self, loaded: LoadedDefinitions) -> None:
        self.loads.append(loaded)
        self._changed.set()

    async def until(self, condition: Callable[[LoadedDefinitions], bool]) -> LoadedDefinitions:
        async def wait() -> LoadedDefinitions:
            while True:
                if self.loads and condition(self.loads[-1]):
                    return self.loads[-1]
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(wait(), TIMEOUT)


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return tmp_path / "user"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
async def reports(user: Path, folder: Path) -> AsyncIterator[Reports]:
    collected = Reports()
    watcher = DefinitionsWatcher([str(folder)], collected, interval=0.02, config_dir=user)
    watcher.start()
    assert watcher.current is not None
    yield collected
    await watcher.stop()


def agent_names(loaded: LoadedDefinitions) -> list[str]:
    return [a.name for a in loaded.definitions.agents]


async def test_watcher_reacts_to_add_edit_and_delete(reports: Reports, user: Path, folder: Path) -> None:
    # add a file in a directory that does not exist yet
    agent = folder / ".claude" / "agents" / "helper.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\ndescription: first\n---\n")
    await reports.until(lambda d: agent_names(d) == ["helper"])

    # edit it
    agent.write_text("---\ndescription: second\n---\n")
    await reports.until(lambda d: [a.description for a in d.definitions.agents] == ["second"])

    # add the user's config file; then break it: errors come through too
    user.mkdir()
    (user / "config.toml").write_text('[[agents]]\nname = "mine"\n')
    await reports.until(lambda d: agent_names(d) == ["mine", "helper"])
    (user / "config.toml").write_text("[[agents]\n")
    loaded = await reports.until(lambda d: bool(d.errors))
    assert loaded.errors[0].line == 1
    assert agent_names(loaded) == ["helper"]

    # a new skill directory, then its SKILL.md inside it
    skill_dir = folder / ".agents" / "skills" / "pdf"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\ndescription: PDFs\n---\nbody\n")
    await reports.until(lambda d: [s.name for s in d.definitions.skills] == ["pdf"])

    # delete
    agent.unlink()
    (skill_dir / "SKILL.md").unlink()
    await reports.until(lambda d: agent_names(d) == [] and d.definitions.skills == [])


async def test_atomic_replace_is_seen(reports: Reports, folder: Path) -> None:
    config = folder / ".openvaala" / "config.toml"
    config.parent.mkdir()
    config.write_text('[[executors]]\nid = "a"\n')
    await reports.until(lambda d: [e.id for e in d.definitions.executors] == ["a"])
    temporary = config.with_suffix(".tmp")
    temporary.write_text('[[executors]]\nid = "b"\n')  # same size, as editors do it
    os.replace(temporary, config)
    await reports.until(lambda d: [e.id for e in d.definitions.executors] == ["b"])


async def test_reload_reports_even_unchanged_and_sync_callbacks_work(user: Path, folder: Path) -> None:
    seen: list[LoadedDefinitions] = []

    def failing_then_recording(loaded: LoadedDefinitions) -> None:
        seen.append(loaded)
        if len(seen) == 1:
            raise RuntimeError("a failing callback must not stop the watcher")

    watcher = DefinitionsWatcher([str(folder)], failing_then_recording, interval=0.02, config_dir=user)
    watcher.start()
    try:
        first = await watcher.reload()
        assert seen == [first]
        again = await watcher.reload()
        assert seen == [first, again]
    finally:
        await watcher.stop()
    await watcher.stop()  # twice is fine


# write_user_config


def test_write_user_config_creates_a_file_that_loads_back(user: Path) -> None:
    path = write_user_config(
        {
            "models": [{"ref": "openai/gpt-4o", "api": "openai-chat", "contextWindow": 128000, "apiKeyEnv": "K"}],
            "agents": [{"name": "coder", "defaultModel": {"provider": "openai", "name": "gpt-4o"}}],
        },
        config_dir=user,
    )
    assert path == user / "config.toml"
    doc = tomllib.loads(path.read_text())
    assert doc["models"] == [
        {
            "ref": {"provider": "openai", "name": "gpt-4o"},
            "api": "openai-chat",
            "contextWindow": 128000,
            "apiKeyEnv": "K",
        }
    ]
    loaded = load_definitions([], config_dir=user)
    assert loaded.errors == []
    assert loaded.definitions.models[0].api_key_env == "K"
    assert loaded.definitions.agents[0].default_model is not None


def test_write_user_config_merges_by_key_and_keeps_other_entries(user: Path) -> None:
    user.mkdir()
    (user / "config.toml").write_text(
        """\
# the user's own file
[[models]]
ref = "a/one"
api = "ollama"
contextWindow = 1

[[models]]
ref = { provider = "a", name = "two" }
api = "ollama"
contextWindow = 2

[[agents]]
name = "kept"

[[hooks]]
name = "h"
event = "stop"
command = "true"
"""
    )
    write_user_config(
        {
            "models": [
                {"ref": {"provider": "a", "name": "two"}, "api": "ollama", "contextWindow": 22},
                {"ref": "b/three", "api": "anthropic", "contextWindow": 3},
            ],
            "agents": [{"name": "new", "tools": ["shell"]}],
        },
        config_dir=user,
    )
    loaded = load_definitions([], config_dir=user)
    assert loaded.errors == []
    d = loaded.definitions
    assert [(m.ref.name, m.context_window) for m in d.models] == [("one", 1), ("two", 22), ("three", 3)]
    assert [a.name for a in d.agents] == ["kept", "new"]
    assert [h.name for h in d.hooks] == ["h"]


def test_write_user_config_refuses_bad_input_and_keeps_a_broken_file(user: Path) -> None:
    with pytest.raises(ValueError, match=r"expected one of .* @ \$\.models\[0\]\.api"):
        write_user_config({"models": [{"ref": "a/b", "api": "nope"}]}, config_dir=user)
    with pytest.raises(ValueError, match=r"unknown key"):
        write_user_config({"modles": []}, config_dir=user)
    assert not (user / "config.toml").exists()
    user.mkdir()
    (user / "config.toml").write_text("[[models]\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        write_user_config({"agents": [{"name": "a"}]}, config_dir=user)
    assert (user / "config.toml").read_text() == "[[models]\n"


TRICKY = [
    "",
    "plain",
    'quote " and """ triple',
    "back\\slash \\n not a newline",
    "line one\nline two\n",
    'ends with a quote"',
    'ends with two quotes""',
    "tab\there, cr\r, bell\x07, del\x7f",
    "unicode: ä 漢字 🙂",
    "'''single'''",
]


@pytest.mark.parametrize("text", TRICKY)
def test_emitter_round_trips_strings(text: str) -> None:
    doc: dict[str, Any] = {
        "agents": [{"name": text, "instructions": text, "tools": [text, "x"], "env": {text or "k": text}}]
    }
    assert tomllib.loads(dumps(doc)) == doc


def test_emitter_round_trips_every_value_shape() -> None:
    doc: dict[str, Any] = {
        "top": "first",
        "models": [
            {
                "ref": {"provider": "local", "name": "gemma3-270m"},
                "api": "openai-chat",
                "contextWindow": 4096,
                "localServer": {"package": "p", "chatFormat": "gemma", "contextSize": 4096},
                "enabled": True,
                "ratio": 0.5,
            },
            {"ref": {"provider": "x", "name": "y"}, "api": "ollama", "nested": [{"a": 1}, {"b": [1, 2]}]},
        ],
        "mcpServers": [{"name": "s", "transport": "stdio", "args": [], "env": {}, "headers": {"a b": "c"}}],
        "agents": [],
    }
    assert tomllib.loads(dumps(doc, header="a header\nover two lines")) == doc
