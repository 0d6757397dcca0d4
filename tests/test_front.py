"""The front's pure parts: framing, the version policy, the run directory and what it remembers of
the editor's session for a host restart."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from openvaala_lsp.front.session import DROP, EXIT, FORWARD, EditorSession
from openvaala_lsp.host import hello
from openvaala_lsp.rundir import MAX_SOCKET_PATH, UnsafeRunDir, ensure_private, run_dir
from openvaala_lsp.wire import framing, hello as hostwire


def body(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def test_frames_split_across_reads_and_batched_in_one() -> None:
    first, second = framing.frame({"id": 1}), framing.frame({"id": 2, "text": "é" * 10})
    reader = framing.FrameReader()
    stream = first + second
    bodies = [f for i in range(0, len(stream), 7) for f in reader.feed(stream[i : i + 7])]
    assert [json.loads(b)["id"] for b in bodies] == [1, 2]  # type: ignore[arg-type]
    body_of = {raw: raw.partition(b"\r\n\r\n")[2] for raw in (first, second)}
    assert reader.feed(first + second + first[:5]) == [body_of[first], body_of[second]]
    assert reader.feed(first[5:]) == [body_of[first]]


def test_frame_headers_are_case_insensitive_and_checked() -> None:
    assert framing.FrameReader().feed(b"content-length: 2\r\nContent-Type: x\r\n\r\n{}") == [b"{}"]
    refused = framing.FrameReader().feed(b"Content-Type: x\r\n\r\n{}")
    assert [(r.kind, r.msg_id) for r in refused if isinstance(r, framing.Refused)] == [("parseError", None)]
    refused = framing.FrameReader().feed(b"x" * 10000)
    assert [r.kind for r in refused if isinstance(r, framing.Refused)] == ["parseError"]


def test_version_order() -> None:
    assert hostwire.compare((1, "0.2.0"), (1, "0.2.0")) == 0
    assert hostwire.compare((1, "0.10.0"), (1, "0.9.3")) == 1
    assert hostwire.compare((1, "0.2.0"), (1, "0.2.0rc1")) == 1
    assert hostwire.compare((1, "0.2.0.dev1"), (1, "0.2.0")) == -1
    assert hostwire.compare((1, "0.2.0+a"), (1, "0.2.0+b")) == -1  # never equal when the strings differ
    assert hostwire.compare((1, "9.0.0"), (2, "0.1.0")) == -1  # the hello protocol ranks first


def test_host_verdicts() -> None:
    good = {"openvaala": "hello", "protocol": hostwire.HELLO_PROTOCOL, "version": "0.2.0", "cwd": "/", "env": {}}
    assert hello.judge(good, "0.2.0", draining=False)[0] == hello.ACCEPT
    verdict, answer = hello.judge({**good, "version": "0.1.0"}, "0.2.0", draining=False)
    assert (verdict, answer["reason"]) == (hello.REFUSE, hostwire.OLDER_FRONT)
    assert hello.judge({**good, "version": "0.3.0"}, "0.2.0", draining=False)[0] == hello.DRAIN
    assert hello.judge(good, "0.2.0", draining=True)[1]["reason"] == hostwire.DRAINING
    for broken in ({**good, "env": {"A": 1}}, {**good, "cwd": "relative"}, {"protocol": 1}, [1]):
        assert hello.judge(broken, "0.2.0", draining=False)[1]["reason"] == hostwire.BAD_HELLO


def test_run_dir_choice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_dir({"OPENVAALA_HOME": str(home)}).socket == str(home / "run" / "host.sock")
    deep = tmp_path / ("d" * 120)
    short = run_dir({"OPENVAALA_HOME": str(deep)})
    assert short.path.startswith(f"/tmp/openvaala-{os.geteuid()}") and len(short.socket) <= MAX_SOCKET_PATH
    assert short.path == run_dir({"OPENVAALA_HOME": str(deep)}).path  # one home, one directory
    tmp_path.chmod(0o700)
    assert run_dir({"XDG_RUNTIME_DIR": str(tmp_path)}).path == str(tmp_path / "openvaala")
    state = tmp_path / "state"
    assert run_dir({"XDG_STATE_HOME": str(state)}).path == str(state / "openvaala" / "run")
    # the rest of the rules: tests/adversarial/test_private_files.py


def test_run_dir_must_be_a_private_directory(tmp_path: Path) -> None:
    run = run_dir({"OPENVAALA_HOME": str(tmp_path / "home")})
    ensure_private(run)
    assert os.stat(run.path).st_mode & 0o777 == 0o700
    os.rmdir(run.path)
    os.symlink(tmp_path, run.path)
    with pytest.raises(UnsafeRunDir, match="not a plain directory"):
        ensure_private(run)


def answered(session: EditorSession, msg_id: Any, result: Any) -> None:
    session.note_host({"jsonrpc": "2.0", "id": msg_id, "result": result})


def test_session_remembers_initialize_and_folder_changes() -> None:
    session = EditorSession()
    folder_a = {"uri": "file:///a", "name": "a"}
    params = {"processId": 1, "capabilities": {}, "workspaceFolders": [folder_a]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    assert session.note_editor(body(request), request) == FORWARD
    assert session.replay("r")[0] is None  # not answered yet: the original is sent again instead
    assert session.replay("r")[1] == [body(request)]
    answered(session, 1, {"capabilities": {}})
    initialized = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    session.note_editor(body(initialized), initialized)
    change = {
        "jsonrpc": "2.0",
        "method": "workspace/didChangeWorkspaceFolders",
        "params": {"event": {"added": [{"uri": "file:///b", "name": "b"}], "removed": [folder_a]}},
    }
    session.note_editor(body(change), change)
    replay, frames = session.replay("openvaala-front-replay-1")
    assert replay is not None and frames == []
    assert replay["id"] == "openvaala-front-replay-1"
    assert replay["params"]["workspaceFolders"] == [{"uri": "file:///b", "name": "b"}]
    assert session.initialized_frame == body(initialized)


def test_session_fails_in_flight_requests_and_closes_subscriptions() -> None:
    session = EditorSession()
    for msg_id, method in ((1, "openvaala/subscribeConversation"), (2, "openvaala/subscribeSession")):
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}}
        session.note_editor(body(request), request)
        answered(session, msg_id, {"subscriptionId": f"sub_{msg_id}"})
    closed = {"jsonrpc": "2.0", "method": "openvaala/subscriptionClosed", "params": {"subscriptionId": "sub_2"}}
    session.note_host(closed)
    slow = {"jsonrpc": "2.0", "id": "x", "method": "openvaala/listConversations", "params": {}}
    session.note_editor(body(slow), slow)
    out = session.host_lost("gone")
    assert out[0]["id"] == "x" and out[0]["error"]["code"] == -32014
    assert out[0]["error"]["data"] == {"kind": "runtimeStopped"}
    assert [m["params"]["subscriptionId"] for m in out[1:]] == ["sub_1"]
    assert out[1]["params"]["reason"]["kind"] == "runtimeStopped"
    assert session.pending == {} and session.subscriptions == set()


def test_session_drops_answers_meant_for_a_dead_host_and_sees_exit() -> None:
    session = EditorSession()
    session.note_host({"jsonrpc": "2.0", "id": "q1", "method": "workspace/workspaceFolders"})
    reply = {"jsonrpc": "2.0", "id": "q1", "result": []}
    assert session.note_editor(body(reply), reply) == FORWARD
    session.note_host({"jsonrpc": "2.0", "id": "q2", "method": "workspace/workspaceFolders"})
    session.host_lost("gone")
    late = {"jsonrpc": "2.0", "id": "q2", "result": []}
    assert session.note_editor(body(late), late) == DROP
    assert session.note_editor(b"{not json", None) == FORWARD
    shutdown = {"jsonrpc": "2.0", "id": 9, "method": "shutdown"}
    session.note_editor(body(shutdown), shutdown)
    assert session.shutdown
    assert session.note_editor(b"", {"jsonrpc": "2.0", "method": "exit"}) == EXIT
