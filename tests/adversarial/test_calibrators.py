"""Bad-input campaign, calibrators and outputs: malformed calibrator files refused by the field
they break, deep JSON refused before parsing, outputs that would replace an input refused, and
a ``calibkit apply --out`` killed mid-write leaving the target absent or old, never partial."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.recalibrate.base import _REGISTRY

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_helpers import assert_bad_input  # noqa: E402

runner = CliRunner()
SRC = Path(ck.__file__).resolve().parents[1]
FAST = ["--n-boot", "50", "--n-sims", "50"]
#: Which input each kind is fitted on in these tests.
PROBS = {"isotonic", "histogram", "beta"}


def invoke(*args: object, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


def logits(n: int = 300, c: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, c))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return z, y


@pytest.fixture(scope="module")
def fitted() -> dict[str, dict]:
    """``to_dict()`` of every kind, fitted on three classes."""
    z, y = logits()
    out = {}
    for kind in sorted(_REGISTRY):
        x = ck.softmax(z) if kind in PROBS else z
        if kind == "group":  # groups a and b get their own maps, c (20 rows) the pooled one
            groups = np.repeat(["a", "b", "c"], [150, 130, 20])
            out[kind] = ck.GroupCalibrator(min_group_size=100).fit(x, y, groups=groups).to_dict()
            continue
        out[kind] = ck.make_calibrator(kind).fit(x, y).to_dict()
    return out


def put(data: dict, path: tuple, value: object) -> dict:
    """A copy of ``data`` with the field at ``path`` set to ``value`` (``...``: deleted)."""
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- item 16: fields

MALFORMED = [
    # the file itself
    ("temperature", ("kind",), ["temperature"], 'unknown calibrator kind ["temperature"]'),
    ("temperature", ("kind",), 3, "unknown calibrator kind 3"),
    ("temperature", ("format_version",), True, "format version true is not supported"),
    ("temperature", ("format_version",), "1", 'format version "1" is not supported'),
    ("temperature", ("format_version",), 1.0, "format version 1.0 is not supported"),
    ("temperature", ("extra",), 1, "unknown field(s) extra"),
    ("temperature", ("params",), [], "params must be an object, got []"),
    ("temperature", ("state",), None, "state must be an object, got null"),
    # temperature
    ("temperature", ("params", "from_logits"), "false", 'params.from_logits must be true or false, got "false"'),
    ("temperature", ("params", "from_logits"), 0, "params.from_logits must be true or false, got 0"),
    ("temperature", ("params", "method"), "fast", "params.method must be one of 'newton', 'golden', got \"fast\""),
    ("temperature", ("params", "speed"), 1, "params has unknown field(s) speed (known: from_logits, method, clip, check_logits)"),
    ("temperature", ("params", "method"), ..., "params is missing method"),
    ("temperature", ("state", "n_classes"), 1, "state.n_classes must be at least 2, got 1"),
    ("temperature", ("state", "n_classes"), 2.5, "state.n_classes must be an integer, got 2.5"),
    ("temperature", ("state", "n_classes"), "3", 'state.n_classes must be an integer, got "3"'),
    ("temperature", ("state", "n_classes"), True, "state.n_classes must be an integer, got true"),
    ("temperature", ("state", "n_classes"), float("inf"), "state.n_classes must be an integer, got Infinity"),
    ("temperature", ("state", "n_evaluations"), 10**400, "state.n_evaluations must be at most 9223372036854775807, got an integer of about 401 digits"),
    ("temperature", ("state", "temperature"), 10**400, "state.temperature must be a finite number, got an integer of about 401 digits"),
    ("temperature", ("state", "temperature"), float("nan"), "state.temperature must be a finite number, got NaN"),
    ("temperature", ("state", "temperature"), -1.0, "state.temperature must be positive, got -1.0"),
    ("temperature", ("state", "converged"), "true", 'state.converged must be true or false, got "true"'),
    # platt
    ("platt", ("params", "smooth_targets"), "yes", 'params.smooth_targets must be true or false, got "yes"'),
    ("platt", ("params", "multiclass"), "ova", "params.multiclass must be one of 'ovr', 'top-label', got \"ova\""),
    ("platt", ("state", "maps", 0, "a"), "1.5", 'state.maps[0].a must be a number, got "1.5"'),
    ("platt", ("state", "maps", 1, "n_iter"), -1, "state.maps[1].n_iter must be at least 0, got -1"),
    ("platt", ("state", "maps", 2, "b"), ..., "state.maps[2] is missing b"),
    ("platt", ("state", "input_ndim"), 3, "state.input_ndim must be at most 2, got 3"),
    ("platt", ("state", "maps"), {}, "state.maps must be a list, got {}"),
    ("platt", ("state", "n_classes"), 4, "needs 4 map(s), the file holds 3"),
    # isotonic
    ("isotonic", ("params", "out_of_bounds"), 3, "params.out_of_bounds must be text, got 3"),
    ("isotonic", ("state", "maps", 0, "x", 0), "0", 'state.maps[0].x[0] must be a number, got "0"'),
    ("isotonic", ("state", "maps", 0, "y", 0), 1.5, "state.maps[0].y[0] must be at most 1.0, got 1.5"),
    ("isotonic", ("state", "maps", 1, "x"), [], "state.maps[1]: an isotonic map needs equally long x"),
    # histogram
    ("histogram", ("params", "n_bins"), 0, "params.n_bins must be at least 1, got 0"),
    ("histogram", ("params", "n_bins"), True, "params.n_bins must be an integer, got true"),
    ("histogram", ("params", "strategy"), None, "params.strategy must be text, got null"),
    ("histogram", ("state", "maps", 0, "counts", 0), -1, "state.maps[0].counts[0] must be at least 0, got -1"),
    ("histogram", ("state", "maps", 0, "counts", 0), 0.5, "state.maps[0].counts[0] must be an integer, got 0.5"),
    ("histogram", ("state", "maps", 0, "values", 1), -0.5, "state.maps[0].values[1] must be at least 0.0, got -0.5"),
    # beta
    ("beta", ("params", "parameters"), "abc", "params.parameters must be one of 'abm', 'ab', 'am', got \"abc\""),
    ("beta", ("state", "maps", 0, "m"), 2.0, "state.maps[0].m must be at most 1.0, got 2.0"),
    ("beta", ("state", "maps", 0, "m"), "x", 'state.maps[0].m must be a number or null, got "x"'),
    ("beta", ("state", "maps", 0, "a"), -1.0, "state.maps[0]: a beta map needs finite a, b >= 0"),
    # vector
    ("vector", ("params", "l2"), -1.0, "params.l2 must be at least 0.0, got -1.0"),
    ("vector", ("params", "from_logits"), "false", 'params.from_logits must be true or false, got "false"'),
    ("vector", ("state", "weights"), [["1"]], 'state.weights[0] must be a number, got ["1"]'),
    ("vector", ("state", "bias"), [0.0], "expected weights of shape (3,) and bias of shape (3,)"),
    # matrix
    ("matrix", ("params", "off_diagonal"), True, "params.off_diagonal must be a number, got true"),
    ("matrix", ("state", "weights", 1), [1.0], "got weights with 3 rows of lengths [1, 3]"),
    ("matrix", ("state", "weights", 0, 0), None, "state.weights[0][0] must be a number, got null"),
    ("matrix", ("state", "n_iter"), 1.5, "state.n_iter must be an integer, got 1.5"),
    # group: its own fields, then the calibrators it holds, each checked as a calibrator file
    ("group", ("params", "min_group_size"), 0, "params.min_group_size must be at least 1, got 0"),
    ("group", ("params", "base"), {"kind": "magic", "params": {}}, "params.base.kind must be one of beta, histogram"),
    ("group", ("params", "base"), {"kind": "temperature", "params": {"speed": 1}}, "params.base.params is missing from_logits, method, clip, check_logits"),
    ("group", ("state", "group_type"), "float", "state.group_type must be one of 'text', 'integer', 'boolean'"),
    ("group", ("state", "groups", 1), "a", "state.groups must be distinct and in sorted order"),
    ("group", ("state", "sizes"), [150, 130], "state lists must have one entry per group; got groups 3, sizes 2"),
    ("group", ("state", "fallback", 2), None, "a group has either its own map or the reason it has none"),
    ("group", ("state", "maps", 0), [], "state.maps[0] must be an object, got []"),
    ("group", ("state", "maps", 0, "state", "temperature"), -1.0, "state.maps[0]: malformed 'temperature' calibrator: state.temperature must be positive, got -1.0"),
    ("group", ("state", "pooled", "kind"), "platt", "state.pooled: malformed 'platt' calibrator"),
    ("group", ("state", "fallback", 0), "small", "a group has either its own map or the reason it has none"),
]  # fmt: skip


@pytest.mark.parametrize(
    "kind, path, value, message",
    MALFORMED,
    ids=[f"{k}:{'.'.join(map(str, p))}={str(v)[:12]}" for k, p, v, _ in MALFORMED],
)
def test_each_malformed_field_is_named(fitted, kind, path, value, message):
    with pytest.raises(ck.InputError, match="^load calibrator: ") as info:
        ck.Calibrator.from_dict(put(fitted[kind], path, value))
    assert message in str(info.value)


def test_every_kind_declares_each_setting_and_its_own_output_passes(fitted):
    for kind, klass in _REGISTRY.items():
        assert list(klass._params_spec) == klass._param_names(), kind
        assert klass._state_spec.check(fitted[kind]["state"], "state") is None, kind
        again = ck.Calibrator.from_dict(json.loads(json.dumps(fitted[kind])))
        assert again.to_dict() == fitted[kind], kind


def test_a_calibration_record_copy_loads():
    """A record's calibrator (with its objective) is a calibrator file too."""
    z, y = logits()
    ts = ck.TemperatureScaling().fit(z, y)
    r = ck.calibration_record(ck.audit(ts.predict_proba(z), y, n_boot=50, n_sims=50), calibrator=ts)
    assert ck.Calibrator.from_dict(r["calibrator"]).temperature_ == ts.temperature_
    with pytest.raises(
        ck.InputError, match=r"calibration_record: calibrator: malformed .*from_logits"
    ):
        ck.calibration_record(
            ck.audit(ts.predict_proba(z), y, n_boot=50, n_sims=50),
            calibrator=put(ts.to_dict(), ("params", "from_logits"), "no"),
        )


