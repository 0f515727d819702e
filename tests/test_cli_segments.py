"""``calibkit segments FILE --features a,b``: the library's search on the file's columns,
rendered; bad columns refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calibkit.cli import app
from calibkit.segments import find_miscalibrated_segments

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_helpers import assert_bad_input  # noqa: E402

runner = CliRunner()
FAST = ["--n-sims", "1000", "--n-boot", "100"]


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def predictions(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """A CSV of 4,000 top-label confidences, calibrated except in region 'north', where the
    predictions are right 0.15 less often than stated."""
    rng = np.random.default_rng(11)
    n = 4000
    conf = rng.uniform(0.5, 1.0, n)
    region = rng.choice(["north", "south", "east", "west"], n)
    frame = pd.DataFrame(
        {
            "confidence": conf,
            "correct": (rng.random(n) < conf - 0.15 * (region == "north")).astype(int),
            "region": region,
            "age": rng.uniform(18, 90, n).round(1),
        }
    )
    path = tmp_path_factory.mktemp("segments") / "predictions.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_the_command_finds_and_confirms_the_weak_region(predictions):
    path, frame = predictions
    result = invoke("segments", path, "--features", "region,age", *FAST)
    assert result.exit_code == 0, result.output
    assert "region = north" in result.stdout and "CONFIRMED" in result.stdout
    assert "1 of 1 segments found on the search half held up" in result.stdout
    # the same numbers as the library on the same columns
    found = find_miscalibrated_segments(
        frame["confidence"].to_numpy(),
        frame["correct"].to_numpy(),
        {"region": frame["region"].to_numpy(), "age": frame["age"].to_numpy()},
        n_sims=1000,
        n_boot=100,
    )
    shown = json.loads(invoke("segments", path, "--features", "region,age", "--json", *FAST).stdout)
    assert shown == json.loads(json.dumps(found.to_dict()))
    quiet = invoke("segments", path, "--features", "region,age", "--quiet", *FAST)
    assert quiet.stdout.strip() == found.verdict()


def test_options_reach_the_search(predictions):
    path, _ = predictions
    data = json.loads(
        invoke(
            "segments", path, "--features", "region", "--depth", "1", "--min-size", "300",
            "--max-segments", "3", "--bins", "5", "--level", "0.9", "--seed", "4", "--json", *FAST,
        ).stdout
    )  # fmt: skip
    settings = data["settings"]
    assert (settings["depth"], settings["min_size"], settings["max_segments"]) == (1, 300, 3)
    assert (settings["n_bins"], settings["level"], settings["seed"]) == (5, 0.9, 4)
    wide = invoke("segments", path, "--features", "region", "--wide", *FAST)
    assert wide.exit_code == 0 and "search gap" in wide.stdout


@pytest.mark.parametrize(
    "options, message",
    [
        (["--features", "region,zone"], "segments: 'PATH' has no column 'zone'; columns: confidence, correct, region, age"),
        (["--features", ","], "--features names no column"),
        (["--features", "region", "--categorical", "age"], "categorical names 'age', which is not a feature"),
        (["--features", "region", "--depth", "3"], "depth must be 1 or 2"),
        (["--features", "region", "--quiet", "--json"], "--quiet and --json both choose"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line(predictions, options, message):
    path, _ = predictions
    result = invoke("segments", path, *options, *FAST)
    assert_bad_input(result, message.replace("PATH", str(path)))


def test_a_feature_with_missing_values_is_refused_by_column_and_row(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("confidence,correct,site\n0.9,1,a\n0.8,0,\n0.7,1,b\n")
    result = invoke("segments", path, "--features", "site", *FAST)
    assert_bad_input(result, "column 'site' has 1 missing value (empty cells), first at row 1")
