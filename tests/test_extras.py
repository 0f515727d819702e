"""Optional extras: each optional module, when missing, gives an error naming its extra and the
pip command; on the command line that error is one line on stderr, with no traceback."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit import _kernels
from calibkit._errors import MissingExtraError
from calibkit._extras import EXTRAS, install_command, require
from calibkit.cli import app
from cli_helpers import assert_bad_input

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "calibkit"
DECISION_SET = PACKAGE / "stated" / "data" / "decision_set.jsonl"

#: What src/calibkit may import without an extra: calibkit's own dependencies (pyproject's
#: ``dependencies``), and modules that come with an optional one.
BASE = {"numpy", "scipy", "typer", "rich", "pyarrow", "matplotlib", "duckdb"}
COMES_WITH = {"py4j": "pyspark"}
#: The distribution that installs a module, where the two names differ.
DISTRIBUTION = {"sklearn": "scikit-learn"}

runner = CliRunner()


def block(monkeypatch: pytest.MonkeyPatch, top: str) -> None:
    """Make ``import top`` (and of its submodules) fail, as if it were not installed."""
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, top, None)


@pytest.fixture
def fresh_kernels():
    """The kernel choice forgets what it found about numba, before and after the test."""
    for f in (_kernels._numba_installed, _kernels._numba_module):
        f.cache_clear()
    yield
    for f in (_kernels._numba_installed, _kernels._numba_module):
        f.cache_clear()


def _assert_names_extra(exc: BaseException, module: str) -> None:
    extra = EXTRAS[module]
    assert isinstance(exc, ImportError) and isinstance(exc, ck.InputError)
    assert f"needs {module}, but {module} is not installed" in str(exc)
    assert f"pip install 'calibkit[{extra}]'" in str(exc)


# ------------------------------------------------------------------- the registry of extras


def _imported_top_levels() -> dict[str, set[str]]:
    """top-level module -> the calibkit files importing it (lazily, or through ``require``),
    from the source."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif _is_require(node):
                names = [node.args[0].value]  # type: ignore[attr-defined]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], set()).add(path.name)
    return found


def _is_require(node: ast.AST) -> bool:
    """A call ``require("module", ...)`` (calibkit._extras.require)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "require"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def test_every_third_party_import_is_a_dependency_or_has_an_extra():
    imported = set(_imported_top_levels()) - set(sys.stdlib_module_names) - {"calibkit"}
    unknown = imported - BASE - set(EXTRAS) - set(COMES_WITH)
    assert not unknown, f"imported without a dependency or an extra: {sorted(unknown)}"
    # and the list above is not stale: each module named is imported somewhere
    assert set(EXTRAS) <= imported and set(COMES_WITH) <= imported


def test_each_extra_of_the_registry_is_in_pyproject_and_installs_the_module():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert extra in extras, f"pyproject has no extra {extra!r} (for {module})"
        names = {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in extras[extra]}
        assert DISTRIBUTION.get(module, module) in names, (
            f"calibkit[{extra}] does not install {module}: {extras[extra]}"
        )
    base = {r.split(">")[0].split("=")[0].strip() for r in project["dependencies"]}
    assert base == BASE
    assert not base & set(EXTRAS), "an optional module is a base dependency"


def test_install_command_of_an_unknown_module_is_a_bug():
    assert install_command("openai") == "pip install 'calibkit[llm]'"
    with pytest.raises(KeyError, match="'json' is not an optional dependency"):
        install_command("json")


def test_require_returns_the_module_when_it_is_there():
    pytest.importorskip("numba")
    import numba

    assert require("numba", "a test") is numba


def test_a_broken_dependency_of_an_installed_extra_is_not_called_missing(monkeypatch, tmp_path):
    """An optional module that is installed but cannot import one of its own dependencies
    raises that error as it is, not 'not installed'."""
    (tmp_path / "ck_fake_extra.py").write_text("import ck_fake_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(EXTRAS, "ck_fake_extra", "fake")
    with pytest.raises(ModuleNotFoundError) as info:
        require("ck_fake_extra", "a test")
    assert not isinstance(info.value, MissingExtraError)
    assert info.value.name == "ck_fake_dependency"
    monkeypatch.delitem(sys.modules, "ck_fake_extra", raising=False)
    (tmp_path / "ck_fake_extra.py").unlink()
    with pytest.raises(
        MissingExtraError,
        match=r"a test needs ck_fake_extra, but ck_fake_extra is not installed: pip install 'calibkit\[fake\]'\.$",
    ):
        require("ck_fake_extra", "a test")


# ------------------------------------------------------------- each optional module missing


def test_numba_missing(monkeypatch, fresh_kernels):
    block(monkeypatch, "numba")
    for name in (
        "_numba_kernels",
        "_numba_ranking",
        "_numba_slabs",
        "_numba_slope",
        "_numba_capital",
        "_numba_distinct",
    ):
        monkeypatch.setitem(sys.modules, f"calibkit.{name}", None)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    with pytest.raises(MissingExtraError) as info:
        ck.ece([0.5], [1])
    _assert_names_extra(info.value, "numba")
    assert str(info.value).startswith("CALIBKIT_KERNEL=numba needs numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", "auto")  # auto falls back to numpy, silently
    assert ck.ece(np.full(300_000, 0.5), np.ones(300_000)) == pytest.approx(0.5)


def test_pyspark_missing(monkeypatch, tmp_path):
    block(monkeypatch, "pyspark")
    path = tmp_path / "p.csv"
    path.write_text("confidence,correct\n0.9,1\n0.6,0\n")
    with pytest.raises(MissingExtraError) as info:
        ck.audit(str(path), engine="spark")
    _assert_names_extra(info.value, "pyspark")
    assert str(info.value).endswith("'calibkit[spark]' (and Java 17 or later).")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_llm_sdk_missing(monkeypatch, provider):
    from calibkit.stated.providers import make_caller

    block(monkeypatch, provider)
    with pytest.raises(MissingExtraError) as info:
        make_caller(
            provider,
            model="m",
            base_url="http://127.0.0.1:9",
            api_key_env=None,
            temperature=None,
            max_tokens=16,
            source="verbalized",
            top_logprobs=0,
            timeout=1.0,
            replay="unused.sqlite",
            prompt_hash="",
            settings_hash="",
        )
    _assert_names_extra(info.value, provider)
    assert str(info.value).startswith(f"provider '{provider}' needs {provider}")


def test_torch_missing(monkeypatch):
    ts = ck.TemperatureScaling().fit(np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), [0, 1, 1])
    block(monkeypatch, "torch")
    with pytest.raises(MissingExtraError) as info:
        ts.as_torch_module()
    _assert_names_extra(info.value, "torch")


# ----------------------------------------------------------------- on the command line


def test_cli_engine_spark_without_pyspark_is_one_line(monkeypatch, tmp_path):
    block(monkeypatch, "pyspark")
    path = tmp_path / "p.csv"
    path.write_text("confidence,correct\n0.9,1\n0.6,0\n")
    result = runner.invoke(app, ["audit", str(path), "--engine", "spark"])
    assert_bad_input(result, "pip install 'calibkit[spark]'")
    assert "audit: --engine spark needs pyspark, but pyspark is not installed" in result.stderr


def test_cli_stated_run_without_the_sdk_is_one_line(monkeypatch, tmp_path):
    block(monkeypatch, "openai")
    args = ["stated", "run", str(DECISION_SET), "--provider", "openai", "--model", "m"]
    args += ["--base-url", "http://127.0.0.1:9", "--store", str(tmp_path / "r.sqlite")]
    result = runner.invoke(app, args)
    assert_bad_input(result, "pip install 'calibkit[llm]'")
    assert "provider 'openai' needs openai, but openai is not installed" in result.stderr


BLOCKED_RUN = """
import sys
for name in [n for n in sys.modules if n.split(".")[0] in BLOCKED]:
    del sys.modules[name]
