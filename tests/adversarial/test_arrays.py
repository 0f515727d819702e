"""Arrays a careless or hostile caller hands the Python API: masked arrays, long doubles,
absurd bin counts, labels beyond int64. Each is a clear InputError or the correct number."""

from __future__ import annotations

import re

import numpy as np
import pytest

import calibkit as ck
from calibkit import InputError


@pytest.mark.parametrize(
    "call",
    [
        lambda x, y: ck.ece(x, y, n_bins=2),
        lambda x, y: ck.reliability_bins(x, y, n_bins=2),
        lambda x, y: ck.audit(x, y, n_boot=10, n_sims=10),
        lambda x, y: ck.brier(x, y),
    ],
)
def test_masked_confidence_is_refused_with_the_fix(call) -> None:
    x = np.ma.masked_array([0.1, 5.0, 0.6, 0.9, 0.7], mask=[0, 1, 0, 0, 0])
    with pytest.raises(InputError, match=r"masked array with 1 masked entry, first at index 1"):
        call(x, np.array([0, 0, 1, 1, 1]))


def test_masked_nan_and_masked_outcome_are_refused() -> None:
    with pytest.raises(InputError, match="confidence is a masked array"):
        ck.ece(np.ma.masked_array([0.1, np.nan], mask=[0, 1]), [0, 1])
    with pytest.raises(InputError, match="outcome is a masked array with 2 masked entries"):
        ck.ece([0.5, 0.5, 0.5], np.ma.masked_array([0, 1, 1], mask=[0, 1, 1]))


def test_masked_array_without_masked_entries_is_its_data() -> None:
    x = [0.1, 0.2, 0.6, 0.9, 0.7]
    y = [0, 0, 1, 1, 1]
    # by hand, 2 bins: (0.1 + 0.2 - 0) / 5 + |2.2 - 3| / 5 = 0.06 + 0.16
    assert ck.ece(np.ma.masked_array(x), y, n_bins=2) == pytest.approx(0.22, abs=1e-15)
    assert ck.ece(np.ma.masked_array(x, mask=False), y, n_bins=2) == ck.ece(x, y, n_bins=2)


@pytest.mark.parametrize("n", [5, 300_000])  # below and above the compiled-kernel threshold
def test_long_double_input_equals_float64(n: int) -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 1, n)
    y = (rng.uniform(0, 1, n) < p).astype(int)
    wide = p.astype(np.longdouble)
    assert ck.ece(wide, y) == ck.ece(p, y)
    assert ck.brier(wide, y) == ck.brier(p, y)


def test_long_double_beyond_float64_is_refused() -> None:
    if np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("this platform's long double is float64")  # e.g. Windows, some ARM builds
    x = np.array([0.0, np.longdouble("1e400")], dtype=np.longdouble)
    with pytest.raises(InputError, match="beyond the float64 range, first at index 1"):
        ck.fit_temperature(x, [0, 1])


@pytest.mark.parametrize(
    "call",
    [
        lambda: ck.ece([0.2, 0.8], [0, 1], n_bins=2**40),
        lambda: ck.reliability_bins([0.2, 0.8], [0, 1], n_bins=2**40),
        lambda: ck.audit(np.array([0.2, 0.8]), [0, 1], n_bins=2**40),
        lambda: ck.HistogramBinning(n_bins=2**40).fit([0.2, 0.8], [0, 1]),
        lambda: ck.bin_edges(n_bins=1_000_001),
    ],
)
def test_absurd_bin_counts_are_refused_before_allocating(call) -> None:
    with pytest.raises(InputError, match="calibkit accepts at most 1,000,000 bins"):
        call()


def test_a_million_bins_still_work() -> None:
    assert ck.ece([0.25, 0.75], [0, 1], n_bins=1_000_000) == pytest.approx(0.25)


def test_too_many_edges_are_refused() -> None:
    with pytest.raises(InputError, match="edges has 1,000,002 values"):
        ck.ece([0.2, 0.8], [0, 1], edges=np.linspace(0, 1, 1_000_002))


@pytest.mark.parametrize("label", [1e20, -1e20, 3.0e18])
def test_a_huge_float_label_is_shown_as_itself(label: float) -> None:
    shown = re.escape(f"{label:g}.")
    with pytest.raises(InputError, match=rf"first at index 1: {shown}"):
        ck.audit(np.array([0.2, 0.8]), np.array([0, label]))
    with pytest.raises(InputError, match=rf"must lie in 0\.\.2 .* first at index 0: {shown}"):
        ck.audit(np.full((2, 3), 1 / 3), np.array([label, 0]))


@pytest.mark.parametrize("call", [lambda p: ck.ece(p, [0, 1, 1]), lambda p: ck.audit(p, [0, 1, 1])])
def test_percentages_get_the_divide_by_100_hint(call) -> None:
    with pytest.raises(InputError, match=r"look like percentages \(from 20 to 80\): divide"):
        call(np.array([20.0, 80.0, 55.0]))


def test_a_one_d_forecast_with_multiclass_labels_says_what_to_pass() -> None:
    with pytest.raises(
        InputError,
        match=r"The labels hold 10 classes \(0\.\.9\) but a 1-D forecast is binary: pass the "
        r"\(N, 10\) class probabilities, or, for the forecast of one class c, the outcome "
        r"labels == c\.",
    ):
        ck.audit(np.array([0.2, 0.3, 0.1]), [3, 9, 0])


@pytest.mark.parametrize("engine", ["memory", "stream", "duckdb"])
@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ({"prob": "p"}, r"columns= has no role 'prob'; the roles are format, label, probs"),
        ({"confidence": 3}, r"columns\['confidence'\] must be a column name; got 3\."),
        (["p"], r"columns= must be a mapping of roles to column names"),
    ],
)
def test_columns_with_an_unknown_role_or_a_bad_name_is_refused(
    tmp_path, engine, columns, match
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"p": [0.2, 0.8], "label": [0, 1]}), path)
    with pytest.raises(InputError, match=match):
        ck.audit(str(path), engine=engine, columns=columns)
    with pytest.raises(InputError, match=match):
        ck.monitor(str(path), by="label", columns=columns)
