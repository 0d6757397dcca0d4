"""The frame-aware relay between the editor's stdio and the host socket, and the host restart.

Whole frames only, so a restart never leaves half a message on either side. Editor->host messages
are json-parsed (low volume); host->editor frames only when they mention an id (responses, server
requests) or close a subscription. A dead host is noticed at EOF, which the kernel delivers within
milliseconds of its death; the restart happens at one place, the top of the loop.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import select
import socket
import sys
import time
from typing import Any, NoReturn

from openvaala_lsp.front.connect import HostLink, connect, host_log_path
from openvaala_lsp.front.session import DROP, EXIT, FORWARD, SUBSCRIPTION_CLOSED, EditorSession, runtime_stopped
from openvaala_lsp.rundir import RunDir
from openvaala_lsp.wire import framing

RECV_SIZE = 65536  # above glibc's 128 KiB mmap threshold every recv would map and unmap its buffer
MAX_RESTARTS = 3
RESTART_WINDOW = 60.0
REPLAY_ID = "openvaala-front-replay-{}"
LOST = "the openvaala runtime host stopped"
_CLOSED = SUBSCRIPTION_CLOSED.encode()


class FrontExit(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code


class Relay:
    def __init__(self, run: RunDir, hello: dict[str, Any], link: HostLink, editor_in: int, editor_out: int) -> None:
        self.run_dir = run
        self.hello = hello
        self.editor_in = editor_in
        self.editor_out = editor_out
        self.session = EditorSession()
        self.editor_frames = framing.FrameReader(framing.max_message_bytes())
        self.host_frames = framing.FrameReader()  # the host is trusted: no message limit that way
        self.queue: collections.deque[bytes] = collections.deque()  # bodies read, not yet sent
        self.poller = select.poll()
        self.poller.register(editor_in, select.POLLIN)
        self.link: HostLink | None = None
        self.broken = False  # the host is gone; restart at the top of the loop
        self.replay_id: str | None = None
        self.replay_ids = itertools.count(1)
        self.restarts: list[float] = []
        self._attach(link)

    def run(self) -> NoReturn:
        """Relays until the editor leaves (FrontExit carries the exit code)."""
        try:
            while True:
                if self.broken:
                    self._restart()
                elif self._pump_editor():
                    # reading the editor only queues, so a host that breaks here is restarted next round
                    for fd, _ in self.poller.poll():
                        if fd == self.editor_in:
                            self._read_editor()
                        elif self.link is not None and fd == self.link.sock.fileno():
                            self._read_host()
        finally:
            if self.link is not None:
                self.link.sock.close()

    # editor -> host

    def _read_editor(self) -> None:
        try:
            data = os.read(self.editor_in, RECV_SIZE)
        except BlockingIOError:
            return
        if not data:
            raise FrontExit(0)  # the editor closed our stdin
        for body in self.editor_frames.feed(data):
            if isinstance(body, framing.Refused):
                self._write_editor([body.response()])  # bad framing or over the limit: the host never sees it
            else:
                self.queue.append(body)

    def _pump_editor(self) -> bool:
        """Sends queued editor frames unless a replay is in progress; False if the host broke."""
        while self.queue and self.replay_id is None and not self.broken:
            body = self.queue.popleft()
            raw = framing.frame_body(body)
            message, action = self._note_editor(raw, body)
            if action == DROP:
                continue
            if self.link is not None:
                self._send(raw)
            elif isinstance(message, dict) and "method" in message and isinstance(message.get("id"), (int, str)):
                self._write_editor([runtime_stopped(message["id"], f"{LOST} after shutdown")])
            if action == EXIT:
                raise FrontExit(0 if self.session.shutdown else 1)
        return not self.broken

    def _note_editor(self, raw: bytes, body: bytes) -> tuple[Any, str]:
        """What the session learns from an editor message. Malformed JSON goes to the host, which
        answers it; and no message, however odd, may stop the front: a slip in this bookkeeping
        costs at most what it would have remembered."""
        try:
            message = framing.decode(body)
        except (ValueError, RecursionError):
            message = None
        try:
            return message, self.session.note_editor(raw, message)
        except Exception as exc:
            sys.stderr.write(f"openvaala-lsp: ignoring what could not be noted of an editor message: {exc!r}\n")
            return message, FORWARD

    def _send(self, data: bytes) -> None:
        if self.link is None or self.broken:
            return  # dropped: requests among it are still pending and get their error at restart
        try:
            self.link.sock.sendall(data)
        except OSError:
            self.broken = True

    # host -> editor

    def _read_host(self) -> None:
        assert self.link is not None
        try:
            data = self.link.sock.recv(RECV_SIZE, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.broken = True
            return
        self._from_host(data)

    def _from_host(self, data: bytes) -> None:
        out: list[bytes] = []
        for body in self.host_frames.feed(data):
            if isinstance(body, framing.Refused):
                self.broken = True  # the host speaks LSP framing or nothing
                return
            if b'"id"' in body or _CLOSED in body:
                try:
                    message = json.loads(body)
                except ValueError:
                    message = None
                if isinstance(message, dict):
                    if self.replay_id is not None and message.get("id") == self.replay_id and "method" not in message:
                        self._replayed(message)
                        continue
                    self.session.note_host(message)
            out += (framing.header(len(body)), body)
        if out:
            self._write_raw(b"".join(out))

    def _write_editor(self, messages: list[dict[str, Any]]) -> None:
        self._write_raw(b"".join(framing.frame(message) for message in messages))

    def _write_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.editor_out, view) :]
            except BlockingIOError:  # the editor handed us a non-blocking pipe
                select.select([], [self.editor_out], [])
            except BrokenPipeError:
                raise FrontExit(0) from None  # the editor is gone

    # restart

    def _attach(self, link: HostLink) -> None:
        self.link = link
        self.broken = False
        self.host_frames.reset()
        self.poller.register(link.sock, select.POLLIN)
        if link.leftover:
            self._from_host(link.leftover)

    def _restart(self) -> None:
        assert self.link is not None
        self.poller.unregister(self.link.sock)
        self.link.sock.close()
        self.link = None
        self.broken = False
        self.replay_id = None
        self.poller.register(self.editor_in, select.POLLIN)
        lost = self.session.host_lost(LOST)
        if self.session.shutdown:  # the editor is leaving: answer it without a host until `exit`
            self._write_editor(lost)
            return
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < RESTART_WINDOW] + [now]
        if len(self.restarts) > MAX_RESTARTS:
            self._write_editor(lost)
            raise FrontExit(
                1, f"{LOST} {len(self.restarts)} times within {RESTART_WINDOW:.0f} s; giving up (see {host_log_path()})"
            )
        notice = {"type": 2, "message": f"{LOST}; starting a new one. Requests in flight failed."}
        self._write_editor([*lost, {"jsonrpc": "2.0", "method": "window/logMessage", "params": notice}])
        self._attach(connect(self.run_dir, self.hello))
        request, frames = self.session.replay(REPLAY_ID.format(next(self.replay_ids)))
        if request is not None:
            self.replay_id = request["id"]
            self.poller.unregister(self.editor_in)  # the editor waits until the session is back
            self._send(framing.frame(request))
        for raw in frames:
            self._send(raw)

    def _replayed(self, answer: dict[str, Any]) -> None:
        if "error" in answer:
            raise FrontExit(1, f"the restarted runtime host refused the editor's initialize: {answer['error']}")
        self.replay_id = None
        if self.session.initialized_frame is not None:
            self._send(self.session.initialized_frame)
        self.poller.register(self.editor_in, select.POLLIN)
