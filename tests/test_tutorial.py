"""docs/tutorial.md cannot drift: every ``$ `` command of its ``console`` blocks is run and its
output compared with the output the page shows, and its ``python`` blocks run as one doctest.

Outputs are compared as doctest compares them with ELLIPSIS and NORMALIZE_WHITESPACE: runs of
whitespace (line breaks included) are equal, and ``...`` in the page stands for any text (a
line of its own elides lines; inside a line, a date or a path). The commands run in a scratch
folder that links to the repository's ``examples`` folder, as the tutorial's set-up does, with
a fixed terminal (100 columns, no colour).
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from calibkit import CalibkitWarning

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
CALIBKIT = Path(sys.executable).parent / "calibkit"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Command:
    """One ``$ `` command of a console block and the output shown under it."""

    line: int  # 1-based line of the ``$ `` in the markdown file
    command: str
    expected: str


def fenced_blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(language, 1-based line of the first content line, content lines) of each fenced block."""
    blocks: list[tuple[str, int, list[str]]] = []
    language: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if language is None:
            if match:
                language, start, body = match.group(1), number + 1, []
        elif line.strip() == "```":
            blocks.append((language, start, body))
            language = None
        else:
            body.append(line)
    if language is not None:
        raise ValueError(f"unclosed ``` block starting at line {start - 1}")
    return blocks


def parse_commands(text: str) -> list[Command]:
    """The ``$ `` commands of the console blocks, each with the lines shown under it (up to the
    next command or the end of the block). A command continues on the next line after a
    trailing backslash."""
    commands: list[Command] = []
    for language, start, body in fenced_blocks(text):
        if language != "console":
            continue
        i = 0
        while i < len(body):
            line = body[i]
            if not line.startswith("$ "):
                raise ValueError(
                    f"line {start + i}: a console block must start with a '$ ' command, got {line!r}"
                )
            first = start + i
            parts = [line[2:]]
            while parts[-1].endswith("\\") and i + 1 < len(body):
                i += 1
                parts.append(body[i])
            i += 1
            output = []
            while i < len(body) and not body[i].startswith("$ "):
                output.append(body[i])
                i += 1
            commands.append(Command(first, "\n".join(parts), "\n".join(output)))
    return commands


def python_source(text: str) -> str:
    """The python blocks' lines in place, every other line blank: one doctest whose line
    numbers are those of the markdown file."""
    lines = [""] * len(text.splitlines())
    for language, start, body in fenced_blocks(text):
        if language == "python":
            for offset, line in enumerate(body):
                lines[start - 1 + offset] = line
    return "\n".join(lines) + "\n"


def output_matches(expected: str, actual: str) -> bool:
    """Doctest's comparison with ELLIPSIS and NORMALIZE_WHITESPACE."""
    return doctest.OutputChecker().check_output(expected + "\n", actual, FLAGS)


def output_difference(expected: str, actual: str) -> str:
    example = doctest.Example("command", expected + "\n")
    return doctest.OutputChecker().output_difference(example, actual, FLAGS)


def shell_command(command: str) -> str:
    """The command with a leading ``calibkit`` replaced by this environment's executable."""
    if command == "calibkit" or command.startswith("calibkit "):
        return shlex.quote(str(CALIBKIT)) + command[len("calibkit") :]
    return command


def terminal_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        COLUMNS="100",
        LINES="50",
        NO_COLOR="1",
        TERM="dumb",
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as on a terminal
        PATH=f"{CALIBKIT.parent}{os.pathsep}{env.get('PATH', '')}",
    )
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS"):
        env.pop(name, None)
    return env


