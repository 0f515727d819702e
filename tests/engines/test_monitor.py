"""ck.monitor: every group audited with the same bins, flagged when its ECE moved beyond noise.

The drift scenario is simulated from a known model: true logits z, labels drawn from softmax(z),
and the reported logits k * z with k = 1 for weeks 1-10 and k = 2 (overconfident) from week 11
on. So the maximum-likelihood temperature of a week is 1 before the drift and 2 after, and only
weeks 11-20 may be flagged. Expected per-group numbers are recomputed week by week with the
array functions (ck.ece, ck.fit_temperature), and the three engines must agree with each other
to the rounding of their sums.
"""

from __future__ import annotations

import datetime
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import calibkit as ck

ENGINES = ("memory", "duckdb", "spark")
MONDAY = datetime.date(2024, 1, 1)  # the first week of the simulation starts on this Monday
N_WEEKS, PER_WEEK, N_CLASSES, DRIFT_AFTER = 20, 4000, 4, 10
WEEKS = [MONDAY + datetime.timedelta(days=7 * w) for w in range(N_WEEKS)]


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _draw_labels(rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
    """One label per row drawn from softmax(z) (inverse CDF)."""
    cdf = np.cumsum(_softmax(z), axis=1)
    return np.minimum((rng.random(z.shape[0])[:, None] > cdf).sum(axis=1), z.shape[1] - 1)


def drifting_weeks(seed: int, *, per_week: int = PER_WEEK, factor: float = 2.0) -> Any:
    """Weeks 0..19 of logits; from week DRIFT_AFTER on the logits are ``factor`` times too big.
    Each row's time is spread uniformly over its week (Monday 00:00 to Sunday 23:59:59)."""
    rng = np.random.default_rng(seed)
    n = N_WEEKS * per_week
    week = np.repeat(np.arange(N_WEEKS), per_week)
    z = rng.normal(0.0, 1.5, (n, N_CLASSES))
    y = _draw_labels(rng, z)
    logits = z * np.where(week < DRIFT_AFTER, 1.0, factor)[:, None]
    seconds = week * 7 * 86400 + rng.integers(0, 7 * 86400, n)
    time = np.datetime64("2024-01-01T00:00:00") + seconds.astype("timedelta64[s]")
    return SimpleNamespace(logits=logits, labels=y, week=week, time=time)


def _table(logits: np.ndarray, labels: np.ndarray, **extra: Any) -> pa.Table:
    columns = {f"logit_{k}": logits[:, k] for k in range(logits.shape[1])}
    return pa.table({**columns, "label": labels, **extra})


def _monitor(data: Any, engine: str, **kw: Any) -> ck.Monitor:
    kw.setdefault("n_boot", 200)
    return ck.monitor(data, engine=engine, **kw)


def _source(engine: str, path: Any, spark: Any) -> Any:
    """What each engine reads: the path (memory, duckdb) or a Spark DataFrame of it."""
    return spark.read.parquet(str(path)) if engine == "spark" else path


# ----------------------------------------------------------------------------- the drift


@pytest.fixture(scope="module")
def drift(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data = drifting_weeks(0)
    data.path = tmp_path_factory.mktemp("monitor") / "weeks.parquet"
    pq.write_table(_table(data.logits, data.labels, timestamp=data.time), data.path)
    return data


@pytest.fixture(scope="module")
def drift_monitors(drift: Any, spark: Any) -> dict[str, ck.Monitor]:
    return {e: _monitor(_source(e, drift.path, spark), e, by="week") for e in ENGINES}


@pytest.mark.parametrize("engine", ENGINES)
def test_drift_is_flagged_from_week_11_and_not_before(
    drift_monitors: dict[str, ck.Monitor], engine: str
) -> None:
    m = drift_monitors[engine]
    assert m.engine == engine
    assert m.by == "week of timestamp"
    assert [g.group for g in m.groups] == WEEKS  # Mondays, as dates, in every engine
    assert all(g.n == PER_WEEK for g in m.groups)
    assert m.reference == "group 2024-01-01"
    assert m.groups[0].band is None and all(g.band is not None for g in m.groups[1:])
    assert [g.moved for g in m.groups] == [False] * DRIFT_AFTER + [True] * (N_WEEKS - DRIFT_AFTER)
    assert [g.group for g in m.flagged] == WEEKS[DRIFT_AFTER:]
    temperatures = np.array([g.temperature for g in m.groups])
    assert np.all(np.abs(temperatures[:DRIFT_AFTER] - 1.0) < 0.15), temperatures
    assert np.all(np.abs(temperatures[DRIFT_AFTER:] - 2.0) < 0.15), temperatures
    assert all(g.temperature_note is None for g in m.groups)
    # Bonferroni over the 19 groups compared with the reference
    assert m.family_level == 0.95
    assert m.level == pytest.approx(1 - 0.05 / 19, abs=1e-15)


def test_each_week_matches_its_own_audit(drift: Any, drift_monitors: dict[str, ck.Monitor]) -> None:
    """Per-group numbers recomputed from the arrays of that week alone."""
    m = drift_monitors["memory"]
    probs = _softmax(drift.logits)
    conf, correct = probs.max(axis=1), probs.argmax(axis=1) == drift.labels
    for w, g in enumerate(m.groups):
        rows = drift.week == w
        assert g.n == rows.sum()
        assert g.n_correct == correct[rows].sum()
        assert g.accuracy == pytest.approx(correct[rows].mean(), abs=1e-15)
        assert g.mean_confidence == pytest.approx(conf[rows].mean(), abs=1e-12)
        assert g.ece == pytest.approx(ck.ece(conf[rows], correct[rows], n_bins=15), abs=1e-12)
        assert g.temperature == pytest.approx(
            ck.fit_temperature(drift.logits[rows], drift.labels[rows]), abs=1e-9
        )
        assert g.interval.low <= g.ece + 1e-12 and g.ece <= g.interval.high + 0.05
        assert 0 < g.noise_floor.mean < 0.05
        if g.band is not None:
            assert g.band.change == pytest.approx(g.ece - m.groups[0].ece, abs=1e-15)
            assert g.moved == (g.band.change < g.band.low or g.band.change > g.band.high)


def test_three_engines_agree_on_every_group(drift_monitors: dict[str, ck.Monitor]) -> None:
    memory = drift_monitors["memory"]
    for engine in ("duckdb", "spark"):
        other = drift_monitors[engine]
        np.testing.assert_array_equal(other.binning.values, memory.binning.values)
        assert [g.group for g in other.groups] == [g.group for g in memory.groups]
        for a, b in zip(memory.groups, other.groups, strict=True):
            assert (b.n, b.n_correct) == (a.n, a.n_correct)
            np.testing.assert_array_equal(b.stats.count, a.stats.count)
            np.testing.assert_allclose(b.stats.sum_conf, a.stats.sum_conf, rtol=1e-12)
            assert b.ece == pytest.approx(a.ece, abs=1e-12)
            assert b.temperature == pytest.approx(a.temperature, abs=1e-9)
            assert b.moved == a.moved
            if a.band is not None:
                assert b.band.change == pytest.approx(a.band.change, abs=1e-12)


def test_no_stable_week_is_flagged_over_seeds() -> None:
    """The same drift with other seeds: weeks 11-20 flagged, weeks 1-10 never."""
    for seed in (1, 2, 3, 4):
        d = drifting_weeks(seed, per_week=3000)
        m = ck.monitor(
            d.logits, d.labels, by=d.week, from_logits=True, temperature=False, n_boot=10
        )
        assert [g.group for g in m.flagged] == list(range(DRIFT_AFTER, N_WEEKS)), seed


def test_family_wise_false_alarm_rate() -> None:
    """Ten stable weeks, 40 replications: a flag anywhere is a false alarm, and alarms are at
    most 5% of runs (expected <= 2 of 40; more than 5 has probability < 0.02). The band is
    conservative (about 1.7% of stable groups fall outside a nominal 95% band), so even without
    the Bonferroni correction only about one run in ten alarms (6 of these 40): the level
    identity is what pins the correction."""
    alarms = 0
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        z = rng.normal(0.0, 1.5, (10 * 2000, N_CLASSES))
        y = _draw_labels(rng, z)
        week = np.repeat(np.arange(10), 2000)
        m = ck.monitor(z, y, by=week, from_logits=True, temperature=False, n_boot=10)
        alarms += bool(m.flagged)
    assert alarms <= 5
    assert m.level == pytest.approx(1 - 0.05 / 9, abs=1e-15)


# ----------------------------------------------------------------------------- weeks, days, months


@pytest.fixture(scope="module")
def around_a_weekend(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """120 rows on Sunday 2024-01-07 (the last at 23:59:59), 80 on Monday 2024-01-08 (the
    first at 00:00:00) and 50 on Wednesday 2024-01-31; as Parquet and as CSV."""
    rng = np.random.default_rng(7)
    sunday = np.datetime64("2024-01-07T00:00:00") + np.sort(rng.integers(0, 86400, 120))
    sunday[-1] = np.datetime64("2024-01-07T23:59:59")
    monday = np.datetime64("2024-01-08T00:00:00") + np.sort(rng.integers(0, 86400, 80))
    monday[0] = np.datetime64("2024-01-08T00:00:00")
    wednesday = np.datetime64("2024-01-31T12:00:00") + np.zeros(50, dtype="timedelta64[s]")
    time = np.concatenate([sunday, monday, wednesday]).astype("datetime64[s]")
    z = rng.normal(0.0, 1.5, (time.size, 3))
    table = _table(z, _draw_labels(rng, z), time=time)
    folder = tmp_path_factory.mktemp("weekend")
    pq.write_table(table, folder / "t.parquet")
    pacsv.write_csv(table, folder / "t.csv")
    return SimpleNamespace(folder=folder, logits=z, labels=table["label"].to_numpy())


@pytest.mark.parametrize("engine", ENGINES)
def test_weeks_start_on_monday(around_a_weekend: Any, engine: str, spark: Any) -> None:
    """Sunday 23:59:59 belongs to the week of Monday 2024-01-01, Monday 00:00:00 starts the
    next; Spark runs in a session time zone other than the process's (Asia/Tokyo, UTC+9),
    where a TIMESTAMP key would come back as Sunday 15:00."""
    d = around_a_weekend
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        m = _monitor(_source(engine, d.folder / "t.parquet", spark), engine, by="week", n_sims=200)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    jan1, jan8, jan29 = (datetime.date(2024, 1, day) for day in (1, 8, 29))
    assert [(g.group, g.n) for g in m.groups] == [(jan1, 120), (jan8, 80), (jan29, 50)]
    assert m.by == "week of time"
    # every group's temperature is fitted (the SQL engines bind group values as parameters)
    sunday = np.arange(120)
    expected = ck.fit_temperature(d.logits[sunday], d.labels[sunday])
    assert m.groups[0].temperature == pytest.approx(expected, abs=1e-9)
    assert all(isinstance(g.temperature, float) for g in m.groups)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize(
    ("by", "expected"),
    [
        ("day", [((2024, 1, 7), 120), ((2024, 1, 8), 80), ((2024, 1, 31), 50)]),
        ("month", [((2024, 1, 1), 250)]),
        ("week", [((2024, 1, 1), 120), ((2024, 1, 8), 80), ((2024, 1, 29), 50)]),
    ],
)
def test_periods_of_a_csv_time_column(
    around_a_weekend: Any, engine: str, by: str, expected: list
) -> None:
    m = _monitor(around_a_weekend.folder / "t.csv", engine, by=by, n_sims=200, temperature=False)
    assert [(g.group, g.n) for g in m.groups] == [(datetime.date(*d), n) for d, n in expected]


def test_a_period_needs_one_time_column(tmp_path: Any) -> None:
    t = np.array(["2024-01-01T00:00:00"] * 4, dtype="datetime64[s]")
    path = tmp_path / "two.parquet"
    pq.write_table(_table(np.zeros((4, 2)), np.array([0, 1, 0, 1]), time=t, date=t), path)
    for engine in ("memory", "duckdb"):
        with pytest.raises(ck.InputError, match="needs the time column: pass time="):
            ck.monitor(path, engine=engine, by="week")
        m = ck.monitor(path, engine=engine, by="week", time="date", n_sims=100, n_boot=10)
        assert m.by == "week of date" and [g.n for g in m.groups] == [4]
    with pytest.raises(ck.InputError, match="neither a column"):
        ck.monitor(path, by="fortnight")


# ----------------------------------------------------------------------------- any column


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """3,001 rows: segments north/south (labels drawn from the model), east (every label 0,
    the model leaning to class 0) and one row "solo" whose label is its top class (so no
    finite temperature); model versions 3 and 7."""
    rng = np.random.default_rng(11)
    n = 3001
    z = rng.normal(0.0, 1.5, (n, 3))
    y = _draw_labels(rng, z)
    segment = np.array(["north", "south", "east"], dtype=object)[rng.integers(0, 3, n)]
    z[segment == "east", 0] += 1.5
    y[segment == "east"] = 0
    segment[-1] = "solo"
    z[-1] = [2.0, 0.1, -1.0]
    y[-1] = 0
    version = np.where(rng.random(n) < 0.4, 3, 7)
    path = tmp_path_factory.mktemp("segments") / "seg.parquet"
    pq.write_table(
        _table(z, y, segment=segment.astype(str), model_version=version.astype(np.int64)), path
    )
    return SimpleNamespace(path=path, logits=z, labels=y, segment=segment, version=version)


@pytest.fixture(scope="module")
def by_segment(segments: Any, spark: Any) -> dict[str, ck.Monitor]:
    return {
        e: _monitor(_source(e, segments.path, spark), e, by="segment", n_sims=500) for e in ENGINES
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_by_a_text_column(segments: Any, by_segment: dict[str, ck.Monitor], engine: str) -> None:
    m = by_segment[engine]
    assert m.by == "segment"
    assert [g.group for g in m.groups] == ["east", "north", "solo", "south"]
    assert m.reference == "group east"
    probs = _softmax(segments.logits)
    conf, correct = probs.max(axis=1), probs.argmax(axis=1) == segments.labels
    for g in m.groups:
        rows = segments.segment == g.group
        assert (g.n, g.n_correct) == (rows.sum(), correct[rows].sum())
        assert g.ece == pytest.approx(ck.ece(conf[rows], correct[rows]), abs=1e-12)
    east = m.groups[0]
    assert set(segments.labels[segments.segment == "east"]) == {0}
    assert east.accuracy == pytest.approx((probs[segments.segment == "east"].argmax(1) == 0).mean())
    assert 0.5 < east.accuracy < 0.9
    # one row: its ECE is |confidence - outcome|; right with a margin, so no finite temperature
    solo = m.groups[2]
    assert solo.n == 1 and solo.n_correct == 1
    assert solo.ece == pytest.approx(1.0 - conf[-1], abs=1e-15)
    assert solo.temperature is None
    assert solo.temperature_note.startswith("the calibration data are separable")
    assert solo.interval.low == solo.interval.high == pytest.approx(solo.ece, abs=1e-15)
    for g in (m.groups[0], m.groups[1], m.groups[3]):
        rows = segments.segment == g.group
        expected = ck.fit_temperature(segments.logits[rows], segments.labels[rows])
        assert g.temperature == pytest.approx(expected, abs=1e-9)
    json.dumps(m.to_dict(), allow_nan=False)
    assert "solo" in str(m)


def test_segment_engines_agree(by_segment: dict[str, ck.Monitor]) -> None:
    memory = by_segment["memory"]
    for engine in ("duckdb", "spark"):
        for a, b in zip(memory.groups, by_segment[engine].groups, strict=True):
            assert (b.group, b.n, b.n_correct, b.moved) == (a.group, a.n, a.n_correct, a.moved)
            assert b.ece == pytest.approx(a.ece, abs=1e-12)
            assert b.temperature_note == a.temperature_note
            if a.temperature is not None:
                assert b.temperature == pytest.approx(a.temperature, abs=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_by_an_integer_column(segments: Any, engine: str, spark: Any) -> None:
    src = _source(engine, segments.path, spark)
    m = _monitor(src, engine, by="model_version", n_sims=500, temperature=False)
    assert [g.group for g in m.groups] == [3, 7]
    assert all(type(g.group) is int for g in m.groups)
    assert [g.n for g in m.groups] == [(segments.version == 3).sum(), (segments.version == 7).sum()]
    assert all(g.temperature is None and g.temperature_note is None for g in m.groups)
    assert m.reference == "group 3"


def test_groups_from_arrays_in_memory(segments: Any) -> None:
    """by= as a list of text, as an int array, as datetimes; the same groups as from the file."""
    z, y = segments.logits, segments.labels
    kw: dict[str, Any] = {"from_logits": True, "n_boot": 20, "n_sims": 200}
    m = ck.monitor(z, y, by=list(segments.segment), **kw)
    assert [(g.group, g.n) for g in m.groups] == [
        (s, int((segments.segment == s).sum())) for s in ("east", "north", "solo", "south")
    ]
    m = ck.monitor(z, y, by=segments.version, **kw)
    assert [g.group for g in m.groups] == [3, 7]
    days = np.where(segments.version == 3, "2024-05-02", "2024-05-01").astype("datetime64[D]")
    m = ck.monitor(z, y, by=days, **kw)
    assert [g.group for g in m.groups] == [datetime.date(2024, 5, 1), datetime.date(2024, 5, 2)]
    assert m.to_dict()["groups"][0]["group"] == "2024-05-01"
    # a group whose labels ignore the logits: no finite temperature, said in a note
    shuffled = y.copy()
    shuffled[segments.version == 3] = np.roll(np.arange(3), 1)[z[segments.version == 3].argmax(1)]
    m = ck.monitor(z, shuffled, by=segments.version, **kw)
    assert m.groups[0].temperature is None
    assert m.groups[0].temperature_note.startswith("the scores do no better than uniform")
    assert isinstance(m.groups[1].temperature, float)


def test_missing_group_values_are_refused(segments: Any, tmp_path: Any, spark: Any) -> None:
    z, y = segments.logits, segments.labels
    floats = np.where(np.arange(y.size) % 1000 == 5, np.nan, 1.0)  # 3 NaN, first at index 5
    with pytest.raises(ck.InputError, match=r"by= has 3 missing groups .*first at index 5"):
        ck.monitor(z, y, by=floats, from_logits=True)
    texts = np.array(["a"] * (y.size - 2) + [None, None], dtype=object)
    with pytest.raises(ck.InputError, match=r"by= has 2 missing groups"):
        ck.monitor(z, y, by=texts, from_logits=True)
    with pytest.raises(ck.InputError, match="one group per prediction"):
        ck.monitor(z, y, by=np.zeros(3), from_logits=True)
    segment = pa.array(["a", None, "b", None, None, "a"])
    path = tmp_path / "nulls.parquet"
    times = pa.array([datetime.datetime(2024, 1, 1)] * 5 + [None], type=pa.timestamp("s"))
    pq.write_table(_table(z[:6], y[:6], segment=segment, time=times), path)
    with pytest.raises(ck.InputError, match="'segment' has 3 missing values"):
        ck.monitor(path, by="segment")
    with pytest.raises(ck.InputError, match="'time' has 1 missing times"):
        ck.monitor(path, by="week")
    for engine in ("duckdb", "spark"):
        src = _source(engine, path, spark)
        with pytest.raises(ck.InputError, match=r"the group \(by=\) is missing .*: 3 rows of 6"):
            ck.monitor(src, engine=engine, by="segment")
        with pytest.raises(ck.InputError, match=r"the group \(by=\) is missing .*: 1 row of 6"):
            ck.monitor(src, engine=engine, by="week")


# ----------------------------------------------------------------------------- the reference


def test_reference_group(drift: Any) -> None:
    """Weeks compared with the last stable week, named as text or as a date: the same bands."""
    for reference in ("2024-03-04", WEEKS[DRIFT_AFTER - 1]):
        m = ck.monitor(drift.path, by="week", reference=reference, n_boot=50)
        assert m.reference == "group 2024-03-04"
        ref = m.groups[DRIFT_AFTER - 1]
        assert ref.band is None and sum(g.band is None for g in m.groups) == 1
        for g in m.groups:
            if g.band is not None:
                assert g.band.change == pytest.approx(g.ece - ref.ece, abs=1e-15)
        assert [g.group for g in m.flagged] == WEEKS[DRIFT_AFTER:]
    m = ck.monitor(drift.path, by="week", reference=WEEKS[-1], n_boot=50)
    # measured from a drifted week, every stable week moved (and no drifted one)
    assert [g.group for g in m.flagged] == WEEKS[:DRIFT_AFTER]


def test_unknown_reference_group(drift: Any) -> None:
    with pytest.raises(ck.InputError, match=r"no group '2024-01-02'; the groups are 2024-01-01, "):
        ck.monitor(drift.path, by="week", reference="2024-01-02", n_boot=10)


def test_reference_record(drift: Any, tmp_path: Any) -> None:
    """A record of week 1 audited on its own: every week (week 1 included) is compared with
    it, week 1 with change 0, and the Bonferroni correction counts 20 groups."""
    week1 = drift.week == 0
    record = ck.calibration_record(
        ck.audit(drift.logits[week1], drift.labels[week1], from_logits=True), model="resnet"
    )
    path = ck.write_record(tmp_path / "week1.json", record)
    for reference in (path, str(path), ck.read_record(path)):
        m = ck.monitor(drift.path, by="week", reference=reference, n_boot=50)
        assert m.reference == "the record of resnet"
        assert all(g.band is not None for g in m.groups)
        assert m.level == pytest.approx(1 - 0.05 / 20, abs=1e-15)
        assert m.groups[0].band.change == pytest.approx(0.0, abs=1e-15)
        np.testing.assert_array_equal(m.reference_stats.count, m.groups[0].stats.count)
        assert [g.group for g in m.flagged] == WEEKS[DRIFT_AFTER:]


@pytest.mark.parametrize("audit_kw", [{"n_bins": 10}, {"closed": "left"}, {"strategy": "quantile"}])
def test_reference_record_with_other_bins_is_refused(drift: Any, audit_kw: dict) -> None:
    week1 = drift.week == 0
    record = ck.calibration_record(
        ck.audit(drift.logits[week1], drift.labels[week1], from_logits=True, **audit_kw)
    )
    with pytest.raises(ck.InputError, match="the reference record bins differently"):
        ck.monitor(drift.path, by="week", reference=record, n_boot=10)


def test_reference_record_of_another_event_is_refused(drift: Any) -> None:
    """Same bins, but the record bins P(label = 1) of a binary model, not a top-label
    confidence."""
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 1, 500)
    record = ck.calibration_record(ck.audit(p, (rng.random(500) < p).astype(int)))
    assert record["data"]["event"] == "binary"
    with pytest.raises(ck.InputError, match=r"another event \(binary\) than the monitor"):
        ck.monitor(drift.path, by="week", reference=record, n_boot=10)


# ----------------------------------------------------------------------------- quantile bins


def test_quantile_edges_are_shared_and_equal_across_engines(drift: Any, spark: Any) -> None:
    probs = ck.softmax(drift.logits)  # the monitor's own softmax: edges equal to the last bit
    conf, correct = probs.max(axis=1), probs.argmax(axis=1) == drift.labels
    table = ck.reliability_bins(conf, correct, n_bins=10, strategy="quantile", interval=None)
    expected = np.array([table.rows[0].lo] + [r.hi for r in table.rows])
    # the quantiles of the drifted weeks alone are other edges: sharing is not a no-op
    late = ck.reliability_bins(
        conf[drift.week >= DRIFT_AFTER],
        correct[drift.week >= DRIFT_AFTER],
        n_bins=10,
        strategy="quantile",
        interval=None,
    )
    assert not np.allclose(expected, [late.rows[0].lo] + [r.hi for r in late.rows], atol=1e-3)
    kw = {"by": "week", "n_bins": 10, "strategy": "quantile", "temperature": False, "n_sims": 500}
    monitors = {e: _monitor(_source(e, drift.path, spark), e, **kw) for e in ENGINES}
    # memory: bit for bit np.quantile's edges; DuckDB and Spark compute the softmax in SQL,
    # so their order statistics (and edges) may differ in the last bit, never more
    np.testing.assert_array_equal(monitors["memory"].binning.values, expected)
    for engine, m in monitors.items():
        assert m.binning.strategy == "quantile", engine
        np.testing.assert_allclose(m.binning.values, expected, rtol=0, atol=1e-15)
        assert m.to_dict()["binning"]["edges"] == m.binning.values.tolist()
        for g, g0 in zip(m.groups, monitors["memory"].groups, strict=True):
            np.testing.assert_array_equal(g.stats.edges, m.binning.values)
            np.testing.assert_array_equal(g.stats.count, g0.stats.count)
            rows = drift.week == WEEKS.index(g.group)
            assert g.ece == pytest.approx(
                ck.ece(conf[rows], correct[rows], edges=expected), abs=1e-12
            )
    # all rows together fill the deciles equally
    total = sum(g.stats.count for g in monitors["memory"].groups)
    np.testing.assert_array_equal(total, np.full(10, conf.size // 10))


# ----------------------------------------------------------------------------- what is shown


def test_str_to_dict_and_verdict(drift_monitors: dict[str, ck.Monitor]) -> None:
    m = drift_monitors["duckdb"]
    verdict = m.verdict()
    assert verdict.startswith("10 of 19 groups moved beyond noise from group 2024-01-01: ")
    assert verdict.endswith("and 2 more; first at 2024-03-11.")
    text = str(m)
    lines = text.splitlines()
    for w, week in enumerate(WEEKS):
        row = next(line for line in lines if line.lstrip().startswith(week.isoformat()))
        assert row.rstrip().endswith("MOVED") == (w >= DRIFT_AFTER)
        assert f"{m.groups[w].ece:.4f}" in row and f"{m.groups[w].temperature:.3f}" in row
    assert "reference" in lines[1]
    assert "M = 15 uniform bins shared by every group" in text
    assert text.endswith(verdict)
    d = json.loads(json.dumps(m.to_dict(), allow_nan=False))
    assert d["by"] == "week of timestamp" and d["engine"] == "duckdb"
    assert [g["group"] for g in d["groups"]] == [w.isoformat() for w in WEEKS]
    assert d["flagged"] == [w.isoformat() for w in WEEKS[DRIFT_AFTER:]]
    assert d["verdict"] == verdict
    assert d["groups"][0]["change"] is None
    assert d["groups"][12]["change"]["moved"] is True
    assert d["groups"][12]["temperature"] == m.groups[12].temperature
    assert d["binning"] == {
        "strategy": "uniform",
        "edges": np.linspace(0, 1, 16).tolist(),
        "closed": "right",
    }


def test_verdict_without_flags(drift: Any) -> None:
    stable = drift.week < DRIFT_AFTER
    m = ck.monitor(
        drift.logits[stable],
        drift.labels[stable],
        by=drift.week[stable],
        from_logits=True,
        temperature=False,
        n_boot=10,
    )
    assert m.flagged == ()
    assert m.verdict() == (
        "no group moved beyond noise from group 0 (9 compared; family-wise level 95%)."
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_nan_group_values_are_refused(tmp_path: Any, engine: str, spark: Any) -> None:
    """NaN is a value to SQL (its own GROUP BY group, hidden from Parquet statistics), not a
    null: each engine still refuses it, with the count."""
    path = tmp_path / "nan_groups.parquet"
    pq.write_table(
        pa.table({"p": [0.2, 0.7, 0.9, 0.4, 0.6], "y": [0, 1, 1, 0, 1],
                  "v": [1.0, float("nan"), 2.0, 1.0, float("nan")]}),
        path,
    )  # fmt: skip
    data = spark.read.parquet(str(path)) if engine == "spark" else path
    with pytest.raises(ck.InputError, match="2 .*NaN|NaN.*2"):
        ck.monitor(data, by="v", engine=engine, columns={"probs": "p", "label": "y"})
