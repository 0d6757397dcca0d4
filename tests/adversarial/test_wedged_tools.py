"""Finding 7: a command could wedge the runtime. One that SIGSTOPped the warm sandbox's spawner (its
parent: `kill -STOP $PPID`) left its turn running forever: the tool's timeout never fired,
interruptTurn answered ok and the turn never ended, the runtime never became idle. And an interrupt
waited more than 4 s for a command that ignores SIGTERM.

Now every tool call has a deadline the runtime keeps, whatever becomes of its process or of the
spawner: the host follows each command through a pidfd of its own, a spawner that does not report a
command's end is replaced, every wait of a stop is bounded, and an interrupted turn ends without
waiting on a tool that is slow to die. Each case runs through a real turn (the in-process runtime,
the scripted model, a real bubblewrap sandbox, warm sandboxes on). An interrupt must end its turn
within 2 s, in every state a turn can be in: that is the hang guard of the waits below.

The cleaner half: the spawner empties only the tmpfs it found at its start. A /tmp that is no longer
that mount (unmounted, or another one put over it) is left alone, and the warm sandbox is discarded;
shown in a mount namespace whose /tmp is a throwaway tmpfs (`in_private_tmp`), never the machine's."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import textwrap
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from fake_provider import ChatStream, FakeProviderServer, ScriptedResponse
from harness import Harness
from processes import running_with
from sandbox_helpers import in_private_tmp, needs_sandbox
from turn_helpers import API_KEY, Session, definitions, text_of

from openvaala_lsp.tools import files
from openvaala_lsp.tools.files import WriteFileTool

pytestmark = needs_sandbox

INTERRUPT_GUARD = 2.0  # seconds an interrupted turn may take to end: the promise
SPAWNER_TEXT = b"sandbox's own tmpfs"  # in the spawner's command line (its source), as in test_sandbox.py


def configured(provider: FakeProviderServer, **extra: Any) -> dict[str, Any]:
    """The scripted model with room for a flood of output (no compaction), and `extra` definitions."""
    [model] = definitions(provider)["models"]
    return {"models": [{**model, "contextWindow": 1_000_000}], **extra}


def unique(number: int) -> str:
    """A sleep's argument no other test (nor another run of this one) uses: its processes are found by it."""
    return f"300.{os.getpid()}{number}"


def shell(command: str, **arguments: Any) -> ScriptedResponse:
    return ChatStream().tool_call("c1", "shell", [json.dumps({"command": command, **arguments})]).finish().response()


def said(text: str) -> ScriptedResponse:
    return ChatStream().text(text).finish().response()


