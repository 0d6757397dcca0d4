"""docs/PROTOCOL.md, the protocol reference users read, against what this build speaks: every method
it lists is registered with its schemas (or marked as not in this build yet), every registered method
and notification is in it, and its error table is the codes the server sends."""

from __future__ import annotations

import re
from pathlib import Path

from openvaala_lsp.protocol import PROTOCOL_VERSION, methods
from openvaala_lsp.protocol.codes import CODES

DOC = Path(__file__).resolve().parents[1] / "docs" / "PROTOCOL.md"
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
NOT_YET = "*(0.4, not in this build yet)*"


def section(number: int) -> str:
    return DOC.read_text().split(f"## {number}.")[1].split(f"## {number + 1}.")[0]


def test_every_method_listed_is_built_with_its_schemas_or_marked_not_yet() -> None:
    rows = re.findall(r"^\| `(openvaala/\w+)`( \*\(0\.4, not in this build yet\)\*)? \|", section(2), re.MULTILINE)
    assert len(rows) >= 44
    for method, marked in rows:
        if marked:
            assert method not in methods.REQUESTS, f"{method} is built now: take its mark off in docs/PROTOCOL.md"
            continue
        assert method in methods.REQUESTS, f"{method} is in docs/PROTOCOL.md but not registered"
        short = method.removeprefix(methods.PREFIX)
        assert (SCHEMAS / "requests" / f"{short}.params.json").is_file()
        assert (SCHEMAS / "requests" / f"{short}.result.json").is_file()
    assert set(methods.REQUESTS) <= {method for method, _ in rows}, "a registered method docs/PROTOCOL.md lacks"


def test_every_notification_and_server_request_is_described() -> None:
    described = set(re.findall(r"`(openvaala/\w+)`", section(3)))
    assert {*methods.NOTIFICATIONS, *methods.SERVER_REQUESTS} <= described


def test_the_error_table_is_what_the_server_sends() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| (-\d+) \|", section(5), re.MULTILINE))
    sent = {kind: str(code) for kind, code in CODES.items()}
    assert {kind: code for kind, code in rows.items() if kind in sent} == sent
    assert set(rows) == set(sent), "every kind the table lists is sent, and every kind sent is listed"


def test_it_says_which_version_this_build_speaks() -> None:
    assert f"**This build** speaks protocol {PROTOCOL_VERSION}" in DOC.read_text()
