"""The shell tool with real processes: exit codes, environment, timeouts, cancellation, output caps."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import pytest
from processes import alive

from openvaala_lsp.tools import shell as shell_module
from openvaala_lsp.tools.base import ToolContext, ToolOutput
from openvaala_lsp.tools.shell import ShellTool

MARKER = re.compile(r"\n\[\.\.\. (\d+) lines / (\d+) bytes omitted \.\.\.\]\n")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def context(workspace: Path) -> ToolContext:
    return ToolContext(directory=str(workspace), roots=[str(workspace)], environment={"PATH": os.environ["PATH"]})


async def sh(context: ToolContext, command: str, tool: ShellTool | None = None, **extra: object) -> ToolOutput:
    # The outer bound only keeps a broken test from hanging; nothing asserts on elapsed time.
    return await asyncio.wait_for((tool or ShellTool()).run({"command": command, **extra}, context), 60)


def complete_text(path: Path) -> str | None:
    """The file's text once its writer has finished the line, else None."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return text if text.endswith("\n") else None


async def wait_for_file(path: Path) -> str:
    for _ in range(500):
        text = complete_text(path)
        if text is not None:
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was never written")


async def test_output_and_exit_codes(context: ToolContext) -> None:
    out = await sh(context, "echo out; echo err >&2; exit 3")
    assert not out.is_error
    assert out.text == "out\nerr\n[exit code 3]"
    out = await sh(context, "true")
    assert out.text == "(no output)\n[exit code 0]"
    out = await sh(context, "kill -KILL $$")
    assert not out.is_error and out.text.endswith("[killed by SIGKILL]")


async def test_environment_is_exactly_the_given_one(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENVAALA_SHOULD_NOT_LEAK", "1")
    given = {"PATH": os.environ["PATH"], "GREETING": "hello world"}
    context = ToolContext(directory=str(workspace), roots=[str(workspace)], environment=given)
    out = await sh(context, "env")
    seen = dict(line.split("=", 1) for line in out.text.splitlines()[:-1])
    # The shell itself adds PWD (and some shells SHLVL/_); nothing else may appear.
    for added in ("PWD", "SHLVL", "_", "OLDPWD"):
        seen.pop(added, None)
    assert seen == given


async def test_stdin_is_empty_and_workdir_is_used(context: ToolContext, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    out = await sh(context, "cat; pwd", timeout_ms=10_000)
    assert out.text == f"{workspace}\n[exit code 0]"
    out = await sh(context, "pwd", workdir="sub")
    assert out.text.startswith(f"{workspace / 'sub'}\n")


async def test_bad_workdir_and_unstartable_shell_are_errors(
    context: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = await sh(context, "pwd", workdir=str(tmp_path))
    assert out.is_error and out.text == f"path outside the workspace: {tmp_path}"
    out = await sh(context, "pwd", workdir="missing")
    assert out.is_error and "does not exist" in out.text
    out = await sh(context, "pwd", timeout_ms=700_000)
    assert out.is_error and "timeout_ms" in out.text
    monkeypatch.setattr(shell_module, "SHELL", str(tmp_path / "no-such-shell"))
    out = await sh(context, "pwd")
    assert out.is_error and "could not start" in out.text


async def test_timeout_kills_the_whole_group(context: ToolContext) -> None:
    out = await sh(context, "sleep 100 & echo $!; sleep 100", timeout_ms=300)
    assert out.is_error
    assert "[timed out after 300 ms" in out.text
    background = int(out.text.splitlines()[0])
    assert not alive(background)


async def test_timeout_escalates_to_sigkill(context: ToolContext) -> None:
    # The shell and its background job ignore SIGTERM, so only the SIGKILL after the grace ends them.
    out = await sh(context, "trap '' TERM; sleep 100 & echo $!; echo $$; sleep 100", timeout_ms=300)
    assert "[timed out" in out.text
    background, shell_pid = (int(line) for line in out.text.splitlines()[:2])
    assert not alive(background) and not alive(shell_pid)


async def test_cancellation_kills_command_and_background_children(context: ToolContext, workspace: Path) -> None:
    script = "echo $$ > shell.pid; sleep 100 & echo $! > job.pid; sleep 100"
    task = asyncio.create_task(ShellTool().run({"command": script}, context))
    job = int(await wait_for_file(workspace / "job.pid"))
    shell_pid = int(await wait_for_file(workspace / "shell.pid"))
    assert alive(job) and alive(shell_pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    assert not alive(job)
    assert not alive(shell_pid)


async def test_background_job_holding_output_is_stopped_detached_one_survives(context: ToolContext) -> None:
    out = await sh(context, "sleep 100 & echo $!")
    assert "[exit code 0]" in out.text and "background processes still attached" in out.text
    assert not alive(int(out.text.splitlines()[0]))
    out = await sh(context, "sleep 100 > /dev/null 2>&1 & echo $!")
    detached = int(out.text.splitlines()[0])
    try:
        assert out.text.endswith("[exit code 0]")
        assert alive(detached)
    finally:
        os.kill(detached, signal.SIGKILL)


async def test_truncation_keeps_head_and_tail(context: ToolContext) -> None:
    out = await sh(context, "seq 1 100000")
    body = out.text.rsplit("\n", 1)[0] + "\n"
    match = MARKER.search(body)
    assert match is not None
    head, tail = body[: match.start() + 1], body[match.end() :]
    assert head.startswith("1\n2\n3\n") and tail.endswith("99999\n100000\n")
    assert len(head) + len(tail) <= 30_000
    total_bytes = sum(len(f"{n}\n") for n in range(1, 100_001))
    assert len(head.splitlines()) + len(tail.splitlines()) + int(match[1]) == 100_000
    assert len(head) + len(tail) + int(match[2]) == total_bytes
    assert out.text.endswith("[exit code 0]")


async def test_small_read_limit_drops_the_middle_but_counts_it(context: ToolContext) -> None:
    tool = ShellTool(max_output=1000, read_limit=4096)
    out = await sh(context, "seq 1 100000; echo done >&2", tool)
    body = out.text.rsplit("\n", 1)[0] + "\n"
    match = MARKER.search(body)
    assert match is not None
    head, tail = body[: match.start() + 1], body[match.end() :]
    assert head.startswith("1\n") and tail.endswith("99999\n100000\ndone\n")
    assert len(head.splitlines()) + len(tail.splitlines()) + int(match[1]) == 100_001


async def test_megabytes_of_output_do_not_hang(context: ToolContext) -> None:
    out = await sh(context, "head -c 8000000 /dev/zero | tr '\\0' 'y'; echo; echo tail-line; exit 4")
    assert out.text.endswith("tail-line\n[exit code 4]")
    match = MARKER.search(out.text)
    assert match is not None and int(match[2]) > 7_900_000