@pytest.mark.parametrize(
    "text, message",
    [
        ('"temperature": 1' + "0" * 400, "state.temperature must be a finite number, got an integer of about 401 digits"),
        ('"temperature": 1e400', "state.temperature must be a finite number, got Infinity"),
        ('"n_classes": Infinity', "not strict JSON (Infinity is not a JSON number)"),
        ('"n_classes": NaN', "not strict JSON (NaN is not a JSON number)"),
        ('"n_classes": 1' + "0" * 5000, "not strict JSON"),
    ],
)  # fmt: skip
def test_numbers_json_cannot_hold_in_a_file(tmp_path, fitted, text, message):
    """As written in the file: 400 digits, 1e400 (parsed as infinity), the constants."""
    field = text.split(":")[0] + ":"
    original = json.dumps(fitted["temperature"])
    start = original.index(field)
    end = original.index(",", start)
    path = tmp_path / "t.json"
    path.write_text(original[:start] + text + original[end:])
    with pytest.raises(ck.InputError, match=f"^load calibrator: '{path}'") as info:
        ck.load_calibrator(path)
    assert message in str(info.value)


def test_apply_refuses_from_logits_as_a_string(tmp_path, fitted):
    """``"false"`` is truthy: the old apply read logits as probabilities without a word."""
    z, _ = logits(50)
    data = tmp_path / "z.parquet"
    pq.write_table(pa.table({f"logit_{k}": z[:, k] for k in range(3)}), data)
    cal = tmp_path / "t.json"
    cal.write_text(json.dumps(put(fitted["temperature"], ("params", "from_logits"), "false")))
    out = tmp_path / "out.parquet"
    assert_bad_input(
        invoke("apply", cal, data, "--out", out, "--logits", "logit_*"),
        'params.from_logits must be true or false, got "false"',
    )
    cal.write_text(json.dumps(put(fitted["temperature"], ("state", "n_evaluations"), 10**400)))
    assert_bad_input(
        invoke("apply", cal, data, "--out", out, "--logits", "logit_*"),
        "state.n_evaluations must be at most 9223372036854775807",
    )
    assert not out.exists()


