"""What every command-line test checks about bad input: exit 2, one stderr line, no traceback."""

from __future__ import annotations


def assert_bad_input(result, match: str) -> None:
    """Exit status 2, exactly one line on stderr naming the problem, nothing on stdout."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("calibkit: error: ")
    assert match in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""
