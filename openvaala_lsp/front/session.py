"""What the front must remember of the editor's LSP session to survive a host restart: requests in
flight, the answered `initialize` (with folder changes applied), `initialized`, subscription ids
and the ids of the host's own requests. No I/O here."""

from __future__ import annotations

from typing import Any

FORWARD = "forward"
DROP = "drop"
EXIT = "exit"

RUNTIME_STOPPED = -32014  # PROTOCOL.md §5: the code of kind runtimeStopped
SUBSCRIPTION_CLOSED = "openvaala/subscriptionClosed"
SUBSCRIBE_PREFIX = "openvaala/subscribe"
UNSUBSCRIBE = "openvaala/unsubscribe"


def _id_of(message: dict[str, Any]) -> int | str | None:
    msg_id = message.get("id")
    return msg_id if isinstance(msg_id, (int, str)) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _subscription_id(message: dict[str, Any]) -> str | None:
    sub_id = _dict(message.get("params")).get("subscriptionId")
    return sub_id if isinstance(sub_id, str) else None


def runtime_stopped(msg_id: Any, message: str) -> dict[str, Any]:
    error = {"code": RUNTIME_STOPPED, "message": message, "data": {"kind": "runtimeStopped"}}
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


class EditorSession:
    def __init__(self) -> None:
        self.pending: dict[int | str, str] = {}  # editor request id -> method, until the host answers
        self.initialize_requests: dict[int | str, tuple[bytes, dict[str, Any]]] = {}  # unanswered: frame, params
        self.initialize_params: dict[str, Any] | None = None  # of the answered initialize
        self.initialized_frame: bytes | None = None
        self.subscriptions: set[str] = set()
        self.host_requests: set[int | str] = set()  # server->client requests of the current host
        self.shutdown = False

    def note_editor(self, raw: bytes, message: Any) -> str:
        """Learns from an editor->host message; says whether to forward it, drop it or exit after it."""
        if not isinstance(message, dict):
            return FORWARD  # the host answers the parse error
        method = message.get("method")
        msg_id = _id_of(message)
        if "method" in message and not isinstance(method, str):
            return FORWARD  # not a request the host can run: it answers invalidRequest
        if method is None:
            if msg_id is not None and ("result" in message or "error" in message):  # an answer to a host request
                if msg_id not in self.host_requests:
                    return DROP  # asked by a host that has died since; the new one never asked
                self.host_requests.discard(msg_id)
            return FORWARD
        params = _dict(message.get("params"))
        if "id" in message:
            if msg_id is not None:
                self.pending[msg_id] = method
            if method == "initialize" and msg_id is not None:
                self.initialize_requests[msg_id] = (raw, params)
            elif method == "shutdown":
                self.shutdown = True
            elif method == UNSUBSCRIBE and (sub_id := _subscription_id(message)) is not None:
                self.subscriptions.discard(sub_id)
        elif method == "initialized":
            self.initialized_frame = raw
        elif method == "workspace/didChangeWorkspaceFolders":
            self._change_folders(_dict(params.get("event")))
        elif method == "exit":
            return EXIT
        return FORWARD

    def note_host(self, message: dict[str, Any]) -> None:
        """Learns from a host->editor message that mentions an id or closes a subscription."""
        msg_id = _id_of(message)
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message and msg_id is not None:
                self.host_requests.add(msg_id)
            elif method == SUBSCRIPTION_CLOSED and (sub_id := _subscription_id(message)) is not None:
                self.subscriptions.discard(sub_id)
            return
        if msg_id is None or (asked := self.pending.pop(msg_id, None)) is None:
            return
        result = message.get("result")
        if asked == "initialize":
            request = self.initialize_requests.pop(msg_id, None)
            if request is not None and "result" in message:
                self.initialize_params = request[1]
        elif asked.startswith(SUBSCRIBE_PREFIX) and isinstance(sub_id := _dict(result).get("subscriptionId"), str):
            self.subscriptions.add(sub_id)

    def _change_folders(self, event: dict[str, Any]) -> None:
        if self.initialize_params is None:
            return
        removed = {uri for folder in _list(event.get("removed")) if isinstance(uri := _dict(folder).get("uri"), str)}
        folders = _list(self.initialize_params.get("workspaceFolders"))
        kept = [folder for folder in folders if _dict(folder).get("uri") not in removed]
        added = [folder for folder in _list(event.get("added")) if isinstance(folder, dict)]
        self.initialize_params["workspaceFolders"] = kept + added

    def host_lost(self, why: str) -> list[dict[str, Any]]:
        """Messages for the editor now that the host is gone: an answer to every request in flight (but
        an unanswered first `initialize`, which is sent again) and `subscriptionClosed` for every
        subscription, so the editor resubscribes."""
        out: list[dict[str, Any]] = []
        resend_initialize = self.initialize_params is None
        for msg_id, method in list(self.pending.items()):
            if method == "initialize" and resend_initialize:
                continue
            del self.pending[msg_id]
            self.initialize_requests.pop(msg_id, None)
            if method == "shutdown":  # the session is over either way
                out.append({"jsonrpc": "2.0", "id": msg_id, "result": None})
            else:
                out.append(runtime_stopped(msg_id, f"{why}; the request was not completed"))
        reason = {"kind": "runtimeStopped", "message": f"{why}; subscribe again"}
        for sub_id in sorted(self.subscriptions):
            params = {"subscriptionId": sub_id, "reason": reason}
            out.append({"jsonrpc": "2.0", "method": SUBSCRIPTION_CLOSED, "params": params})
        self.subscriptions.clear()
        self.host_requests.clear()
        return out

    def replay(self, replay_id: str) -> tuple[dict[str, Any] | None, list[bytes]]:
        """What a new host must hear before the editor's next message: the answered `initialize` under
        a private id (its answer is swallowed, then `initialized` follows), or else the first
        `initialize` frames still waiting for their answer."""
        if self.initialize_params is not None:
            request = {"jsonrpc": "2.0", "id": replay_id, "method": "initialize", "params": self.initialize_params}
            return request, []
        return None, [raw for raw, _ in self.initialize_requests.values()]
