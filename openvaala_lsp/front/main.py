"""`openvaala-lsp` in its default mode: connect the editor's stdio to the user's runtime host."""

from __future__ import annotations

import os
import sys

from openvaala_lsp.front.connect import FrontError, connect
from openvaala_lsp.front.relay import FrontExit, Relay
from openvaala_lsp.rundir import UnsafeRunDir, ensure_private, run_dir
from openvaala_lsp.wire import hello as wire_hello

MODULES_FILE = "OPENVAALA_FRONT_MODULES_FILE"  # tests: where to list the modules the front loaded


def main() -> int:
    editor_in, editor_out = 0, os.dup(1)
    os.dup2(2, 1)  # a stray print can never corrupt the protocol stream
    try:
        run = run_dir()
        ensure_private(run)
        hello = wire_hello.front_hello()
        Relay(run, hello, connect(run, hello), editor_in, editor_out).run()
    except FrontExit as stop:
        code = stop.code
        if str(stop):
            sys.stderr.write(f"openvaala-lsp: {stop}" + "\n")
    except (UnsafeRunDir, FrontError, OSError) as exc:
        sys.stderr.write(f"openvaala-lsp: {exc}" + "\n")
        code = 1
    except KeyboardInterrupt:
        code = 130
    if modules_file := os.environ.get(MODULES_FILE):
        with open(modules_file, "w") as out:
            out.write("\n".join(sorted(sys.modules)))
    return code
