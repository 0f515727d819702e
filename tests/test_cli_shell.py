"""The command line as a shell meets it, each in a process of its own: help with no arguments,
a command's --help, an unknown command, and shell completion (typer's --show-completion)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import calibkit as ck

SRC = str(Path(__file__).resolve().parents[1] / "src")
COMMANDS = ["audit", "compare", "decide", "fit", "apply", "monitor", "segments", "stated"]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SRC, *filter(None, [env.get("PYTHONPATH")])])
    env["COLUMNS"] = "100"
    env.update(extra)
    return env


def calibkit(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m calibkit ARGS`` with this tree's calibkit, from a folder outside it."""
    return subprocess.run(
        [sys.executable, "-m", "calibkit", *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        cwd=Path(SRC).parents[1].parent,
        timeout=120,
    )


def test_no_arguments_prints_the_help_with_every_command():
    done = calibkit()
    assert done.returncode == 2  # no command is a usage error (as click has it), help on stdout
    assert "Usage: calibkit [OPTIONS] COMMAND [ARGS]..." in done.stdout
    panel = done.stdout.split("Commands")[1]
    listed = re.findall(r"^\W (\w+)  ", panel, flags=re.MULTILINE)
    assert listed == COMMANDS, done.stdout
    assert done.stderr == ""


def test_a_commands_help():
    done = calibkit("audit", "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert "Usage: calibkit audit [OPTIONS] {file}" in done.stdout
    for option in ("--bins", "--strategy", "--logits", "--json", "--html"):
        assert option in done.stdout


def test_unknown_command_is_a_clean_usage_error():
    done = calibkit("frobnicate")
    assert done.returncode == 2 and done.stdout == ""
    assert "No such command 'frobnicate'." in done.stderr
    assert "Try 'calibkit --help' for help." in done.stderr
    assert "Traceback" not in done.stderr


def test_version_in_a_process():
    done = calibkit("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"calibkit {ck.__version__}\n", "")


# typer detects the user's shell (shellingham); a test names the shell instead
NAMED_SHELL = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


@pytest.mark.parametrize(
    ("shell", "line"),
    [
        ("bash", "complete -o default -F _calibkit_completion calibkit"),
        ("zsh", "#compdef calibkit"),
        ("fish", "complete --command calibkit --no-files"),
    ],
)
def test_show_completion_prints_a_script_for_calibkit(shell, line):
    done = calibkit("--show-completion", shell, **NAMED_SHELL)
    assert done.returncode == 0, done.stderr
    assert line in done.stdout
    assert f"_CALIBKIT_COMPLETE=complete_{shell}" in done.stdout


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("calibkit st", ["stated"]),
        ("calibkit stated ", ["audit", "run", "fit", "judge"]),
        ("calibkit audit p.csv --stra", ["--strategy"]),
        ("calibkit audit p.csv --strategy ", ["uniform", "quantile"]),
    ],
)
def test_completion_answers_what_bash_asks(words, expected):
    """What the bash script runs on a TAB: the words so far in, the candidates out."""
    cword = str(len(words.split()) - (0 if words.endswith(" ") else 1))
    done = calibkit(
        _CALIBKIT_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword, **NAMED_SHELL
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected


def test_the_bash_script_completes_in_bash(tmp_path):
    """The printed script, sourced by a real bash, completes a command name (``calibkit`` on
    the PATH is a two-line stand-in for the console script)."""
    script = calibkit("--show-completion", "bash", **NAMED_SHELL).stdout
    (tmp_path / "completion.bash").write_text(script)
    shim = tmp_path / "calibkit"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m calibkit "$@"\n')
    shim.chmod(0o755)
    bash = (
        f"source {tmp_path / 'completion.bash'}; COMP_WORDS=(calibkit se); COMP_CWORD=1; "
        '_calibkit_completion calibkit; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", bash],
        capture_output=True,
        text=True,
        env=_env(PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["segments"]


def test_install_completion_writes_the_script_and_sources_it(tmp_path):
    """--install-completion in a home of its own: the script, and the line in ~/.bashrc."""
    done = calibkit("--install-completion", "bash", HOME=str(tmp_path), **NAMED_SHELL)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "calibkit.sh"
    assert f"bash completion installed in {script}" in done.stdout
    shown = calibkit("--show-completion", "bash", **NAMED_SHELL).stdout
    assert script.read_text().strip() == shown.strip()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text().splitlines()
