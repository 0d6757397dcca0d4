"""What the tests of LSP editors with no plugin of ours share (tests/e2e/test_plain_neovim.py,
test_eglot.py): README's snippets, which are the editors' configuration, and the environment the
editor starts openvaala-lsp in."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from turn_helpers import API_KEY

README = Path(__file__).parents[1] / "README.md"
BIN = str(Path(sys.executable).parent)


def readme_snippet(language: str) -> str:
    """The `language` code block of README's section "Any LSP editor"."""
    section = README.read_text().split("\n## Any LSP editor\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(rf"\n```{language}\n(.*?)\n```\n", section, re.DOTALL)
    return block + "\n"


def editor_environment(home: Path, **extra: str) -> dict[str, str]:
    """The editor's environment: openvaala-lsp as installed on its PATH, a home of the test's own."""
    return {
        **os.environ,
        "PATH": os.pathsep.join([BIN, os.environ.get("PATH", "")]),
        "OPENVAALA_HOME": str(home),
        "OPENVAALA_HOST_IDLE_SECONDS": "1",
        "FAKE_API_KEY": API_KEY,
        **extra,
    }
