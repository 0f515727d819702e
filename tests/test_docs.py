"""The documentation cannot drift: every code block of every page under ``docs/`` and of the
README runs (``doc_blocks`` says how), the blocks that do not run say why, and the API
reference lists every public name."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import calibkit as ck
from calibkit import CalibkitWarning
from doc_blocks import (
    PYTHON,
    ROOT,
    SHELL,
    Block,
    fenced_blocks,
    run_page,
    scratch_folder,
)

PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
# pages run by a test of their own, which adds the page's own checks to run_page's
RUN_BY = {"tutorial.md": "tests/test_tutorial.py"}


def blocks_of(page: Path) -> list[Block]:
    return fenced_blocks(page.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- the reader


def test_blocks_markers_and_indented_fences():
    text = (
        "intro\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "<!-- not-run: needs an API key -->\n"
        "\n"
        "```bash\n"
        "calibkit stated run items.jsonl\n"
        "```\n"
        "- a list item\n"
        "\n"
        "  ```pycon\n"
        "  >>> x + 1\n"
        "  2\n"
        "  ```\n"
    )
    blocks = fenced_blocks(text)
    assert [(b.language, b.line, b.body, b.not_run) for b in blocks] == [
        ("python", 3, ("x = 1",), None),
        ("bash", 8, ("calibkit stated run items.jsonl",), "needs an API key"),
        ("pycon", 13, (">>> x + 1", "2"), None),
    ]
    assert [b.runs for b in blocks] == [True, False, True]
    assert [b.is_doctest for b in blocks] == [False, False, True]
    with pytest.raises(ValueError, match="must give its reason"):
        fenced_blocks("<!-- not-run -->\n```bash\nls\n```\n")
    with pytest.raises(ValueError, match="unclosed"):
        fenced_blocks("```python\nx = 1\n")


def test_blocks_share_a_namespace_run_in_order_and_compare_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "page.md"
    good = (
        "```python\nx = 2\nopen('x.txt', 'w').write('hello')\n```\n"
        "```console\n$ cat x.txt\nhello\n```\n"
        "```python\n>>> x * 3\n6\n```\n"
        "```bash\ntest -f x.txt\n```\n"
    )
    assert run_page(page, good) == []
    failures = run_page(page, good.replace("\n6\n", "\n7\n").replace("hello\n```", "bye\n```"))
    assert len(failures) == 2
    assert failures[0].startswith("page.md:6: $ cat x.txt") and "bye" in failures[0]
    assert "Expected:\n    7\nGot:\n    6" in failures[1]
    failures = run_page(page, "```python\nraise ValueError('boom')\n```\n```bash\nfalse\n```\n")
    assert len(failures) == 1  # the page ends at the first failing script
    assert "page.md:2: python block" in failures[0] and "boom" in failures[0]
    failures = run_page(page, "```bash\ntrue\nfalse\n```\n")
    assert failures[0].startswith("page.md:2: bash block\nexit status 1")


# ----------------------------------------------------------------------------- the pages


def test_every_block_runs_or_says_why():
    """Lists the blocks that do not run, with their reasons (``-s`` shows the list)."""
    ran, skipped, shown = 0, [], 0
    for page in PAGES:
        for block in blocks_of(page):
            if block.language in PYTHON + SHELL:
                if block.runs:
                    ran += 1
                else:
                    skipped.append(f"{page.relative_to(ROOT)}:{block.line}: {block.not_run}")
            else:
                shown += 1  # output or text shown as is (a table, a file's lines)
    print(
        f"\n{ran} code blocks run, {len(skipped)} not run, {shown} other blocks (output, directives):"
    )
    print("\n".join(skipped))
    assert ran >= 60
    assert len(skipped) <= ran // 4, "most blocks must run"


#: the pages with a block to run, but those that a test of their own runs
RUNNING = [
    p
    for p in PAGES
    if p.name not in RUN_BY and any(b.runs for b in fenced_blocks(p.read_text(encoding="utf-8")))
]


@pytest.mark.parametrize("page", RUNNING, ids=[str(p.relative_to(ROOT)) for p in RUNNING])
def test_page_runs(page, tmp_path, monkeypatch):
    text = page.read_text(encoding="utf-8")
    monkeypatch.chdir(scratch_folder(tmp_path))
    monkeypatch.setenv("COLUMNS", "100")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibkitWarning)  # the pages say what warns
        failures = run_page(page, text)
    assert not failures, "\n\n".join(failures)


# ----------------------------------------------------------------------------- the site


def test_the_api_reference_lists_every_public_name_once():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    listed = re.findall(r"^   (\w+)$", text, flags=re.MULTILINE)
    assert sorted(listed) == sorted(ck.__all__)
    assert len(listed) == len(set(listed))


def test_every_page_is_in_the_site():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    in_toctree = set(re.findall(r"^([\w-]+)$", index, flags=re.MULTILINE))
    pages = {p.stem for p in PAGES if p.parent == ROOT / "docs"} - {"index"}
    assert pages <= in_toctree, pages - in_toctree
