"""The method table against the runtime: every request binds to a runtime method taking `(client,
params)` of the table's params type and returning its result type, except the methods not built yet,
which are listed here by name (the server answers them methodNotFound and does not advertise them).
And the naming rule of the wire types (schemas/README.md, Names)."""

from __future__ import annotations

import inspect
import typing

from openvaala_lsp.definitions import Definitions
from openvaala_lsp.model import Conversation, Page, Session
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.methods import PREFIX, REQUESTS
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.core import Runtime

NOT_BUILT: set[str] = set()
# results that are shapes of PROTOCOL.md section 4 rather than <Method>Result
SHAPES = {
    Conversation,
    Session,
    Page,
    api.SessionDetails,
    api.SessionContextUsage,
    api.ModelList,
    api.WorkspaceDirectories,
    api.TerminalWorkspace,
    api.EmptyResult,
}


def pascal(method: str) -> str:
    name = method.removeprefix(PREFIX)
    return name[:1].upper() + name[1:]


def test_every_method_binds_to_a_runtime_method_of_the_right_types() -> None:
    for spec in REQUESTS.values():
        method = getattr(Runtime, spec.runtime, None)
        if spec.method in NOT_BUILT:
            assert method is None, f"{spec.method} is built now: take it out of NOT_BUILT"
            continue
        assert method is not None, f"{spec.method}: Runtime.{spec.runtime} is missing"
        assert inspect.iscoroutinefunction(inspect.unwrap(method)), spec.method
        hints = typing.get_type_hints(inspect.unwrap(method))
        assert list(inspect.signature(method).parameters) == ["self", "client", "params"], spec.method
        assert hints["client"] is Client, spec.method
        assert hints["params"] is spec.params, spec.method
        assert hints["return"] == spec.result, spec.method


def test_params_and_results_follow_the_naming_rule() -> None:
    seen: dict[type, str] = {}
    for spec in REQUESTS.values():
        if spec.method == PREFIX + "setDefinitions":
            assert spec.params is Definitions  # the one exception: PROTOCOL.md names its params
        else:
            assert spec.params.__name__ == pascal(spec.method) + "Params", spec.method
        assert spec.params not in seen, f"{spec.method} shares params with {seen.get(spec.params)}"
        seen[spec.params] = spec.method
        result = typing.get_origin(spec.result) or spec.result
        assert result in SHAPES or result.__name__ == pascal(spec.method) + "Result", spec.method


def test_the_advertised_methods_are_the_built_ones() -> None:
    built = {spec.method for spec in REQUESTS.values() if hasattr(Runtime, spec.runtime)}
    assert built == set(REQUESTS) - NOT_BUILT