class Agent:
    """One conversation of an editor whose model the test scripts, counting its turns."""

    def __init__(self, editor: Harness, provider: FakeProviderServer, session: Session, workspace: Path) -> None:
        self.editor = editor
        self.provider = provider
        self.session = session
        self.workspace = workspace
        self.turns = 0
        self._submitting: asyncio.Future[str] | None = None

    async def run(self, command: str, **arguments: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """A turn whose model runs `command`: the turn once it ended, and the command's result item."""
        await self.start(shell(command, **arguments), said("done"), text=f"run {command}")
        return await self.outcome()

    async def start(self, *responses: ScriptedResponse, text: str = "go") -> None:
        """A turn whose model's answers are `responses`. Not waited for: the answer to a submit
        comes once the turn has recorded it, after its userPromptSubmit hooks."""
        self.provider.enqueue("openai-chat", *responses)
        self._submitting = asyncio.ensure_future(self.session.submit(text))
        self.turns += 1

    async def outcome(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The turn once it ended, and its last tool result."""
        turn = await self.session.turn_completed(self.turns)
        assert self._submitting is not None
        await self._submitting
        results = [item for item in await self.session.items() if item["type"] == "toolResult"]
        return turn, results[-1]

    async def interrupt(self) -> dict[str, Any]:
        """interruptTurn, and the turn once it ended: within `INTERRUPT_GUARD`, or the test fails."""
        await self.editor.call("interruptTurn", {"conversationId": self.session.id})
        turn = await self._ended(INTERRUPT_GUARD)
        if self._submitting is not None:
            await self._submitting
        assert (await self.editor.call("isIdle")) == {"idle": True}
        return turn

    async def _ended(self, guard: float) -> dict[str, Any]:
        async with asyncio.timeout(guard):
            while True:
                ended = [e["turn"] for e in self.session.events() if e["type"] == "turnCompleted"]
                if len(ended) >= self.turns:
                    return ended[self.turns - 1]
                await asyncio.sleep(0.005)

    async def warm_up(self) -> str:
        """Runs commands until one runs in a warm sandbox (a sandbox of its own runs its command
        under pid 1, a warm one under its spawner's pid); that sandbox's PID namespace."""
        for _ in range(50):
            _, result = await self.run("echo $PPID $(readlink /proc/self/ns/pid)")
            parent, namespace = text_of(result).split("\n", 1)[0].split()
            if parent != "1":
                return namespace
        raise AssertionError("no warm sandbox started")

    async def next_command_works(self, old_namespace: str | None = None) -> None:
        """A command runs after what the test did; and soon again in a warm sandbox, another one
        than `old_namespace`'s if given."""
        _, result = await self.run("echo works")
        assert text_of(result) == "works\n[exit code 0]", text_of(result)
        assert await self.warm_up() != old_namespace


@pytest.fixture
async def editor(
    home: Path, workspace: Path, provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, approvals=True)
    await harness.call("setDefinitions", configured(provider))
    yield harness
    await harness.stop()


@pytest.fixture
async def agent(editor: Harness, provider: FakeProviderServer, workspace: Path) -> Agent:
    return Agent(editor, provider, await Session.open(editor), workspace)


async def until(condition: Callable[[], bool], guard: float = 10) -> None:
    """Waits for `condition` (processes take a moment to be gone); fails after `guard` seconds."""
    async with asyncio.timeout(guard):
        while not condition():
            await asyncio.sleep(0.02)


def state_and_parent(pid: int) -> tuple[str, int]:
    with open(f"/proc/{pid}/stat") as stat:
        state, parent = stat.read().rsplit(")", 1)[1].split()[:2]
    return state, int(parent)


def ours(pid: int) -> bool:
    """Whether the process descends from this test's (another test run may share the machine)."""
    while pid > 1:
        pid = state_and_parent(pid)[1]
        if pid == os.getpid():
            return True
    return False


def stopped_spawners() -> list[int]:
    """This test's spawners of warm sandboxes that are stopped (SIGSTOP): none may outlive what
    stopped them."""
    found = []
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if SPAWNER_TEXT in cmdline.read() and state_and_parent(pid)[0] in ("T", "t") and ours(pid):
                    found.append(pid)
        except OSError:
            continue
    return found


def spawner_of(pid: int) -> int:
    """The warm sandbox's spawner above a process of its command."""
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if SPAWNER_TEXT in cmdline.read():
                return pid
        pid = state_and_parent(pid)[1]
    raise AssertionError("not in a warm sandbox")


async def wait_for_file(path: Path) -> None:
    await until(path.exists, guard=20)


# The spawner stopped or killed


async def test_a_command_that_stops_its_spawner_then_exits(agent: Agent) -> None:
    namespace = await agent.warm_up()
    # the pause: until the spawner has said the command started (stopped before that, it is replaced
    # too, but the command's output is lost with it)
    turn, result = await agent.run("sleep 0.2; kill -STOP $PPID; echo still here")
    assert turn["status"] == "completed"
    text = text_of(result)
    assert text.startswith("still here\n") and "exit code is unknown" in text, text
    assert result["toolResult"]["isError"] is True
    await until(lambda: not stopped_spawners())  # replaced: the stopped one is gone
    await agent.next_command_works(namespace)


async def test_a_command_that_stops_its_spawner_then_sleeps_times_out(agent: Agent) -> None:
    marker = unique(1)
    namespace = await agent.warm_up()
    turn, result = await agent.run(f"sleep 0.2; kill -STOP $PPID; sleep {marker}", timeout_ms=1500)
    assert turn["status"] == "completed"
    assert "[timed out after 1500 ms" in text_of(result) and result["toolResult"]["isError"] is True
    await until(lambda: not running_with(marker) and not stopped_spawners())
    await agent.next_command_works(namespace)


async def test_interrupting_a_command_whose_spawner_is_stopped(agent: Agent) -> None:
    marker = unique(2)
    namespace = await agent.warm_up()
    await agent.start(shell(f"sleep 0.2; kill -STOP $PPID; touch stopped; sleep {marker}"))
    await wait_for_file(agent.workspace / "stopped")
    turn = await agent.interrupt()
    assert turn["status"] == "interrupted"
    await until(lambda: not running_with(marker) and not stopped_spawners())
    await agent.next_command_works(namespace)


@pytest.mark.parametrize("by", ["the command", "the machine"])
async def test_a_killed_spawner_ends_the_command_with_a_clear_result(agent: Agent, by: str) -> None:
    marker = unique(3 if by == "the command" else 4)
    namespace = await agent.warm_up()
    if by == "the command":
        turn, result = await agent.run(f"kill -KILL $PPID; sleep {marker}")
    else:
        await agent.start(shell(f"sleep {marker}"), said("done"))
        await until(lambda: bool(running_with(marker)))
        os.kill(spawner_of(running_with(marker)[0]), signal.SIGKILL)
        turn, result = await agent.outcome()
    assert turn["status"] == "completed"
    assert text_of(result).endswith("[killed by SIGKILL]"), text_of(result)  # it died with its sandbox
    await until(lambda: not running_with(marker))
    await agent.next_command_works(namespace)


# Commands that are hard to stop


@pytest.mark.parametrize("kind", ["own", "warm"])
async def test_interrupting_a_command_that_ignores_sigterm(agent: Agent, kind: str) -> None:
    marker = unique(5)
    if kind == "warm":
        await agent.warm_up()
    await agent.start(shell(f"trap '' TERM; touch ready; sleep {marker}"))
    await wait_for_file(agent.workspace / "ready")
    turn = await agent.interrupt()
    assert turn["status"] == "interrupted"
    await until(lambda: not running_with(marker))
    await agent.next_command_works()


@pytest.mark.parametrize("kind", ["own", "warm"])
async def test_a_bounded_fork_bomb_is_stopped_at_its_timeout(agent: Agent, kind: str) -> None:
    marker = unique(6)
    if kind == "warm":
        await agent.warm_up()
    # a few hundred sleepers that ignore SIGTERM, some of them in sessions of their own; never more
    bomb = (
        f"trap '' TERM; for i in $(seq 200); do sleep {marker} & done;"
        f" for i in $(seq 20); do setsid sleep {marker} & done; wait"
    )
    turn, result = await agent.run(bomb, timeout_ms=1500)
    assert turn["status"] == "completed"
    assert "[timed out after 1500 ms" in text_of(result), text_of(result)
    await until(lambda: not running_with(marker))
    await agent.next_command_works()


async def test_output_flooding_past_its_timeout(agent: Agent) -> None:
    await agent.warm_up()
    turn, result = await agent.run("yes", timeout_ms=1000)
    assert turn["status"] == "completed", turn["error"]
    text = text_of(result)
    assert text.startswith("y\ny\n") and "omitted" in text and "[timed out after 1000 ms" in text, text[-300:]
    await agent.next_command_works()


async def test_a_tool_past_the_runtime_s_deadline_gives_the_model_an_error(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file tool whose thread never comes back (a hung network file system, say) ends at the
    runtime's deadline: the write is made to block as such a file system would."""
    monkeypatch.setattr(WriteFileTool, "TIME_LIMIT", 0.5)
    hung = threading.Event()
    monkeypatch.setattr(files, "_write", lambda path, real, content: hung.wait(30) and "written late")
    call = ChatStream().tool_call("c1", "write_file", [json.dumps({"path": "hung", "content": "x"})])
    await agent.start(call.finish().response(), said("done"))
    try:
        turn, result = await agent.outcome()
    finally:
        hung.set()  # the thread goes on and ends
    assert turn["status"] == "completed"
    assert "did not end within 0.5 s" in text_of(result) and result["toolResult"]["isError"] is True
    assert "did not end" in json.dumps(agent.provider.requests_for("openai-chat")[-1].json["messages"][-1])


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit"])
async def test_a_fifo_is_refused_at_once_never_waited_on(agent: Agent, tool: str) -> None:
    """A FIFO where a file was (a command can put one there) would hold a file tool's thread for ever."""
    os.mkfifo(agent.workspace / "pipe")
    arguments = {"path": "pipe", "content": "x", "old_string": "a", "new_string": "b"}
    wanted = {"read_file": ["path"], "write_file": ["path", "content"], "edit": ["path", "old_string", "new_string"]}
    given = {key: arguments[key] for key in wanted[tool]}
    await agent.start(ChatStream().tool_call("c1", tool, [json.dumps(given)]).finish().response(), said("done"))
    turn, result = await agent.outcome()
    assert turn["status"] == "completed"
    assert "not a regular file: pipe" in text_of(result) and result["toolResult"]["isError"] is True


# An interrupt in every other state of a turn


async def test_interrupt_while_the_model_streams(agent: Agent) -> None:
    await agent.start(ChatStream().text("partial ").pause(30).text("never").finish().response())
    await agent.session.wait_event(lambda e: e["type"] == "itemDelta")
    assert (await agent.interrupt())["status"] == "interrupted"


async def test_interrupt_while_an_approval_waits(agent: Agent, provider: FakeProviderServer) -> None:
    await agent.editor.call(
        "setDefinitions",
        configured(provider, agents=[{"name": "default", "permissions": {"tools": {"shell": "ask"}}}]),
    )
    await agent.start(shell("touch never"))
    await agent.session.wait_event(lambda e: e["type"] == "approvalRequested")
    assert (await agent.interrupt())["status"] == "interrupted"
    assert not (agent.workspace / "never").exists()


@pytest.mark.parametrize("event", ["userPromptSubmit", "preToolUse", "postToolUse"])
async def test_interrupt_while_a_hook_that_ignores_sigterm_runs(
    agent: Agent, provider: FakeProviderServer, event: str
) -> None:
    marker = unique(7)
    hook = {"name": "slow", "event": event, "command": f"trap '' TERM; touch hook-ran; sleep {marker}"}
    await agent.editor.call("setDefinitions", configured(provider, hooks=[hook]))
    await agent.start(shell("true"), text="a prompt the hook never passed")
    await wait_for_file(agent.workspace / "hook-ran")
    assert (await agent.interrupt())["status"] == "interrupted"
    await until(lambda: not running_with(marker))
    if event == "userPromptSubmit":  # the prompt its hook did not pass never reaches the model
        assert provider.requests_for("openai-chat") == []
        assert [item["status"] for item in await agent.session.items()] == ["withdrawn"]


async def test_interrupt_while_the_context_is_compacted(agent: Agent) -> None:
    await agent.run("true")
    agent.provider.enqueue("openai-chat", ChatStream().text("the summary so far").response(ending="hang"))
    await agent.editor.call("compactContext", {"conversationId": agent.session.id})
    agent.turns += 1
    await until(lambda: len(agent.provider.requests_for("openai-chat")) == 3)
    assert (await agent.interrupt())["status"] == "interrupted"


async def test_interrupt_while_a_sub_agent_runs_a_command_that_ignores_sigterm(
    editor: Harness, provider: FakeProviderServer, workspace: Path
) -> None:
    marker = unique(8)
    agents = [
        {"name": "lead", "subAgents": ["helper"]},
        {"name": "helper", "description": "runs things", "tools": ["shell"]},
    ]
    await editor.call("setDefinitions", configured(provider, agents=agents))
    conversation = await editor.call("createConversation", {"agentName": "lead"})
    lead = Agent(editor, provider, await Session.open(editor, conversation["id"]), workspace)
    task = json.dumps({"agent": "helper", "task": "sleep"})
    await lead.start(
        ChatStream().tool_call("c1", "subagent", [task]).finish().response(),
        shell(f"trap '' TERM; touch ready; sleep {marker}"),
    )
    await wait_for_file(workspace / "ready")
    assert (await lead.interrupt())["status"] == "interrupted"
    await until(lambda: not running_with(marker))


# The cleaner empties only its own tmpfs

CLEANER = textwrap.dedent(
    """
    import asyncio, ctypes, json, os, socket, sys
    from openvaala_lsp.tools.warm_sandbox import SPAWNER, SandboxLost, WarmSandbox

    libc = ctypes.CDLL(None, use_errno=True)

    def mount(target):
        if libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, b"mode=1777") != 0:
            sys.exit(f"no tmpfs on {target}: {os.strerror(ctypes.get_errno())}")

    def unmount(target):
        if libc.umount2(target.encode(), 0) != 0:
            sys.exit(f"cannot unmount {target}: {os.strerror(ctypes.get_errno())}")

    # /tmp is a throwaway tmpfs already: the machine's, as far as this test goes; /dev gets one too, as
    # the spawner empties /dev but for what it found there (here nothing is the machine's)
    mount("/dev")
    os.mkdir("/dev/shm")
    os.makedirs("/tmp/machine/folder")
    for name in ("/tmp/machine-file", "/tmp/machine/folder/file"):
        with open(name, "w") as file:
            file.write("the machine's")

    def machine_files():
        return sorted(os.path.join(top, name) for top, _, names in os.walk("/tmp") for name in names)

    async def case(change):
        mount("/tmp")  # the sandbox's /tmp, as bubblewrap's --tmpfs makes it
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        spawner = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", "-c", SPAWNER.read_text(), str(theirs.fileno()), pass_fds=[theirs.fileno()]
        )
        theirs.close()
        warm = WarmSandbox(("test",), spawner, ours)
        assert "ready" in (await warm.reply())[0]
        with open("/tmp/left-by-a-command", "w") as file:
            file.write("scratch")
        if change == "unmounted":
            unmount("/tmp")
        elif change == "replaced":
            mount("/tmp")
            with open("/tmp/someone-elses", "w") as file:
                file.write("not the sandbox's")
        try:
            await warm.clean()
            outcome = "cleaned"
        except SandboxLost as error:
            outcome = str(error)
        discarded = warm.lost
        warm.discard()  # done with it either way
        await asyncio.wait_for(spawner.wait(), 10)
        seen = machine_files()
        for _ in range({"kept": 1, "unmounted": 0, "replaced": 2}[change]):  # the mounts this case added
            unmount("/tmp")
        return {"outcome": outcome, "discarded": discarded, "seen": seen, "machine": machine_files()}

    async def main():
        results = {change: await case(change) for change in ("kept", "unmounted", "replaced")}
        print(json.dumps(results))

    asyncio.run(main())
    """
)

MACHINE = ["/tmp/machine-file", "/tmp/machine/folder/file"]


@pytest.fixture(scope="module")
def cleaned() -> dict[str, Any]:
    return json.loads(in_private_tmp(CLEANER, own_pids=True).strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_cleaner_empties_the_tmpfs_it_found(cleaned: dict[str, Any]) -> None:
    kept = cleaned["kept"]
    assert kept["outcome"] == "cleaned" and not kept["discarded"], kept
    assert kept["seen"] == [] and kept["machine"] == MACHINE  # what the command left is gone


@pytest.mark.parametrize("change", ["unmounted", "replaced"])
def test_the_cleaner_deletes_nothing_from_a_tmp_that_is_not_its_own(cleaned: dict[str, Any], change: str) -> None:
    result = cleaned[change]
    assert "/tmp" in result["outcome"] and result["discarded"], result
    assert result["machine"] == MACHINE
    if change == "unmounted":
        assert result["seen"] == MACHINE
    else:
        assert result["seen"] == ["/tmp/someone-elses"]
