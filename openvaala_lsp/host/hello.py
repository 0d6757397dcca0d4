"""The host's side of the hello: check it, then accept the front, refuse it, or make way for it.

Version policy: equal versions are served. An older front is refused with a message for the user
(its editor must restart its language server). A newer front makes this host drain: it stops
listening at once and exits once its runtime is idle, so the newer front can start its own host.
"""

from __future__ import annotations

import os
from typing import Any

from openvaala_lsp.wire import hello as wire_hello

ACCEPT = "accept"
REFUSE = "refuse"
DRAIN = "drain"


def problem(hello: Any) -> str | None:
    """What makes `hello` unusable, or None."""
    if not isinstance(hello, dict) or hello.get("openvaala") != "hello":
        return "not an openvaala hello"
    if not isinstance(hello.get("protocol"), int) or not isinstance(hello.get("version"), str):
        return "no protocol number or version"
    cwd = hello.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        return "cwd is not an absolute path"
    env = hello.get("env")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return "env is not a map of strings"
    return None


def judge(hello: Any, version: str, *, draining: bool) -> tuple[str, dict[str, Any]]:
    """The verdict and the answer line for the front."""
    answer: dict[str, Any] = {
        "ok": False,
        "protocol": wire_hello.HELLO_PROTOCOL,
        "version": version,
        "pid": os.getpid(),
    }
    if (trouble := problem(hello)) is not None:
        message = f"the runtime host cannot read the hello: {trouble}"
        return REFUSE, {**answer, "reason": wire_hello.BAD_HELLO, "message": message}
    if draining:
        return REFUSE, {**answer, "reason": wire_hello.DRAINING, "message": "the runtime host is stopping"}
    front = hello["version"]
    order = wire_hello.compare((hello["protocol"], front), (wire_hello.HELLO_PROTOCOL, version))
    if order < 0:
        message = (
            f"openvaala-lsp {front} is older than the running openvaala runtime host {version} (pid {os.getpid()}); "
            "restart the editor's openvaala language server so that it runs the installed version"
        )
        return REFUSE, {**answer, "reason": wire_hello.OLDER_FRONT, "message": message}
    if order > 0:
        message = f"the runtime host {version} is older than openvaala-lsp {front}; it stops to make way"
        return DRAIN, {**answer, "reason": wire_hello.DRAINING, "message": message}
    return ACCEPT, {**answer, "ok": True}
