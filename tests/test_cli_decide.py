"""calibkit decide: the policy table from a file, --json, the optional three actions and
guaranteed risk, exit 2 with one stderr line on bad input, and no file written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.decide.policy import act_forecast
from calibkit.recalibrate.split import stratified_split
from cli_helpers import assert_bad_input

EXAMPLES = Path(__file__).parents[1] / "examples" / "data"
DENSENET = EXAMPLES / "densenet40_cifar10_logits.npz"
DENSENET_COLUMNS = ["--logits", "test_logits", "--label", "test_labels"]
COSTS = ["--wrong-cost", "10", "--defer-cost", "1"]
POLICIES = [
    "act on everything",
    "defer everything",
    "Chow's rule",
    "chosen on validation",
]
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, ["decide", *map(str, args)])


def write_csv(path: Path, columns: dict[str, np.ndarray]) -> Path:
    table = pa.table({k: pa.array(np.asarray(v)) for k, v in columns.items()})
    pcsv.write_csv(table, path)
    return path


def confidence_csv(path: Path, n: int = 400, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    conf = np.round(rng.uniform(0.5, 1.0, n), 3)
    correct = (rng.random(n) < conf**2).astype(int)  # overconfident
    return write_csv(path, {"confidence": conf, "correct": correct})


# ----------------------------------------------------------------------------- DenseNet-40


@pytest.fixture(scope="module")
def densenet_json() -> dict:
    result = invoke(DENSENET, *DENSENET_COLUMNS, *COSTS, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_densenet_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke(DENSENET, *DENSENET_COLUMNS, *COSTS)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for policy in [*POLICIES, "Chow after temperature scaling"]:
        assert policy in out, policy
    assert "choosing on 5000 rows, reporting on 5000" in out
    assert "AURC" in out and "E-AURC" in out and "(T = " in out
    assert "three actions" not in out and "guaranteed risk" not in out
    assert list(tmp_path.iterdir()) == []  # writes nothing


def test_densenet_json(densenet_json):
    d = densenet_json
    assert d["kind"] == "logits"
    assert d["split"]["n_choose"] == 5000 and d["split"]["n_report"] == 5000
    table = d["policy_table"]
    rows = {r["key"]: r for r in table["rows"]}
    assert list(rows) == ["act_all", "defer_all", "chow", "chosen", "chow_calibrated"]
    assert rows["defer_all"]["cost"] == 1.0 and rows["defer_all"]["risk"] is None
    assert rows["act_all"]["cost"] == pytest.approx(10 * table["eval_error_rate"], abs=1e-12)
    assert table["temperature"] > 1 and table["calibrated_by"] == "temperature scaling"
    assert table["risk_coverage"]["e_aurc"] > 0
    assert d["actions"] is None and d["guarantee"] is None


def test_densenet_json_follows_the_library(densenet_json):
    """The command's numbers are the library's on the same stratified split."""
    with np.load(DENSENET) as f:
        z, y = f["test_logits"], f["test_labels"]
    choose, report = stratified_split(y, calibration_fraction=0.5, seed=0)
    conf, out = act_forecast(z, y, from_logits=True)
    choice = ck.choose_threshold(conf[choose], out[choose], 10, 1)
    rows = {r["key"]: r for r in densenet_json["policy_table"]["rows"]}
    assert rows["chosen"]["threshold"] == choice.threshold
    assert rows["chosen"]["choice_cost"] == pytest.approx(choice.cost)
    rc = ck.risk_coverage(conf[report], out[report])
    assert densenet_json["policy_table"]["risk_coverage"]["aurc"] == pytest.approx(rc.aurc)
    assert densenet_json["policy_table"]["temperature"] == pytest.approx(
        ck.fit_temperature(z[choose], y[choose])
    )


def test_seed_changes_the_split_and_same_seed_same_bytes():
    a = invoke(DENSENET, *DENSENET_COLUMNS, *COSTS, "--json", "--seed", "3")
    b = invoke(DENSENET, *DENSENET_COLUMNS, *COSTS, "--json", "--seed", "3")
    c = invoke(DENSENET, *DENSENET_COLUMNS, *COSTS, "--json", "--seed", "4")
    assert a.exit_code == b.exit_code == c.exit_code == 0
    assert a.stdout == b.stdout
    assert a.stdout != c.stdout


def test_calibration_fraction():
    result = invoke(DENSENET, *DENSENET_COLUMNS, *COSTS, "--json", "--calibration-fraction", "0.3")
    assert result.exit_code == 0, result.output
    split = json.loads(result.stdout)["split"]
    assert (split["n_choose"], split["n_report"]) == (3000, 7000)


# ----------------------------------------------------------------------------- small CSVs


def test_confidence_csv(tmp_path):
    path = confidence_csv(tmp_path / "preds.csv")
    before = sorted(tmp_path.iterdir())
    result = invoke(path, *COSTS)
    assert result.exit_code == 0, result.output
    for policy in POLICIES:
        assert policy in result.stdout
    assert "Chow after" not in result.stdout  # no logits, no temperature scaling
    assert sorted(tmp_path.iterdir()) == before

    result = invoke(path, *COSTS, "--json")
    d = json.loads(result.stdout)
    assert d["kind"] == "confidence" and d["split"]["stratified_by"] == "outcome"
    assert d["split"]["n_choose"] + d["split"]["n_report"] == 400
    rows = {r["key"]: r for r in d["policy_table"]["rows"]}
    assert "chow_calibrated" not in rows
    assert d["policy_table"]["calibrated_risk_coverage"] is None


def test_five_predictions_csv(tmp_path):
    # two copies of five predictions (the third and fifth wrong): each half gets one (split by
    # outcome)
    conf = [0.95, 0.9, 0.8, 0.7, 0.6] * 2
    correct = [1, 1, 0, 1, 0] * 2
    path = write_csv(tmp_path / "five.csv", {"confidence": conf, "correct": correct})
    result = invoke(path, *COSTS, "--json")
    assert result.exit_code == 0, result.output
    rows = {r["key"]: r for r in json.loads(result.stdout)["policy_table"]["rows"]}
    assert rows["defer_all"]["cost"] == 1.0
    assert rows["act_all"]["cost"] == pytest.approx(4.0)  # 2 of 5 wrong, 10 each


def test_probability_csv(tmp_path):
    rng = np.random.default_rng(1)
    probs = ck.softmax(rng.normal(0, 2, (300, 3)))
    labels = np.array([rng.choice(3, p=p) for p in probs])
    columns = {f"prob_{k}": probs[:, k] for k in range(3)}
    path = write_csv(tmp_path / "probs.csv", {**columns, "label": labels})
    result = invoke(path, *COSTS, "--json")
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["kind"] == "probs" and d["split"]["stratified_by"] == "label"
    assert len(d["policy_table"]["rows"]) == 4


def test_binary_logit_csv_keeps_the_curve(tmp_path):
    rng = np.random.default_rng(2)
    s = rng.normal(0, 3, 600)
    y = (rng.random(600) < ck.sigmoid(s / 2)).astype(int)
    path = write_csv(tmp_path / "scores.csv", {"score": s, "label": y})
    result = invoke(path, "--logits", "score", *COSTS, "--json")
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)["policy_table"]
    assert table["rows"][-1]["key"] == "chow_calibrated"
    # two classes: temperature scaling keeps the order, so the curve is the same
    assert table["calibrated_risk_coverage"]["aurc"] == table["risk_coverage"]["aurc"]
    text = " ".join(invoke(path, "--logits", "score", *COSTS).stdout.split())
    assert "(the same curve)" in text


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("costs", "match"),
    [
        (["--wrong-cost", "1", "--defer-cost", "10"], "deferring must cost less than a wrong"),
        (["--wrong-cost", "1", "--defer-cost", "1"], "deferring must cost less than a wrong"),
        (["--wrong-cost", "-10", "--defer-cost", "1"], "l_wrong must be a positive number"),
        (["--wrong-cost", "10", "--defer-cost", "-1"], "l_defer must be a positive number"),
        (["--wrong-cost", "10", "--defer-cost", "0"], "l_defer must be a positive number"),
        (["--wrong-cost", "0", "--defer-cost", "1"], "l_wrong must be a positive number"),
        (["--wrong-cost", "nan", "--defer-cost", "1"], "l_wrong must be a positive number"),
        (["--defer-cost", "1"], "--wrong-cost is required"),
        (["--wrong-cost", "10"], "--defer-cost is required"),
        ([], "--wrong-cost is required"),
    ],
)
def test_bad_costs(tmp_path, costs, match):
    path = confidence_csv(tmp_path / "preds.csv")
    assert_bad_input(invoke(path, *costs), match)


def test_ask_costs_go_together(tmp_path):
    path = confidence_csv(tmp_path / "preds.csv")
    assert_bad_input(invoke(path, *COSTS, "--ask-cost", "0.5"), "--ask-cost and --ask-wrong-cost")
    assert_bad_input(
        invoke(path, *COSTS, "--ask-wrong-cost", "3"), "--ask-cost and --ask-wrong-cost"
    )


@pytest.mark.parametrize(
    ("option", "match"),
    [
        (["--target-risk", "1.5"], "--target-risk must lie strictly between 0 and 1"),
        (["--target-risk", "0"], "--target-risk must lie strictly between 0 and 1"),
        (["--target-risk", "0.1", "--delta", "0"], "--delta must lie strictly between 0 and 1"),
        (["--calibration-fraction", "1"], "calibration_fraction must be a number strictly"),
    ],
)
def test_bad_options(tmp_path, option, match):
    path = confidence_csv(tmp_path / "preds.csv")
    assert_bad_input(invoke(path, *COSTS, *option), match)


def test_bad_file(tmp_path):
    assert_bad_input(invoke(tmp_path / "missing.csv", *COSTS), "missing.csv")
    bad = write_csv(tmp_path / "bad.csv", {"confidence": [0.9, 1.4, 0.7], "correct": [1, 0, 1]})
    assert_bad_input(
        invoke(bad, *COSTS), "decide: confidence (column 'confidence') must lie in [0, 1]"
    )


def test_help_lists_decide():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "decide" in result.stdout
    result = runner.invoke(app, ["decide", "--help"])
    assert result.exit_code == 0 and "--wrong-cost" in result.stdout


# ----------------------------------------------------------------------------- optional parts


def test_three_actions(tmp_path):
    actions = pytest.importorskip("calibkit.decide.actions")
    args = [DENSENET, *DENSENET_COLUMNS, *COSTS, "--ask-cost", "0.5", "--ask-wrong-cost", "4"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "three actions" in result.stdout and "on the reporting half: cost" in result.stdout
    d = json.loads(invoke(*args, "--json").stdout)
    with np.load(DENSENET) as f:
        z, y = f["test_logits"], f["test_labels"]
    choose, report = stratified_split(y, calibration_fraction=0.5, seed=0)
    conf, out = act_forecast(z, y, from_logits=True)
    choice = actions.choose_actions(
        conf[choose], out[choose], l_wrong=10, l_defer=1, l_ask=0.5, l_ask_wrong=4
    )
    assert d["actions"]["act_threshold"] == choice.act_threshold
    assert d["actions"]["ask_threshold"] == choice.ask_threshold
    check = d["actions"]["on_reporting_half"]
    assert check["n"] == report.size
    total = check["share_acted"] + check["share_asked"] + check["share_escalated"]
    assert total == pytest.approx(1.0)


def test_three_actions_bad_ask_cost(tmp_path):
    pytest.importorskip("calibkit.decide.actions")
    path = confidence_csv(tmp_path / "preds.csv")
    result = invoke(path, *COSTS, "--ask-cost", "-1", "--ask-wrong-cost", "2")
    assert_bad_input(result, "l_ask")


def test_guaranteed_risk(tmp_path):
    guarantee = pytest.importorskip("calibkit.decide.guarantee")
    args = [DENSENET, *DENSENET_COLUMNS, *COSTS, "--target-risk", "0.02", "--delta", "0.05"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "guaranteed risk" in result.stdout and "exchangeable" in result.stdout
    d = json.loads(invoke(*args, "--json").stdout)
    with np.load(DENSENET) as f:
        z, y = f["test_logits"], f["test_labels"]
    choose, report = stratified_split(y, calibration_fraction=0.5, seed=0)
    conf, out = act_forecast(z, y, from_logits=True)
    g = guarantee.guaranteed_threshold(conf[choose], out[choose], target_risk=0.02, delta=0.05)
    assert d["guarantee"]["threshold"] == g.threshold
    check = d["guarantee"]["on_reporting_half"]
    acted = conf[report] >= g.threshold
    assert check["n_acted"] == int(acted.sum())
    assert check["risk"] == pytest.approx(1 - out[report][acted].mean())


# ----------------------------------------------------------------------------- HTML = terminal


def _html(tmp_path: Path, name: str, *args: object) -> str:
    page = tmp_path / name
    result = invoke(*args, "--html", page)
    assert result.exit_code == 0, result.output
    return page.read_text(encoding="utf-8")


def test_html_shows_every_section_the_terminal_shows(tmp_path):
    path = confidence_csv(tmp_path / "preds.csv", n=600)
    extra = ["--ask-cost", "0.5", "--ask-wrong-cost", "4", "--target-risk", "0.2"]
    plain = _html(tmp_path, "plain.html", path, *COSTS)
    full = _html(tmp_path, "full.html", path, *COSTS, *extra)
    assert full != plain
    for section in ('id="actions"', 'id="guarantee"', 'id="actions-table"'):
        assert section in full and section not in plain
    text = invoke(path, *COSTS, *extra).stdout
    d = json.loads(invoke(path, *COSTS, *extra, "--json").stdout)
    # the numbers the terminal prints for both parts are on the page
    g, held = d["guarantee"], d["guarantee"]["on_reporting_half"]
    for shown in (
        f"upper bound {g['bound']:.4f}",
        f"coverage {held['coverage']:.4f}, risk {held['risk']:.4f}",
        f"cost {d['actions']['on_reporting_half']['cost']:.4f} per case",
        "exchangeable with the calibration data",
    ):
        assert shown in " ".join(text.split()), shown
        assert shown in full, shown


# ----------------------------------------------------------------------------- binary costs

BINARY_COSTS = ["--false-positive-cost", "1", "--false-negative-cost", "20"]


def binary_csv(path: Path, n: int = 600, seed: int = 3, logits: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    s = rng.normal(-1, 3, n)
    y = (rng.random(n) < ck.sigmoid(s)).astype(int)
    column = {"logit_1": s} if logits else {"p_positive": ck.sigmoid(s)}
    return write_csv(path, {**column, "label": y})


@pytest.mark.parametrize("logits", [False, True])
def test_binary_costs_follow_the_library(tmp_path, logits):
    path = binary_csv(tmp_path / "binary.csv", logits=logits)
    result = invoke(path, *BINARY_COSTS, "--json")
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["policy_table"] is None and d["binary_policy"] is not None
    table = pcsv.read_csv(path).to_pydict()
    scores = np.array(table["logit_1" if logits else "p_positive"])
    y = np.array(table["label"])
    choose, report = stratified_split(y, calibration_fraction=0.5, seed=0)
    expected = ck.binary_policy_table(
        scores[choose],
        y[choose],
        scores[report],
        y[report],
        l_false_positive=1,
        l_false_negative=20,
        from_logits=logits,
    ).to_dict()
    assert d["binary_policy"] == expected
    assert d["binary_policy"]["bayes_threshold"] == pytest.approx(1 / 21)


def test_binary_costs_in_the_terminal_and_the_page(tmp_path):
    path = binary_csv(tmp_path / "binary.csv")
    result = invoke(path, *BINARY_COSTS)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for policy in ("flag nothing", "flag everything", "argmax (P >= 0.5)", "Bayes threshold"):
        assert policy in out
    assert "a false positive costs 1, a false negative 20 (Bayes threshold 0.04762)" in " ".join(
        out.split()
    )
    assert "policy table" not in out  # no --wrong-cost: no act-or-defer table
    page = _html(tmp_path, "binary.html", path, *BINARY_COSTS)
    assert 'id="binary-table"' in page and "Bayes threshold (calibrated P)" in page
    both = invoke(path, *BINARY_COSTS, *COSTS, "-q")
    assert both.exit_code == 0, both.output
    lines = both.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("act when confidence >= ")
    assert lines[1].startswith("flag when P(y = 1) >= ")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--false-positive-cost", "1"], "--false-positive-cost and --false-negative-cost go"),
        (["--false-negative-cost", "20"], "--false-positive-cost and --false-negative-cost go"),
        ([*BINARY_COSTS, "--wrong-cost", "10"], "--defer-cost is required"),
        ([*BINARY_COSTS, "--ask-cost", "1", "--ask-wrong-cost", "2"], "--ask-cost needs"),
        (
            ["--false-positive-cost", "0", "--false-negative-cost", "20"],
            "l_false_positive must be a positive number",
        ),
    ],
)
def test_bad_binary_costs(tmp_path, args, match):
    assert_bad_input(invoke(binary_csv(tmp_path / "b.csv"), *args), match)


def test_binary_costs_need_a_binary_model(tmp_path):
    conf = confidence_csv(tmp_path / "preds.csv")
    assert_bad_input(
        invoke(conf, *BINARY_COSTS), "gives a confidence that each prediction is right"
    )
    rng = np.random.default_rng(1)
    probs = ck.softmax(rng.normal(0, 2, (90, 3)))
    columns = {f"prob_{k}": probs[:, k] for k in range(3)}
    three = write_csv(tmp_path / "three.csv", {**columns, "label": np.arange(90) % 3})
    assert_bad_input(invoke(three, *BINARY_COSTS), "need a binary model, but three.csv")


# ----------------------------------------------------------------------------- forms, digits


def test_a_confidence_column_of_p_of_class_one_warns_once(tmp_path):
    rng = np.random.default_rng(3)
    p = ck.sigmoid(rng.normal(-1, 3, 400))
    path = write_csv(tmp_path / "p.csv", {"confidence": p, "correct": (rng.random(400) < p)})
    args = [path, *COSTS, "--ask-cost", "0.5", "--ask-wrong-cost", "4", "--target-risk", "0.2"]
    result = invoke(*args, "-q")
    assert result.exit_code == 0, result.output
    [warning] = result.stderr.splitlines()
    share = np.mean(p < 0.05)
    assert warning.startswith(f"calibkit: warning: decide: {share:.0%} of the confidences")
    assert "pass it with --probs COLUMN and the labels with --label COLUMN" in warning
    same = write_csv(tmp_path / "p2.csv", {"p_positive": p, "label": (rng.random(400) < p)})
    assert invoke(same, *COSTS, "-q").stderr == ""  # read as probabilities: no warning


def test_a_saturated_threshold_is_not_printed_as_one(tmp_path):
    rng = np.random.default_rng(0)
    conf = 1 - 10.0 ** rng.uniform(-9, -6, 400)
    correct = (rng.random(400) < 0.97).astype(int)
    path = write_csv(tmp_path / "saturated.csv", {"confidence": conf, "correct": correct})
    d = json.loads(invoke(path, *COSTS, "--json").stdout)
    chosen = next(r for r in d["policy_table"]["rows"] if r["key"] == "chosen")["threshold"]
    assert 1 - 1e-6 < chosen < 1
    gap = f"{1 - chosen:.2g}".replace("e-0", "e-")
    verdict = invoke(path, *COSTS, "-q").stdout
    assert verdict.startswith(f"act when confidence >= 1 - {gap} (chosen on")
    assert f"1 - {gap}" in " ".join(invoke(path, *COSTS).stdout.split())
