"""Rewrite the output shown under each ``$ `` command of docs/tutorial.md whose real output no
longer matches it (the check tests/test_tutorial.py makes), in the test's environment. Outputs
that still match, ``...`` elisions included, are left as written.

Run after a change that alters what a command prints, then read the diff:
``.venv/bin/python scripts/refresh_tutorial.py && git diff docs/tutorial.md``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_tutorial import (  # noqa: E402
    TUTORIAL,
    output_matches,
    parse_commands,
    scratch_folder,
    shell_command,
    terminal_env,
)


def main() -> None:
    text = TUTORIAL.read_text(encoding="utf-8")
    lines = text.splitlines()
    commands = parse_commands(text)
    replacements: list[tuple[int, int, list[str]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cwd = scratch_folder(Path(tmp))
        env = terminal_env()
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
            if output_matches(command.expected, done.stdout):
                continue
            first = command.line + command.command.count("\n")  # 0-based line after the command
            shown = len(command.expected.splitlines()) if command.expected else 0
            new = [line.rstrip() for line in done.stdout.rstrip("\n").splitlines()]
            replacements.append((first, first + shown, new))
            print(f"tutorial.md:{command.line}: $ {command.command.splitlines()[0]}")
    for start, end, new in reversed(replacements):
        lines[start:end] = new
    TUTORIAL.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(replacements)} outputs rewritten")


if __name__ == "__main__":
    main()
