"""The `shell` tool: one `/bin/sh -c` command per call, in its own process group."""

from __future__ import annotations

import functools
import os
import signal
from typing import Any

import attrs

from openvaala_lsp.tools import sandbox
from openvaala_lsp.tools.base import STOP_MARGIN, ToolContext, ToolOutput
from openvaala_lsp.tools.common import LocalTool, ToolFailure
from openvaala_lsp.tools.git_guard import guarded_environment
from openvaala_lsp.tools.paths import resolve_path
from openvaala_lsp.tools.process import Launch, ProcessResult, run_process_group, start_process
from openvaala_lsp.tools.truncate import DEFAULT_MAX_OUTPUT, DEFAULT_READ_LIMIT

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
SHELL = "/bin/sh"


def status_line(exit_code: int | None, timed_out: bool, timeout_ms: int) -> str:
    if timed_out:
        return f"[timed out after {timeout_ms} ms; the command and every process it started were killed]"
    if exit_code is None:
        return (
            "[its exit code is unknown: the sandbox it ran in stopped answering, and was ended with every "
            "process the command left]"
        )
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"[killed by {name}]"
    return f"[exit code {exit_code}]"


def _working_directory(workdir: str | None, context: ToolContext) -> str:
    directory = resolve_path(workdir, context) if workdir else context.directory
    if not os.path.isdir(directory):
        raise ToolFailure(f"working directory does not exist or is not a directory: {workdir or directory}")
    return directory


class ShellTool(LocalTool):
    NAME = "shell"
    DESCRIPTION = (
        "Run a shell command with /bin/sh -c and return its combined stdout and stderr (in the order written) "
        "followed by a status line such as '[exit code 0]'. A non-zero exit code is reported, not treated as a "
        "failure.\n"
        "- Each call is a fresh shell: `cd`, variables and aliases do not carry over. Use `workdir` (a directory "
        "inside the workspace; default: the workspace directory) instead of `cd`, or chain with `&&`.\n"
        "- stdin is empty (/dev/null): interactive prompts fail at once, so pass flags like `-y` or "
        "`--no-pager`.\n"
        "- The environment is the user's configured environment, not the runtime's, without variables that hold "
        "secrets (tokens, keys, passwords); ask the user when a command needs one.\n"
        f"- timeout_ms defaults to {DEFAULT_TIMEOUT_MS} and may be raised to {MAX_TIMEOUT_MS}; on timeout the "
        "command and all processes it started are killed, whatever they do to their signals or the sandbox.\n"
        f"- Long output is cut to about {DEFAULT_MAX_OUTPUT} characters: the start and the end are kept with "
        "'[... N lines / M bytes omitted ...]' in between. Redirect to a file and read parts of it, or filter "
        "with grep/head/tail, when you need everything.\n"
        "- Background jobs that still write to the output when the command ends are stopped. To leave a "
        "process running outside the sandbox, detach its output: `nohup server > server.log 2>&1 &`.\n"
        "- Unless the user turned it off, commands run in a sandbox: they may read everything but credentials "
        "and openvaala's own files, write only the workspace and /tmp (a private one), with no network, and "
        "every process they start ends with them. What configures the agent (.openvaala/, .agents/, .claude/, "
        ".git/hooks, .git/config) is read-only there. A command that needs more fails there; run it again "
        "with `outside_sandbox: true` and a `justification`, and the user is asked.\n"
        "- Prefer the read_file, write_file, edit, glob and grep tools for reading, changing and finding files."
    )
    PARAMETERS = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command line for /bin/sh -c."},
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
                "default": DEFAULT_TIMEOUT_MS,
                "description": f"Milliseconds before the command is killed (default {DEFAULT_TIMEOUT_MS}).",
            },
            "workdir": {
                "type": "string",
                "description": "Directory to run in, absolute or relative to the workspace directory.",
            },
            "outside_sandbox": {
                "type": "boolean",
                "default": False,
                "description": "Run outside the sandbox, with the user's full rights and the network. The user is "
                "asked first; use it only when the command needs what the sandbox forbids (the network, "
                "writing outside the workspace) and say why in `justification`.",
            },
            "justification": {"type": "string", "description": "Why the command must leave the sandbox."},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    def __init__(self, *, max_output: int = DEFAULT_MAX_OUTPUT, read_limit: int = DEFAULT_READ_LIMIT) -> None:
        super().__init__()
        self.max_output = max_output
        self.read_limit = max(read_limit, max_output)

    def time_limit(self, arguments: dict[str, Any]) -> float:
        timeout_ms = arguments.get("timeout_ms", DEFAULT_TIMEOUT_MS)
        if not isinstance(timeout_ms, int) or not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
            timeout_ms = DEFAULT_TIMEOUT_MS  # refused at once anyway
        return timeout_ms / 1000 + STOP_MARGIN

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        workdir = _working_directory(arguments.get("workdir"), context)
        if context.guard_git:  # the user did not see this call: git runs nothing its config names
            guarded = await guarded_environment(context.environment, workdir, arguments["command"])
            context = attrs.evolve(context, environment=guarded)
        timeout_ms: int = arguments["timeout_ms"]
        argv = [SHELL, "-c", arguments["command"]]
        launch: Launch = start_process
        if context.sandbox is not None and context.warm is not None:
            launch = functools.partial(context.warm.launch, context.sandbox)
        elif context.sandbox is not None:
            launch = functools.partial(sandbox.start, context.sandbox)
        for attempt in range(1, sandbox.SETUP_ATTEMPTS + 1):
            try:
                result = await run_process_group(
                    argv,
                    cwd=workdir,
                    env=context.environment,
                    time_limit=timeout_ms / 1000,
                    read_limit=self.read_limit,
                    launch=launch,
                )
                break
            except sandbox.SetupFailed as error:  # nothing ran: a new plan may find the machine settled
                if attempt == sandbox.SETUP_ATTEMPTS:
                    raise ToolFailure(f"the sandbox could not start ({error}); the command did not run") from error
            except OSError as error:
                raise ToolFailure(f"could not start {SHELL}: {error.strerror or error}") from error
        return command_output(result, self.max_output, timeout_ms)


def command_output(result: ProcessResult, max_output: int, timeout_ms: int, *, note: str = "") -> ToolOutput:
    """What the model reads of a finished command, run here or on an ssh host: `note`, its output
    (head and tail within `max_output`), how it ended, and the background jobs it left stopped."""
    text = result.output.render(max_output)
    if text and not text.endswith("\n"):
        text += "\n"
    text = note + (text or "(no output)\n") + status_line(result.exit_code, result.timed_out, timeout_ms)
    if result.stopped_background:
        text += (
            "\n[background processes still attached to the output were stopped; "
            "redirect their output to keep them running]"
        )
    return ToolOutput(text=text, is_error=result.timed_out or result.exit_code is None)
