#!/usr/bin/env bash
# Build the sdist and the wheel, install the wheel in a fresh virtual environment (its
# dependencies from the package index, no extras) and use it from outside the repository: the
# console script, `python -m calibkit`, an audit of a shipped example file checked against
# numpy, the package data, the messages of the missing extras, shell completion. Then check that
# the sdist carries a test suite that runs. Any failure stops the script with a message and a
# non-zero exit.
#
#   bash scripts/check_wheel.sh [PYTHON]
#
# PYTHON (default .venv/bin/python) builds the packages and runs tests/test_api.py of the
# unpacked sdist: it needs `build` and `pytest` (the dev extra). The fresh environment is made
# with `python3 -m venv`; pip's cache is used, so a second run downloads nothing.
set -euo pipefail
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-$root/.venv/bin/python}"
# an absolute path: the checks below run from other folders
case "$python" in /*) ;; *) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
    echo "check_wheel: FAILED: $*" >&2
    exit 1
}
passed=0
ok() {
    passed=$((passed + 1))
    echo "check_wheel: ok (${SECONDS}s): $*"
}

# ------------------------------------------------------------------------------ build
"$python" -m build --outdir "$work/dist" "$root" >"$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; fail "python -m build"; }
wheels=("$work"/dist/calibkit-*-py3-none-any.whl)
sdists=("$work"/dist/calibkit-*.tar.gz)
[ "${#wheels[@]}" = 1 ] && [ -f "${wheels[0]}" ] || fail "no single wheel in $work/dist"
[ "${#sdists[@]}" = 1 ] && [ -f "${sdists[0]}" ] || fail "no single sdist in $work/dist"
wheel="${wheels[0]}"
sdist="${sdists[0]}"
version="$(basename "$wheel" | cut -d- -f2)"
ok "built $(basename "$sdist") and $(basename "$wheel")"

# The wheel holds the package and its metadata only (no tests, no examples).
others="$("$python" -c '
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print(" ".join(sorted({n.split("/")[0] for n in names} - {"calibkit", sys.argv[2]})))
' "$wheel" "calibkit-$version.dist-info")"
[ -z "$others" ] || fail "the wheel holds more than calibkit/: $others"
ok "the wheel holds calibkit/ and its metadata only"

# ------------------------------------------------------------------ a fresh environment
python3 -m venv "$work/venv"
venv="$work/venv"
"$venv/bin/pip" install -q --no-compile "$wheel" >"$work/pip.log" 2>&1 \
    || { cat "$work/pip.log" >&2; fail "pip install of the wheel"; }
heavy="$("$venv/bin/pip" list --format=freeze \
    | grep -iE '^(torch|torchmetrics|scikit-learn|numba|pyspark|openai|anthropic|pandas|polars)==' \
    || true)"
[ -z "$heavy" ] || fail "pip install calibkit pulled optional packages: $heavy"
ok "installed in a fresh venv without torch, scikit-learn, numba, pyspark or the LLM SDKs"

# From outside the repository, with nothing of it on the path.
cd "$work"
unset PYTHONPATH
cp "$root/examples/data/densenet40_cifar10_logits.npz" "$root/examples/data/resnet110_c10.csv" .

out="$("$venv/bin/calibkit" --version)"
[ "$out" = "calibkit $version" ] || fail "calibkit --version printed '$out', not 'calibkit $version'"
out="$("$venv/bin/python" -m calibkit --version)"
[ "$out" = "calibkit $version" ] || fail "python -m calibkit --version printed '$out'"
ok "calibkit --version and python -m calibkit --version: calibkit $version"

"$venv/bin/calibkit" audit densenet40_cifar10_logits.npz --logits test_logits --label test_labels \
    --json --record record.json >audit.json || fail "calibkit audit of the DenseNet npz"
"$venv/bin/calibkit" compare record.json record.json >compare.txt \
    || fail "calibkit compare of the record it wrote"
"$venv/bin/calibkit" audit resnet110_c10.csv >audit.txt 2>audit.err \
    || fail "calibkit audit of the CSV: $(cat audit.err)"
grep -q "N = 10000" audit.txt || fail "the CSV audit does not say N = 10000: $(head -5 audit.txt)"
ok "calibkit audit of the DenseNet npz (--json, --record) and of the CSV; calibkit compare"

# The installed calibkit, its ECE against one worked out here with numpy, and its package data.
"$venv/bin/python" - "$venv" <<'EOF' || fail "the checks in Python (above)"
import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np

import calibkit as ck

venv = Path(sys.argv[1]).resolve()
assert Path(ck.__file__).resolve().is_relative_to(venv), f"calibkit imported from {ck.__file__}"

# the CLI's JSON audit of the DenseNet test logits, against top-label ECE by hand (15 bins,
# closed on the right: a confidence c lands in bin ceil(15 c) - 1, and 0 in the first)
data = np.load("densenet40_cifar10_logits.npz")
z, y = data["test_logits"].astype(np.float64), data["test_labels"]
p = np.exp(z - z.max(axis=1, keepdims=True))
p /= p.sum(axis=1, keepdims=True)
conf, correct = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
b = np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14)
n = np.bincount(b, minlength=15)
gap = np.abs(np.bincount(b, correct, 15) - np.bincount(b, conf, 15))
by_hand = gap.sum() / len(y)
audit = json.loads(Path("audit.json").read_text())
assert audit["n"] == 10000, audit["n"]
assert abs(audit["ece"] - by_hand) < 1e-9, (audit["ece"], by_hand)

# a small audit through the Python API: ECE 0.4 by hand (each bin's gap is 0.4)
a = ck.audit([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_boot=50, n_sims=50)
assert abs(a.ece - 0.4) < 1e-12 and a.n == 4, a.ece
assert abs(ck.ece([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1]) - 0.4) < 1e-12

# package data
files = resources.files("calibkit")
schema = json.loads(files.joinpath("record/record.schema.json").read_text("utf-8"))
assert schema["$schema"].endswith("2020-12/schema"), schema.get("$schema")
items = files.joinpath("stated/data/decision_set.jsonl").read_text("utf-8").splitlines()
assert len(items) > 10 and all(json.loads(line)["id"] for line in items)
assert files.joinpath("stated/data/policy.md").read_text("utf-8").strip()
assert "logger" in files.joinpath("engines/log4j2.properties").read_text("utf-8")
assert files.joinpath("py.typed").is_file()
ck.read_record("record.json")  # checked against the shipped schema

# a missing extra names it (torch is not installed here)
ts = ck.TemperatureScaling().fit(z[:200], y[:200])
try:
    ts.as_torch_module()
except ImportError as exc:
    assert "pip install 'calibkit[torch]'" in str(exc), exc
else:
    raise AssertionError("as_torch_module worked without torch")
print(f"ECE {audit['ece']:.6f} of the CLI = numpy's")
EOF
ok "the Python API, the CLI's ECE against numpy, the package data, the torch extra's message"

# A missing extra on the command line: one line on stderr, exit 2, no traceback.
expect_one_line() {
    local want="$1"
    shift
    local rc=0
    "$@" >stdout.txt 2>stderr.txt || rc=$?
    [ "$rc" = 2 ] || fail "$* exited $rc, not 2: $(cat stderr.txt)"
    [ ! -s stdout.txt ] || fail "$* printed on stdout: $(head -3 stdout.txt)"
    [ "$(wc -l <stderr.txt)" = 1 ] || fail "$* printed more than one line: $(cat stderr.txt)"
    grep -qF "$want" stderr.txt || fail "$* did not say $want: $(cat stderr.txt)"
}
expect_one_line "pip install 'calibkit[spark]'" "$venv/bin/calibkit" audit resnet110_c10.csv --engine spark
expect_one_line "pip install 'calibkit[fast]'" env CALIBKIT_KERNEL=numba "$venv/bin/calibkit" audit resnet110_c10.csv
expect_one_line "pip install 'calibkit[llm]'" "$venv/bin/calibkit" stated run \
    "$("$venv/bin/python" -c 'from importlib import resources; print(resources.files("calibkit") / "stated/data/decision_set.jsonl")')" \
    --provider openai --model m --base-url http://127.0.0.1:9 --store replies.sqlite
ok "missing extras (spark, fast, llm): one line naming the extra"

# Shell completion through the installed console script.
export _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION=1
"$venv/bin/calibkit" --show-completion bash >completion.bash || fail "calibkit --show-completion bash"
grep -qF "complete -o default -F _calibkit_completion calibkit" completion.bash \
    || fail "the bash completion script does not complete calibkit: $(cat completion.bash)"
out="$(_CALIBKIT_COMPLETE=complete_bash COMP_WORDS="calibkit au" COMP_CWORD=1 "$venv/bin/calibkit")"
[ "$out" = "audit" ] || fail "completing 'calibkit au' gave '$out', not 'audit'"
unset _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION
ok "shell completion: the bash script, and 'calibkit au' completes to audit"

# ----------------------------------------------------------------------------- the sdist
tar -xzf "$sdist" -C "$work"
unpacked="$work/calibkit-$version"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    missing="$(cd "$root" && git ls-files -- tests examples docs conftest.py CHANGELOG.md \
        | while read -r f; do [ -e "$unpacked/$f" ] || echo "$f"; done)"
    [ -z "$missing" ] || fail "the sdist lacks tracked files its tests need: $missing"
fi
(cd "$unpacked" && PYTHONPATH=src "$python" -m pytest -q -o addopts="" -p no:cacheprovider \
    tests/test_api.py >"$work/sdist-tests.log" 2>&1) \
    || { cat "$work/sdist-tests.log" >&2; fail "the sdist's tests (tests/test_api.py)"; }
ok "the sdist carries the tests and their data; $(tail -1 "$work/sdist-tests.log")"
# the plain closing line (every check above that failed has stopped the script)
echo "check_wheel: $passed passed, 0 failed"
