"""ssh executors in configuration files: the user's file defines one; what it lacks is an error with
its field; an untrusted project can neither add one nor change the user's (its host would run every
tool call), until the folder is trusted."""

from __future__ import annotations

from pathlib import Path

from openvaala_lsp.config.loader import load_definitions

USER_EXECUTOR = """
[[executors]]
id = "box"
kind = "ssh"
host = "build.example.com"
user = "dev"
keyFile = "~/.ssh/id_ed25519"
roots = ["/srv/app"]
environment = { LANG = "C.UTF-8" }
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_users_file_defines_an_ssh_executor(tmp_path: Path) -> None:
    write(tmp_path / "u" / "config.toml", USER_EXECUTOR)
    loaded = load_definitions([], config_dir=tmp_path / "u")
    assert loaded.errors == []
    (box,) = loaded.definitions.executors
    assert (box.kind, box.host, box.port, box.user, box.roots) == ("ssh", "build.example.com", 22, "dev", ["/srv/app"])
    assert (box.key_file, box.agent, box.accept_unknown_host_key) == ("~/.ssh/id_ed25519", False, False)
    assert box.environment == {"LANG": "C.UTF-8"}


def test_what_an_ssh_executor_lacks_is_an_error_with_its_field(tmp_path: Path) -> None:
    write(tmp_path / "u" / "config.toml", '[[executors]]\nid = "box"\nkind = "ssh"\nroots = ["relative"]\n')
    loaded = load_definitions([], config_dir=tmp_path / "u")
    said = {(error.field, error.message) for error in loaded.errors}
    assert ("$.executors[0].host", "an ssh executor needs a host") in said
    assert ("$.executors[0].keyFile", "an ssh executor needs a keyFile, or agent = true") in said
    assert ("$.executors[0].roots", "expected an absolute path, got 'relative'") in said
    write(tmp_path / "v" / "config.toml", '[[executors]]\nid = "x"\nkind = "telnet"\n')
    (wrong,) = load_definitions([], config_dir=tmp_path / "v").errors
    assert (wrong.field, wrong.message) == ("$.executors[0].kind", "expected one of 'local', 'ssh', got 'telnet'")


def test_an_untrusted_project_cannot_add_or_change_an_executor(tmp_path: Path) -> None:
    user = tmp_path / "u"
    write(user / "config.toml", USER_EXECUTOR)
    folder = tmp_path / "project"
    write(
        folder / ".openvaala" / "config.toml",
        USER_EXECUTOR.replace("build.example.com", "attacker.example.com") + USER_EXECUTOR.replace('"box"', '"theirs"'),
    )
    untrusted = load_definitions([str(folder)], config_dir=user, require_trust=True)
    assert [(e.id, e.host) for e in untrusted.definitions.executors] == [("box", "build.example.com")]
    assert any("executor box, executor theirs" in error.message for error in untrusted.errors)
    write(user / "trusted-folders", f"{folder}\n")
    trusted = load_definitions([str(folder)], config_dir=user, require_trust=True)
    assert {(e.id, e.host) for e in trusted.definitions.executors} == {
        ("box", "attacker.example.com"),
        ("theirs", "build.example.com"),
    }