# ----------------------------------------------------------------------------- item 1: depth


@pytest.mark.parametrize("depth", [100, 5_000, 200_000])
@pytest.mark.parametrize("shape", ["arrays", "objects"])
def test_deep_json_is_refused_before_parsing(tmp_path, fitted, depth, shape):
    text = "[" * depth + "]" * depth if shape == "arrays" else '{"a":' * depth + "1" + "}" * depth
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    message = f"JSON nested {depth} levels deep; calibkit reads at most 64 levels"
    with pytest.raises(ck.InputError, match=f"^load calibrator: '{deep}': {message}"):
        ck.load_calibrator(deep)
    z, y = logits(60)
    data = tmp_path / "z.npz"
    np.savez(data, logits=z, labels=y)
    assert_bad_input(invoke("apply", deep, data, "--out", tmp_path / "o.csv"), message)
    assert_bad_input(
        invoke("audit", data, "--record", tmp_path / "r.json", "--calibrator", deep, *FAST),
        message,
    )
    # nested inside an otherwise valid file
    nested = put(fitted["temperature"], ("state", "temperature"), "@")
    deep.write_text(json.dumps(nested).replace('"@"', text))
    inside = f"JSON nested {depth + 2} levels deep"  # within the file's object and its state
    assert_bad_input(invoke("apply", deep, data, "--out", tmp_path / "o.csv"), inside)
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "r.json").exists()


