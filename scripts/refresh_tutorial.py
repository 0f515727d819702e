"""Rewrite the output shown under each ``$ `` command of a documentation page (docs/tutorial.md
unless another is named) whose real output no longer matches it (the check tests/test_docs.py
makes), in the test's environment. Outputs that still match, ``...`` elisions included, are left
as written.

Run after a change that alters what a command prints, then read the diff:
``.venv/bin/python scripts/refresh_tutorial.py [docs/PAGE.md] && git diff docs/``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from doc_blocks import (  # noqa: E402
    console_commands,
    output_matches,
    scratch_folder,
    shell_command,
    terminal_env,
)


def main() -> None:
    page = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "tutorial.md"
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    commands = console_commands(text)
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
            print(f"{page.name}:{command.line}: $ {command.command.splitlines()[0]}")
    for start, end, new in reversed(replacements):
        lines[start:end] = new
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(replacements)} outputs rewritten")


if __name__ == "__main__":
    main()