sys.modules.update(dict.fromkeys(BLOCKED))
sys.argv = ["calibkit", *ARGS]
from calibkit.cli import main
main()
"""


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        (["pyspark"], ["audit", "{csv}", "--engine", "spark"], "spark"),
        (["numba"], ["audit", "{csv}"], "fast"),
        (["anthropic"], ["stated", "run", str(DECISION_SET), "--provider", "anthropic"], "llm"),
    ],
)
def test_cli_missing_extra_in_a_process_of_its_own(tmp_path, blocked, args, extra):
    """The real process: exit 2, the one line on stderr, nothing on stdout, no traceback."""
    csv = tmp_path / "p.csv"
    csv.write_text("confidence,correct\n0.9,1\n0.6,0\n")
    args = [a.format(csv=csv) for a in args]
    if args[0] == "stated":
        args += ["--model", "m", "--base-url", "http://127.0.0.1:9"]
        args += ["--store", str(tmp_path / "r.sqlite")]
    code = f"BLOCKED = {blocked!r}\nARGS = {args!r}\n" + textwrap.dedent(BLOCKED_RUN)
    env = {"CALIBKIT_KERNEL": "numba"} if blocked == ["numba"] else {}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**_env(), **env},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("calibkit: error: ")
    assert f"needs {blocked[0]}, but {blocked[0]} is not installed" in lines[0]
    assert f"pip install 'calibkit[{extra}]'" in lines[0]


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PACKAGE.parent), *filter(None, [env.get("PYTHONPATH")])]
    )
    return env


# ------------------------------------------------------------------------- docs/install.md

INSTALL_PAGE = ROOT / "docs" / "install.md"


def test_the_install_pages_extras_table_is_pyprojects():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|", INSTALL_PAGE.read_text(), flags=re.MULTILINE)
    table = {name: re.findall(r"`([^`]+)`", cell) for name, cell in rows}
    assert table == {name: reqs for name, reqs in extras.items() if name != "dev"}
    # every extra but the documentation's (whose Sphinx calibkit never imports) enables a module
    assert set(table) - {"docs"} == set(EXTRAS.values())


def test_the_install_pages_error_line_is_the_cli_s(monkeypatch, tmp_path):
    block(monkeypatch, "pyspark")
    (tmp_path / "predictions.csv").write_text("confidence,correct\n0.9,1\n0.6,0\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["audit", "predictions.csv", "--engine", "spark"])
    page = INSTALL_PAGE.read_text()
    assert "$ calibkit audit predictions.csv --engine spark\n" + result.stderr in page
    assert f"$ calibkit --version\ncalibkit {ck.__version__}\n" in page