def test_a_file_too_large_is_refused_without_parsing_it(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(2**40)  # a sparse terabyte: reading it whole would take the machine
    with pytest.raises(ck.InputError, match="big.json' is larger than 67,108,864 bytes"):
        ck.load_calibrator(big)


# ----------------------------------------------------------------------------- property


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def leaf_paths(node, prefix=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaf_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaf_paths(value, (*prefix, i))
    yield prefix


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_input_gives_an_input_error_or_a_calibrator(tmp_path, fitted, data):
    kind = data.draw(st.sampled_from(sorted(fitted)))
    document = fitted[kind]
    paths = [p for p in leaf_paths(document) if p]
    path = data.draw(st.sampled_from(paths))
    mutated = put(document, path, data.draw(JSON))
    try:
        ck.Calibrator.from_dict(mutated)
    except ck.InputError:
        pass
    target = tmp_path / "c.json"
    target.write_bytes(data.draw(st.binary(max_size=200)))
    with pytest.raises(ck.InputError):
        ck.load_calibrator(target)
    target.write_text(json.dumps(data.draw(JSON)))
    with pytest.raises(ck.InputError):
        ck.load_calibrator(target)


# ----------------------------------------------------------------------------- item 4: outputs


@pytest.fixture()
def files(tmp_path, fitted) -> dict[str, Path]:
    """An .npz and a Parquet file of logits and labels, a calibrator, a record, and links."""
    z, y = logits(400)
    npz = tmp_path / "x.npz"
    np.savez(npz, logits=z, labels=y)
    table = {f"logit_{k}": z[:, k] for k in range(3)}
    parquet = tmp_path / "x.parquet"
    pq.write_table(pa.table({**table, "label": y, "group": np.arange(400) % 2}), parquet)
    cal = tmp_path / "t.json"
    cal.write_text(json.dumps(fitted["temperature"]))
    record = tmp_path / "r.json"
    rec = ck.calibration_record(ck.audit(ck.softmax(z), y, n_boot=50, n_sims=50))
    ck.write_record(record, rec)
    (tmp_path / "link.parquet").symlink_to(parquet)
    (tmp_path / "link.png").symlink_to(parquet)
    return {"npz": npz, "parquet": parquet, "cal": cal, "record": record}


NPZ = ["--logits", "logits", "--label", "labels"]
OVERWRITES = [
    ("audit {npz} --record {npz}", "audit: --record '{npz}' is the input file '{npz}'"),
    ("audit {npz} --html ./x.npz", "audit: --html 'x.npz' is the input file '{npz}'"),
    ("audit {parquet} --record link.parquet", "audit: --record 'link.parquet' is the input file"),
    ("audit {npz} --record {cal} --calibrator {cal}", "audit: --record '{cal}' is the input file '{cal}'"),
    ("audit {npz} --record o.json --html ./o.json", "audit: --html and --record both name 'o.json'"),
    ("fit {npz} --method temperature --out {npz}", "fit: --out '{npz}' is the input file"),
    ("fit {npz} --method temperature --out t2.json --html ./x.npz", "fit: --html 'x.npz' is the input file"),
    ("fit {npz} --method temperature --out o.json --html o.json", "fit: --html and --out both name"),
    ("fit {parquet} --method temperature --engine duckdb --out link.parquet", "fit: --out 'link.parquet' is the input file"),
    ("apply {cal} {parquet} --out link.parquet", "apply: --out 'link.parquet' is the input file '{parquet}'"),
    ("apply {cal} {parquet} --out ./x.parquet", "apply: --out 'x.parquet' is the input file"),
    ("decide {npz} --wrong-cost 10 --defer-cost 1 --html ./x.npz", "decide: --html 'x.npz' is the input file"),
    ("monitor {parquet} --by group --plot link.png", "monitor: --plot 'link.png' is the input file '{parquet}'"),
    ("monitor {parquet} --by group --reference-record {record} --plot {record}", "monitor: --plot '{record}' is the input file"),
]  # fmt: skip


@pytest.mark.parametrize(
    "command, message", OVERWRITES, ids=[c.split(" --")[0] for c, _ in OVERWRITES]
)
def test_an_output_that_is_an_input_is_refused(files, tmp_path, monkeypatch, command, message):
    monkeypatch.chdir(tmp_path)
    args = command.format(**files).split()
    if args[0] in ("audit", "fit", "decide") and args[1].endswith(".npz"):
        args += NPZ
    before = {name: sha256(path) for name, path in files.items()}
    assert_bad_input(invoke(*args), message.format(**files))
    assert {name: sha256(path) for name, path in files.items()} == before
    assert not any((tmp_path / name).exists() for name in ("o.json", "t2.json"))


def test_a_glob_given_to_an_engine_counts_as_its_files(files, tmp_path):
    glob = tmp_path / "*.parquet"
    assert_bad_input(
        invoke("audit", glob, "--engine", "duckdb", "--record", tmp_path / "x.parquet", *FAST),
        "audit: --record",
    )
    before = sha256(files["parquet"])
    result = invoke("audit", glob, "--engine", "duckdb", "--record", tmp_path / "a.json", *FAST)
    assert result.exit_code == 0, result.output
    assert ck.read_record(tmp_path / "a.json")["data"]["n"] == 800  # x.parquet and its link
    assert sha256(files["parquet"]) == before


# ----------------------------------------------------------------------------- item 17: SIGKILL

#: Runs ``calibkit apply`` with pyarrow's Parquet writer stopped halfway: the first half of the
#: rows is written to the temporary file, then the child says so and waits to be killed.
STALLED_APPLY = r"""
import sys, time
import pyarrow.parquet as pq

ready, sys.argv = sys.argv[1], ["calibkit", *sys.argv[2:]]

def stalled(table, where, **kwargs):
    with pq.ParquetWriter(where, table.schema) as writer:
        writer.write_table(table.slice(0, table.num_rows // 2))
        open(ready, "w").close()
        time.sleep(600)

pq.write_table = stalled
from calibkit.cli import main

main()
"""


@pytest.mark.parametrize("before", ["absent", "old"])
def test_apply_killed_mid_write_leaves_the_old_target_and_no_temporary_after(
    tmp_path, fitted, before
):
    n = 400_000
    z, y = logits(n)
    data = tmp_path / "big.parquet"
    pq.write_table(pa.table({**{f"logit_{k}": z[:, k] for k in range(3)}, "label": y}), data)
    cal = tmp_path / "t.json"
    cal.write_text(json.dumps(fitted["temperature"]))
    out = tmp_path / "out.parquet"
    if before == "old":
        pq.write_table(pa.table({"prob_1": [0.5]}), out)
    old = out.read_bytes() if out.exists() else None
    ready = tmp_path / "half-written"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    args = ["apply", str(cal), str(data), "--out", str(out), "--logits", "logit_*"]
    child = subprocess.Popen(
        [sys.executable, "-c", STALLED_APPLY, str(ready), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(1200):  # wait for the child to reach the middle of its write
            if ready.exists() or child.poll() is not None:
                break
            time.sleep(0.1)
        assert ready.exists(), child.communicate()[1].decode()
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".calibkit-tmp")]
    assert len(left) == 1 and left[0].name.startswith(f".out.parquet.{child.pid}.")
    assert left[0].stat().st_size > 0  # killed with half the rows written, beside the target
    assert (out.read_bytes() if out.exists() else None) == old  # absent or old, never partial

    result = invoke(*args)  # the next write replaces the target and removes the dead temporary
    assert result.exit_code == 0, result.output
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".calibkit-tmp")]
    written = pq.read_table(out)
    assert written.num_rows == n and written.column_names == ["prob_0", "prob_1", "prob_2", "label"]
    expected = ck.Calibrator.from_dict(fitted["temperature"]).predict_proba(z)
    got = np.column_stack([written[f"prob_{k}"].to_numpy() for k in range(3)])
    np.testing.assert_array_equal(got, expected)
