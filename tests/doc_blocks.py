"""Reading and running the code blocks of a Markdown page (``tests/test_docs.py`` runs every
page under ``docs/`` and the README; ``tests/test_tutorial.py`` is one case with more checks).

A page's fenced blocks are read with their language and their first line. What runs:

Every block runs in the page's order (so a command may read a file a python block wrote):

- ``python`` blocks, in one namespace per page: a block whose first line starts with
  ``>>>`` (and every ``pycon`` block) is a doctest whose shown output is compared; any other
  block is executed as a script;
- ``console`` blocks: each ``$ `` command runs in a shell and must print what the block shows
  under it (an output containing ``error:`` expects a failing exit status);
- ``bash`` (``sh``, ``shell``) blocks: the block runs as one ``bash -e`` script (so its
  ``calibkit ...`` lines run through the command line) and must exit with status 0.

Outputs are compared as doctest compares them with ELLIPSIS and NORMALIZE_WHITESPACE: runs of
whitespace (line breaks included) are equal, and ``...`` stands for any text. Everything runs in
a scratch folder that links to every entry of the repository root, so a page's paths read as
from the root and whatever it writes lands outside the repository; the terminal is fixed (100
columns, no colour). A block that must not run carries ``<!-- not-run: reason -->`` on the line
just before it; a marker without a reason is an error.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CALIBKIT = Path(sys.executable).parent / "calibkit"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PYTHON = ("python", "pycon")
SHELL = ("console", "bash", "sh", "shell")

_FENCE = re.compile(r"^(\s*)```\s*([^\s`]*)[^`]*$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run\b:?(.*?)-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, the 1-based line of its first content line, its lines
    (the fence's indentation removed), and the reason it is not run (None: it runs)."""

    language: str
    line: int
    body: tuple[str, ...]
    not_run: str | None = None

    @property
    def runs(self) -> bool:
        return self.language in PYTHON + SHELL and self.not_run is None

    @property
    def is_doctest(self) -> bool:
        first = next((line for line in self.body if line.strip()), "")
        return self.language == "pycon" or first.lstrip().startswith(">>>")


@dataclass(frozen=True)
class Command:
    """One ``$ `` command of a console block and the output shown under it."""

    line: int  # 1-based line of the ``$ `` in the markdown file
    command: str
    expected: str


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, indented ones (in a list item) included."""
    blocks: list[Block] = []
    lines = text.splitlines()
    language: str | None = None
    indent, start, body, reason = "", 0, [], None
    for number, line in enumerate(lines, start=1):
        if language is None:
            match = _FENCE.match(line)
            if match:
                indent, language, start, body = match.group(1), match.group(2), number + 1, []
                reason = _marker(lines, number - 1)
        elif line.strip() == "```":
            blocks.append(Block(language, start, tuple(body), reason))
            language = None
        else:
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
    if language is not None:
        raise ValueError(f"unclosed ``` block starting at line {start - 1}")
    return blocks


def _marker(lines: list[str], fence: int) -> str | None:
    """The reason of a ``<!-- not-run: reason -->`` on the last non-blank line before a fence
    (0-based index ``fence``), or None."""
    i = fence - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0:
        return None
    match = _NOT_RUN.match(lines[i])
    if match is None:
        return None
    reason = match.group(1).strip()
    if not reason:
        raise ValueError(
            f"line {i + 1}: a not-run marker must give its reason: <!-- not-run: why -->"
        )
    return reason


def parse_commands(block: Block) -> list[Command]:
    """The ``$ `` commands of a console block, each with the lines shown under it (up to the
    next command or the end of the block). A command continues on the next line after a
    trailing backslash."""
    commands: list[Command] = []
    body, start = block.body, block.line
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            raise ValueError(
                f"line {start + i}: a console block must start with a '$ ' command, got {line!r}"
            )
        if re.match(r"\$ (python3? -m )?pip ", line):
            raise ValueError(
                f"line {start + i}: {line[2:]!r} would install packages into the test's "
                "environment; put <!-- not-run: it installs packages --> before the block"
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


def console_commands(text: str) -> list[Command]:
    """The commands of every console block of a page that runs."""
    return [
        c
        for b in fenced_blocks(text)
        if b.language == "console" and b.runs
        for c in parse_commands(b)
    ]


def placed(block: Block) -> str:
    """The block's lines in place, every other line of the page blank: line numbers in
    tracebacks and doctest reports are those of the markdown file."""
    lines = [""] * (block.line - 1) + list(block.body)
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
    """A fixed terminal (100 columns, no colour) whose ``calibkit`` and ``python`` are this
    environment's, importing this checkout's source."""
    env = dict(os.environ)
    path = [str(ROOT / "src"), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(
        COLUMNS="100",
        LINES="50",
        NO_COLOR="1",
        TERM="dumb",
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as on a terminal
        PATH=f"{CALIBKIT.parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(path),
    )
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS"):
        env.pop(name, None)
    return env


def scratch_folder(path: Path) -> Path:
    """A folder that reads like the repository root: a link to each of its entries."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git",) and not (path / entry.name).exists():
            (path / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return path


def run_page(page: Path, text: str, namespace: dict[str, Any] | None = None) -> list[str]:
    """Run every block of a page that runs, in order, in the current directory (python blocks
    in one namespace); the failures, each with its place. A python script block that raises,
    or a shell block that fails, ends the page (later blocks build on it)."""
    globs: dict[str, Any] = {"__name__": page.stem} if namespace is None else namespace
    env = terminal_env()
    failures: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for block in fenced_blocks(text):
        if not block.runs:
            continue
        if block.language == "console":
            for command in parse_commands(block):
                failure = _console(page, command, env)
                if failure:
                    failures.append(failure)
        elif block.language in SHELL:
            script = "set -euo pipefail\n" + "\n".join(block.body)
            done = _shell(script, env, shell=("bash", "-c"))
            if done.returncode != 0:
                failures.append(
                    f"{page.name}:{block.line}: {block.language} block\n"
                    f"exit status {done.returncode}\n{done.stdout}"
                )
                break
        elif block.is_doctest:
            test = doctest.DocTestParser().get_doctest(placed(block), {}, page.stem, str(page), 0)
            test.globs = globs  # get_doctest copies them; the page's blocks share one namespace
            messages: list[str] = []
            before = runner.failures
            runner.run(test, out=messages.append, clear_globs=False)
            if runner.failures > before:
                failures.append("".join(messages))
        else:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(placed(block), str(page), "exec"), globs)
            except Exception:
                failures.append(f"{page.name}:{block.line}: python block\n{traceback.format_exc()}")
                break
    return failures


def _console(page: Path, command: Command, env: dict[str, str]) -> str | None:
    done = _shell(shell_command(command.command), env)
    expected_error = "error:" in command.expected
    if (done.returncode != 0) != expected_error:
        return (
            f"{page.name}:{command.line}: $ {command.command}\n"
            f"exit status {done.returncode}\n{done.stdout}"
        )
    if not output_matches(command.expected, done.stdout):
        return f"{page.name}:{command.line}: $ {command.command}\n" + output_difference(
            command.expected, done.stdout
        )
    return None


def _shell(
    command: str, env: dict[str, str], shell: tuple[str, ...] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*shell, command] if shell else command,
        shell=shell is None,
        cwd=Path.cwd(),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
