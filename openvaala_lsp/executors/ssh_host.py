"""What an ssh executor's host has, asked once per connection with one exec request: whether its
`bwrap` starts (the remote sandbox), and which of the credential paths openvaala protects here
(`protected.CREDENTIAL_PATHS`, `~` being the remote user's home) exist there, so that the sandbox
shows them empty and the file tools refuse them. The host answers in lines `d PATH`, `f PATH` and
one `sandbox ...`; whatever else it says is ignored, and at most `MAX_ANSWER` bytes are kept."""

from __future__ import annotations

import posixpath
import shlex

from openvaala_lsp.executors.ssh_link import HostFacts, SshLink
from openvaala_lsp.executors.ssh_process import BWRAP_BASE, exports, run_remote
from openvaala_lsp.tools.protected import CREDENTIAL_PATHS

PROBE_TIMEOUT = 10.0
MAX_ANSWER = 64 * 1024


def probe_script(environment: tuple[tuple[str, str], ...]) -> str:
    # `~/x` as "$HOME"/x (quoted, but for the globs of the list)
    spelled = [f'"$HOME"/{shlex.quote(path[2:])}' if path.startswith("~/") else path for path in CREDENTIAL_PATHS]
    base = " ".join(shlex.quote(arg) for arg in BWRAP_BASE)
    return (
        f"{exports(environment)}"
        f"for p in {' '.join(spelled)}; do "
        'if [ -d "$p" ] && [ ! -L "$p" ]; then printf "d %s\\n" "$p"; '
        'elif [ -e "$p" ]; then printf "f %s\\n" "$p"; fi; done; '
        "if ! command -v bwrap >/dev/null 2>&1; then echo 'sandbox no bwrap on its PATH'; "
        f"elif out=$(bwrap {base} -- /bin/true 2>&1); then echo 'sandbox ok'; "
        'else printf "sandbox bwrap cannot start: %s\\n" "$(printf %s "$out" | head -c 300 | tr "\\n" " ")"; fi'
    )


def parse_answer(answer: str) -> HostFacts:
    dirs: list[str] = []
    files: list[str] = []
    sandbox, problem = False, "it did not say whether bwrap starts"
    for line in answer[:MAX_ANSWER].splitlines():
        kind, _, rest = line.partition(" ")
        if kind in ("d", "f") and rest.startswith("/"):
            (dirs if kind == "d" else files).append(posixpath.normpath(rest))
        elif kind == "sandbox":
            sandbox, problem = rest == "ok", rest
    return HostFacts(
        sandbox=sandbox, sandbox_problem=problem, credential_dirs=tuple(dirs), credential_files=tuple(files)
    )


async def host_facts(link: SshLink) -> HostFacts:
    """The host's facts, probed at the first need on each connection."""
    if link.facts is not None:
        return link.facts
    argv = ["/bin/sh", "-c", probe_script(link.target.environment)]
    result = await run_remote(link, argv, workdir="/", time_limit=PROBE_TIMEOUT, read_limit=MAX_ANSWER)
    link.facts = parse_answer(result.output.render(MAX_ANSWER))
    return link.facts