def scratch_folder(path: Path) -> Path:
    """What the tutorial's set-up makes: a folder with a link to the repository's examples."""
    (path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return path


# ----------------------------------------------------------------------------- the helpers


def test_output_matches_normalises_whitespace_and_elides():
    actual = "a   table\n  row 1\n  row 2\n  row 3\nrecorded 2026-01-02T03:04:05Z, N = 5\n"
    assert output_matches("a table\nrow 1\n...\nrow 3\nrecorded ..., N = 5", actual)
    assert output_matches("a table row 1 row 2\nrow 3 recorded ..., N = 5", actual)
    assert output_matches("", "")


def test_output_matches_fails_on_a_wrong_output():
    actual = "ECE 0.0550 is 18.9x the noise floor\n"
    assert not output_matches("ECE 0.0551 is 18.9x the noise floor", actual)
    assert not output_matches("ECE 0.0550", actual)  # no implicit elision of the rest
    assert not output_matches("", actual)  # a command shown without output must print nothing
    assert "0.0551" in output_difference("ECE 0.0551 is 18.9x the noise floor", actual)


def test_parse_commands_and_python_source():
    text = (
        "intro\n"
        "```console\n"
        "$ calibkit audit a.csv \\\n"
        "    --label y\n"
        "line one\n"
        "...\n"
        "$ mkdir -p out\n"
        "```\n"
        "```python\n"
        ">>> 1 + 1\n"
        "2\n"
        "```\n"
    )
    commands = parse_commands(text)
    assert commands == [
        Command(3, "calibkit audit a.csv \\\n    --label y", "line one\n..."),
        Command(7, "mkdir -p out", ""),
    ]
    assert shell_command(commands[0].command).startswith(shlex.quote(str(CALIBKIT)) + " audit")
    assert shell_command("mkdir -p out") == "mkdir -p out"
    source = python_source(text)
    assert source.splitlines()[9:11] == [">>> 1 + 1", "2"]
    test = doctest.DocTestParser().get_doctest(source, {}, "t", "t.md", 0)
    assert [(e.source, e.want, e.lineno) for e in test.examples] == [("1 + 1\n", "2\n", 9)]
    with pytest.raises(ValueError, match="must start with a '\\$ ' command"):
        parse_commands("```console\noutput without a command\n```\n")


# ----------------------------------------------------------------------------- the tutorial


def test_tutorial_is_linked_from_the_readme():
    assert "docs/tutorial.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_tutorial_commands_print_what_the_page_shows(tmp_path):
    text = TUTORIAL.read_text(encoding="utf-8")
    commands = parse_commands(text)
    assert len(commands) >= 10
    assert {c.command.split()[1] for c in commands if c.command.startswith("calibkit ")} >= {
        "audit",
        "fit",
        "apply",
        "decide",
        "compare",
    }
    cwd = scratch_folder(tmp_path)
    env = terminal_env()
    failures = []
    for command in commands:
        done = subprocess.run(
            shell_command(command.command),
            shell=True,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        expected_error = "error:" in command.expected
        if (done.returncode != 0) != expected_error:
            failures.append(
                f"{TUTORIAL.name}:{command.line}: $ {command.command}\n"
                f"exit status {done.returncode}\n{done.stdout}"
            )
        elif not output_matches(command.expected, done.stdout):
            failures.append(
                f"{TUTORIAL.name}:{command.line}: $ {command.command}\n"
                + output_difference(command.expected, done.stdout)
            )
    assert not failures, "\n\n".join(failures)
    for written in ("temperature.json", "calibrated.parquet", "report.html", "test-record.json"):
        assert (cwd / "out" / written).is_file(), written


def test_tutorial_python_runs_as_a_doctest(tmp_path, monkeypatch):
    text = TUTORIAL.read_text(encoding="utf-8")
    monkeypatch.chdir(scratch_folder(tmp_path))
    monkeypatch.setenv("COLUMNS", "100")
    test = doctest.DocTestParser().get_doctest(
        python_source(text), {"__name__": "tutorial"}, "tutorial", str(TUTORIAL), 0
    )
    assert len(test.examples) >= 20
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibkitWarning)  # other filters stay as configured
        runner.run(test, out=messages.append)
    assert runner.failures == 0, "".join(messages)
    # the page says that the quantile ECE warns about a collapsed bin
    assert any("quantile bins collapsed" in str(w.message) for w in caught)
    assert (tmp_path / "out" / "test-record-python.json").is_file()
    assert (tmp_path / "out" / "report-python.html").is_file()
