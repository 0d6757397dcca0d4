"""git_guard: with the guarded environment, real git runs nothing a hostile repository's config names
(fsmonitor, hooks, filters, textconv, external diffs, submodules' own config), and still works."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openvaala_lsp.tools.git_guard import guarded_environment


def git(directory: Path, *arguments: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(directory), *arguments], check=False, capture_output=True, text=True, env=env
    )
    return done.stdout + done.stderr


def hostile(repository: Path, marks: Path, tag: str) -> None:
    """A repository whose config, hooks and attributes each run a command that leaves a mark."""
    git(repository, "init", "-q")
    for key, value in [
        ("core.fsmonitor", f"touch {marks}/{tag}-fsmonitor; echo"),
        ("filter.evil.clean", f"touch {marks}/{tag}-clean; cat"),
        ("filter.evil.process", f"touch {marks}/{tag}-process"),
        ("diff.evil.textconv", f"touch {marks}/{tag}-textconv; cat"),
        ("diff.evil.command", f"touch {marks}/{tag}-command"),
        ("diff.external", f"touch {marks}/{tag}-external"),
        ("core.pager", f"touch {marks}/{tag}-pager; cat"),
    ]:
        git(repository, "config", key, value)
    hook = repository / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marks}/{tag}-hook\n")
    hook.chmod(0o755)
    (repository / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    (repository / "f.txt").write_text("a\n")


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


async def test_a_hostile_repository_runs_nothing_under_the_guard(tmp_path: Path, marks: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    hostile(repository, marks, "top")
    plain = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    setup = {**plain, "GIT_CONFIG_COUNT": "3"} | {
        "GIT_CONFIG_KEY_0": "core.hooksPath",
        "GIT_CONFIG_VALUE_0": "/dev/null",
        "GIT_CONFIG_KEY_1": "filter.evil.process",
        "GIT_CONFIG_VALUE_1": "",
        "GIT_CONFIG_KEY_2": "filter.evil.clean",
        "GIT_CONFIG_VALUE_2": "cat",
    }
    git(repository, "add", "-A", env=setup)
    git(repository, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-qm", "x", env=setup)
    for mark in marks.iterdir():
        mark.unlink()
    (repository / "f.txt").write_text("b\n")  # the same size: status must read, and would filter, it
    guarded = await guarded_environment(plain, str(repository), "git status")
    assert "M f.txt" in git(repository, "status", "--short", env=guarded)
    diff = git(repository, "diff", env=guarded)
    git(repository, "log", "-p", "--textconv", env=guarded)
    git(repository, "show", env=guarded)
    assert sorted(mark.name for mark in marks.iterdir()) == []
    assert "external diff died" in diff or "-a" in diff  # the external diff cannot run; git says so
    # without the guard the same repository runs its commands (what the guard is for)
    git(repository, "status", "--short", env=plain)
    assert "top-fsmonitor" in {mark.name for mark in marks.iterdir()}


async def test_the_users_own_settings_stay_and_ours_come_after_them(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    given = {"PATH": os.environ["PATH"], "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name"}
    guarded = await guarded_environment({**given, "GIT_CONFIG_VALUE_0": "Ada"}, str(tmp_path), "git config user.name")
    assert guarded["GIT_CONFIG_KEY_0"] == "user.name" and guarded["GIT_CONFIG_VALUE_0"] == "Ada"
    assert guarded["GIT_CONFIG_KEY_1"] == "core.fsmonitor" and int(guarded["GIT_CONFIG_COUNT"]) > 2
    assert git(tmp_path, "config", "user.name", env=guarded).strip() == "Ada"
    assert git(tmp_path, "config", "core.hooksPath", env=guarded).strip() == "/dev/null"
    # no git on PATH, or no repository: the fixed settings alone
    bare = await guarded_environment({"PATH": str(tmp_path / "nothing")}, str(tmp_path), "git status")
    assert bare["GIT_CONFIG_KEY_0"] == "core.fsmonitor" and bare["GIT_PAGER"] == "cat"


async def test_a_submodule_is_not_walked_into(tmp_path: Path, marks: Path) -> None:
    """A submodule has a config of its own, which the guard does not read: git must not go in."""
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    (inner / "f.txt").write_text("a\n")
    git(inner, "add", "-A")
    git(inner, "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-qm", "x")
    top = tmp_path / "top"
    top.mkdir()
    git(top, "init", "-q")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(top, "config", "--file", ".gitmodules", "submodule.sub.ignore", "none")  # asks git to look inside
    git(top / "sub", "config", "core.fsmonitor", f"touch {marks}/sub-fsmonitor; echo")
    git(top / "sub", "config", "filter.evil.clean", f"touch {marks}/sub-clean; cat")
    (top / "sub" / ".gitattributes").write_text("*.txt filter=evil\n")
    (top / "sub" / "f.txt").write_text("b\n")
    guarded = await guarded_environment(dict(os.environ), str(top), "git status")
    git(top, "status", "--short", env=guarded)
    git(top, "diff", env=guarded)
    assert sorted(mark.name for mark in marks.iterdir()) == []


async def test_a_command_without_git_gets_the_fixed_settings_alone(tmp_path: Path, marks: Path) -> None:
    hostile(tmp_path, marks, "top")
    guarded = await guarded_environment(dict(os.environ), str(tmp_path), "ls -la")
    keys = {guarded[f"GIT_CONFIG_KEY_{index}"] for index in range(int(guarded["GIT_CONFIG_COUNT"]))}
    assert "core.fsmonitor" in keys and "filter.evil.clean" not in keys
    named = await guarded_environment(dict(os.environ), str(tmp_path), "make && /usr/bin/git diff")
    keys = {named[f"GIT_CONFIG_KEY_{index}"] for index in range(int(named["GIT_CONFIG_COUNT"]))}
    assert {"filter.evil.clean", "diff.evil.textconv", "diff.evil.command", "diff.external"} <= keys
