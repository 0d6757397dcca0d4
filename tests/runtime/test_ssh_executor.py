"""The ssh executor against a real OpenSSH server on a loopback port (`sshd.py`): a conversation whose
executor is that host reads, edits and runs a command there; paths stay in its remote roots; an
interrupt kills the remote process group; a killed sshd mid-command fails that call with a clear
error and the next call reconnects; a host key other than the known one, or an unknown one, is
refused; the workspace methods and listExecutors speak of the remote host."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer
from harness import Harness, ResponseError
from sshd import Sshd, require_sshd
from turn_helpers import USAGE, Session, definitions, text_of

from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.sandbox import _binary as bwrap_binary

EXECUTOR = "box"


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    require_sshd()
    server = Sshd(tmp_path / "sshd")
    server.start()
    yield server
    server.kill()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """The remote root (the host is this machine, reached over ssh)."""
    root = tmp_path / "remote"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "notes.txt").write_text("one\ntwo\n")
    (tmp_path / "outside.txt").write_text("not yours\n")
    return root.resolve()


@pytest.fixture
async def box(agent: Harness, provider: FakeProviderServer, sshd: Sshd, remote: Path) -> AsyncIterator[Harness]:
    """The runtime with the ssh executor defined."""
    executor = sshd.definition(EXECUTOR, [str(remote)], environment={"OPENVAALA_MARK": "set-remotely"})
    await agent.call("setDefinitions", {**definitions(provider), "executors": [executor]})
    yield agent


def tool_calls(provider: FakeProviderServer, *calls: tuple[str, dict[str, Any]], answer: str = "Done.") -> None:
    responses = [
        ChatStream().tool_call(f"call_{n}", name, [json.dumps(arguments)]).finish(usage=USAGE).response()
        for n, (name, arguments) in enumerate(calls, 1)
    ]
    provider.enqueue("openai-chat", *responses, ChatStream().text(answer).finish(usage=USAGE).response())


async def remote_session(lsp: Harness) -> Session:
    conversation = await lsp.call("createConversation", {"executorSettings": {"executorId": EXECUTOR}})
    assert conversation["executorSettings"] == {"executorId": EXECUTOR}
    return await Session.open(lsp, conversation["id"])


async def results(session: Session) -> list[dict[str, Any]]:
    return [item for item in await session.items() if item["type"] == "toolResult"]


async def test_a_conversation_reads_edits_and_runs_on_the_host(
    box: Harness, provider: FakeProviderServer, remote: Path
) -> None:
    tool_calls(
        provider,
        ("read_file", {"path": "notes.txt"}),
        ("edit", {"path": "notes.txt", "old_string": "two", "new_string": "2"}),
        ("write_file", {"path": "sub/new.txt", "content": "made remotely\n"}),
        ("shell", {"command": "cat notes.txt sub/new.txt; echo $OPENVAALA_MARK; pwd; echo oops >&2; exit 3"}),
        ("read_file", {"path": "../outside.txt"}),
        ("write_file", {"path": "sub/deep/../../../escape.txt", "content": "no"}),
    )
    session = await remote_session(box)
    await session.submit("work over there")
    assert (await session.turn_completed())["status"] == "completed"
    read, edit, write, shell, outside, escape = await results(session)
    assert text_of(read) == "     1\tone\n     2\ttwo"
    assert text_of(edit).startswith(f"Replaced 1 occurrence in {remote / 'notes.txt'}.")
    assert edit["toolResult"]["fileChanges"][0]["diff"] == "@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    assert (remote / "notes.txt").read_text() == "one\n2\n"
    assert text_of(write) == f"Created {remote / 'sub/new.txt'} (14 bytes)"
    assert (remote / "sub/new.txt").read_text() == "made remotely\n"
    output = text_of(shell)
    assert f"one\n2\nmade remotely\nset-remotely\n{remote}\noops\n" in output
    assert output.endswith("[exit code 3]")
    if bwrap_binary() is not None and not os.path.exists("/usr/bin/bwrap"):  # none on the host's PATH
        assert output.startswith("[ran without a sandbox: the host 127.0.0.1 cannot start one (no bwrap on its PATH)]")
    assert outside["toolResult"]["isError"] and text_of(outside) == "path outside the workspace: ../outside.txt"
    assert escape["toolResult"]["isError"] and "outside the workspace" in text_of(escape)
    assert not (remote.parent / "escape.txt").exists()
    # the remote files are not the local folders the checkpoints snapshot
    assert not [e for e in session.events() if e["type"] == "turnDiffUpdated"]


async def test_glob_and_grep_on_the_host(box: Harness, provider: FakeProviderServer, remote: Path) -> None:
    (remote / ".gitignore").write_text("build/\n*.log\n")
    (remote / "build").mkdir()
    (remote / "build" / "out.py").write_text("needle = 1\n")
    (remote / "sub" / "deep" / "a.py").write_text("x = 1\nneedle = 2\n")
    (remote / "sub" / "b.py").write_text("Needle = 3\n")
    (remote / "run.log").write_text("needle\n")
    (remote / ".git").mkdir()
    (remote / ".git" / "config.py").write_text("needle\n")
    os.symlink(remote.parent / "outside.txt", remote / "sub" / "link.py")
    tool_calls(
        provider,
        ("glob", {"pattern": "**/*.py"}),
        ("glob", {"pattern": "*.py", "path": "sub"}),
        ("grep", {"pattern": "needle", "output_mode": "content"}),
        ("grep", {"pattern": "needle", "case_insensitive": True, "glob": "*.py"}),
        ("grep", {"pattern": "needle", "output_mode": "count", "path": "sub"}),
        ("glob", {"pattern": "*", "path": ".."}),
    )
    session = await remote_session(box)
    await session.submit("find things")
    await session.turn_completed()
    every, one_level, content, insensitive, counted, outside = [text_of(r) for r in await results(session)]
    assert sorted(every.split("\n")) == [str(remote / "sub/b.py"), str(remote / "sub/deep/a.py")]
    assert one_level == str(remote / "sub/b.py")
    # the host's grep does not read .gitignore (the result says so), but skips .git and links
    assert content.startswith("Found 3 matching lines in 3 files\n")
    assert f"{remote / 'sub/deep/a.py'}:2:needle = 2" in content and f"{remote / 'run.log'}:1:needle" in content
    assert ".git/" not in content and "link.py" not in content and "b.py" not in content
    assert content.endswith("[searched with the host's grep: extended regexes; .gitignore not read]")
    assert insensitive.split("\n")[:4] == [
        "Found 3 files",
        str(remote / "build/out.py"),
        str(remote / "sub/b.py"),
        str(remote / "sub/deep/a.py"),
    ]
    assert counted.startswith(f"Found 1 matching lines in 1 files\n{remote / 'sub/deep/a.py'}:1")
    assert outside == "path outside the workspace: .."


async def test_the_hosts_bwrap_sandboxes_the_command(
    agent: Harness, provider: FakeProviderServer, sshd: Sshd, remote: Path
) -> None:
    binary = bwrap_binary()
    if binary is None:
        pytest.skip("no bwrap here")
    path = f"{os.path.dirname(binary)}:/usr/bin:/bin"
    home = remote / "home"  # the remote user's home, for its credentials
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_test").write_text("secret key\n")
    (home / ".netrc").write_text("secret password\n")
    executor = sshd.definition(EXECUTOR, [str(remote)], environment={"PATH": path, "HOME": str(home)})
    await agent.call("setDefinitions", {**definitions(provider), "executors": [executor]})
    elsewhere = Path("/var/tmp") / f"openvaala-ssh-test-{os.getpid()}-{remote.parent.name}"
    command = f"echo inside > ok.txt; echo out > ../outside.txt; echo out > {elsewhere}; cat ok.txt"
    tool_calls(
        provider,
        ("shell", {"command": command}),
        ("shell", {"command": "ls -A home/.ssh; cat home/.netrc"}),
        ("read_file", {"path": "home/.ssh/id_test"}),
        ("glob", {"pattern": "home/**/*"}),
    )
    session = await remote_session(agent)
    await session.submit("try to leave")
    await session.turn_completed()
    shell, credentials, read, listed = await results(session)
    elsewhere.unlink(missing_ok=True)
    if "cannot start one" in text_of(shell):
        pytest.skip(f"bwrap cannot start here: {text_of(shell)}")
    assert "Read-only file system" in text_of(shell) and "inside" in text_of(shell)
    assert (remote / "ok.txt").read_text() == "inside\n"
    # /tmp is a private one: the workspace under it is seen, the rest of it not
    assert (remote.parent / "outside.txt").read_text() == "not yours\n"
    # the host's credentials: empty in the sandbox, refused by the file tools, not listed
    assert text_of(credentials) == "cat: home/.netrc: Permission denied\n[exit code 1]"  # .ssh: empty
    assert "secret" not in text_of(credentials) and "id_test" not in text_of(credentials)
    assert read["toolResult"]["isError"] and f"it lies in {home / '.ssh'}" in text_of(read)
    assert text_of(listed).startswith("No files match")


async def test_an_interrupt_kills_the_remote_process_group(
    box: Harness, provider: FakeProviderServer, remote: Path
) -> None:
    tool_calls(provider, ("shell", {"command": "sleep 300 & echo $! > child; echo $$ > leader; wait"}))
    session = await remote_session(box)
    await session.submit("wait forever")
    async with asyncio.timeout(10):
        while not (remote / "child").exists() or not (remote / "leader").exists():
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)
    pids = [int((remote / name).read_text()) for name in ("child", "leader")]
    await box.call("interruptTurn", {"conversationId": session.id})
    await session.wait_event(lambda e: e["type"] == "turnCompleted")
    async with asyncio.timeout(5):
        while any(_alive(pid) for pid in pids):
            await asyncio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_killed_sshd_fails_the_call_and_the_next_one_reconnects(
    box: Harness, provider: FakeProviderServer, sshd: Sshd, remote: Path
) -> None:
    tool_calls(provider, ("shell", {"command": "touch started; sleep 60"}))
    session = await remote_session(box)
    await session.submit("run long")
    async with asyncio.timeout(10):
        while not (remote / "started").exists():
            await asyncio.sleep(0.05)
    sshd.kill()
    assert (await session.turn_completed())["status"] == "completed"
    (dropped,) = await results(session)
    assert dropped["toolResult"]["isError"]
    assert text_of(dropped).startswith(
        f"executor {EXECUTOR}: the connection to {sshd.user}@127.0.0.1:{sshd.port} was lost while the command ran"
    )
    assert "the next tool call reconnects" in text_of(dropped)
    listed = await box.call("listExecutors")
    assert listed["executors"][1]["reachable"] is False and "cannot connect" in listed["executors"][1]["error"]

    sshd.start()
    tool_calls(provider, ("shell", {"command": "echo back again"}))
    await session.submit("again")
    await session.turn_completed(2)
    assert text_of((await results(session))[1]).endswith("back again\n[exit code 0]")


async def test_a_host_key_other_than_the_known_one_is_refused(
    agent: Harness, provider: FakeProviderServer, sshd: Sshd, remote: Path, tmp_path: Path
) -> None:
    other = Sshd(tmp_path / "other")  # its host key, listed for our server's address
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(other.known_hosts.read_text().replace(f"]:{other.port} ", f"]:{sshd.port} "))
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    executors = [
        sshd.definition("wrong", [str(remote)], knownHosts=str(wrong)),
        sshd.definition("unknown", [str(remote)], knownHosts=str(empty)),
        sshd.definition("accepted", [str(remote)], knownHosts=str(empty), acceptUnknownHostKey=True),
        sshd.definition("wrong-even-accepting", [str(remote)], knownHosts=str(wrong), acceptUnknownHostKey=True),
    ]
    await agent.call("setDefinitions", {**definitions(provider), "executors": executors})
    listed = {e["id"]: e for e in (await agent.call("listExecutors"))["executors"]}
    assert listed["local"]["reachable"] is True
    assert listed["accepted"]["reachable"] is True and "error" not in listed["accepted"]
    for refused in ("wrong", "wrong-even-accepting"):
        assert listed[refused]["reachable"] is False
        assert f"the host key of 127.0.0.1:{sshd.port} is refused: its key" in listed[refused]["error"]
        assert f"is not the one {wrong} lists for it" in listed[refused]["error"]
    assert f"it is not in {empty}" in listed["unknown"]["error"]

    tool_calls(provider, ("shell", {"command": "echo never"}))
    conversation = await agent.call("createConversation", {"executorSettings": {"executorId": "wrong"}})
    session = await Session.open(agent, conversation["id"])
    await session.submit("try")
    await session.turn_completed()
    (refused,) = await results(session)
    assert refused["toolResult"]["isError"] and "the host key of" in text_of(refused)


async def test_the_workspace_methods_speak_of_the_remote_roots(box: Harness, remote: Path) -> None:
    resolved = await box.call("resolveWorkspaceDirectory", {"directory": "sub", "executorId": EXECUTOR})
    assert resolved["directory"] == str(remote / "sub")
    listing = await box.call("getWorkspaceDirectories", {"directory": "sub", "executorId": EXECUTOR})
    assert listing["baseDirectory"] == str(remote)
    assert listing["entries"] == [{"name": "deep", "path": str(remote / "sub" / "deep")}]
    assert listing["workspaceFolders"] == [{"name": "remote", "path": str(remote)}]
    terminal = await box.call("openTerminalWorkspace", {"directory": "sub/deep", "executorId": EXECUTOR})
    assert terminal["executorId"] == EXECUTOR and terminal["directory"] == str(remote / "sub" / "deep")
    assert terminal["workspace"] == {"root": str(remote), "environment": ["OPENVAALA_MARK=set-remotely"]}
    for outside in ("..", "/", "missing"):
        with pytest.raises(ResponseError) as denied:
            await box.call("resolveWorkspaceDirectory", {"directory": outside, "executorId": EXECUTOR})
        assert denied.value.kind == "workspaceDenied"
    conversation = await box.call(
        "createConversation", {"executorSettings": {"executorId": EXECUTOR, "directory": "sub"}}
    )
    assert conversation["executorSettings"] == {"executorId": EXECUTOR, "directory": str(remote / "sub")}
    remote_settings = {"executorId": EXECUTOR, "directory": "sub"}
    assert "skills" in await box.call("getSkills", {"executorSettings": remote_settings})
    with pytest.raises(ResponseError) as denied:
        await box.call("getSkills", {"executorSettings": {**remote_settings, "directory": "missing"}})
    assert denied.value.kind == "workspaceDenied"


async def test_an_ssh_definition_must_say_where_and_how(agent: Harness, provider: FakeProviderServer) -> None:
    with pytest.raises(ResponseError) as refused:
        await agent.call("setDefinitions", {**definitions(provider), "executors": [{"id": "x", "kind": "ssh"}]})
    assert refused.value.kind == "invalidParams"
    assert "host" in refused.value.message and "roots" in refused.value.message


async def test_a_session_the_host_refuses_is_not_a_dropped_connection(
    agent: Harness, provider: FakeProviderServer, remote: Path, tmp_path: Path
) -> None:
    require_sshd()
    server = Sshd(tmp_path / "one-session")
    server.config.write_text(server.config.read_text() + "MaxSessions 1\n")  # SFTP takes it
    server.start()
    try:
        executors = [server.definition(EXECUTOR, [str(remote)])]
        await agent.call("setDefinitions", {**definitions(provider), "executors": executors})
        tool_calls(provider, ("shell", {"command": "echo no room"}), ("read_file", {"path": "notes.txt"}))
        session = await remote_session(agent)
        await session.submit("two calls")
        await session.turn_completed()
        for refused in await results(session):  # the read asks the host what it has, in a session too
            assert refused["toolResult"]["isError"]
            assert text_of(refused).startswith(
                f"executor {EXECUTOR}: {server.user}@127.0.0.1:{server.port} refused a new session while"
            )
        (_, listed) = (await agent.call("listExecutors"))["executors"]
        assert listed["reachable"] is True  # the connection stayed
    finally:
        server.kill()


async def test_a_remote_command_does_not_hang_on_whether_a_sandbox_starts_here(
    box: Harness, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No sandbox here (a runtime on a machine without bwrap) asks before a local command runs; a
    remote one runs in the host's sandbox, or says it ran without."""
    monkeypatch.setattr(sandbox, "known", lambda: sandbox.SandboxState(usable=False, binary=None, reason="none here"))
    tool_calls(provider, ("shell", {"command": "echo ran"}))
    session = await remote_session(box)
    await session.submit("run")
    await session.turn_completed()
    (ran,) = await results(session)
    assert not ran["toolResult"]["isError"] and text_of(ran).endswith("ran\n[exit code 0]")
