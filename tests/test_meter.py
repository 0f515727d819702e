"""ck.CalibrationMeter: the audit of batches seen one at a time equals ck.audit of them all."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck

torch = pytest.importorskip("torch")  # the tensor tests need it; the rest run on numpy too

FIELDS = ("ece", "mce", "rmsce", "debiased_squared_ce", "brier", "nll", "accuracy")


def _data(n=3000, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes)) * 2.0
    p = ck.softmax(logits)
    y = np.array([rng.choice(classes, p=row) for row in p])
    return logits, p, y


def _metered(probs, labels, size=700, weights=None, **kwargs):
    meter = ck.CalibrationMeter(**{k: v for k, v in kwargs.items() if k != "from_logits"})
    for i in range(0, len(labels), size):
        w = None if weights is None else weights[i : i + size]
        meter.update(
            probs[i : i + size],
            labels[i : i + size],
            from_logits=kwargs.get("from_logits", False),
            sample_weight=w,
        )
    return meter


def _same_audit(a, b):
    for field in FIELDS:
        assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-12, abs=1e-15), field
    np.testing.assert_array_equal(a.table.count, b.table.count)
    assert a.ece_interval.low == pytest.approx(b.ece_interval.low, rel=1e-9)
    assert a.ece_interval.high == pytest.approx(b.ece_interval.high, rel=1e-9)
    assert a.noise_floor.mean == pytest.approx(b.noise_floor.mean, rel=1e-9)
    assert a.tests[0].statistic == pytest.approx(b.tests[0].statistic, rel=1e-9)
    if b.auc is None:
        assert a.auc is None
    else:  # the grid's AUC within the bound it states of the exact one
        assert abs(a.auc - b.auc) <= a.auc_error + 1e-12


def test_top_label_meter_equals_audit_of_the_concatenated_batches():
    logits, p, y = _data()
    a = _metered(p, y).compute()
    b = ck.audit(p, y)
    _same_audit(a, b)
    assert a.classwise_ece == pytest.approx(b.classwise_ece, rel=1e-12)
    assert a.n_classes == 4 and a.kind == "top-label"
    # logits: the same forecasts; nll from the logits themselves
    c = _metered(logits, y, from_logits=True).compute()
    _same_audit(c, ck.audit(logits, y, from_logits=True))


def test_binary_meter_with_explicit_edges_and_weights():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=2500)
    y = (rng.uniform(size=2500) < p**1.3).astype(int)
    edges = ck.bin_edges(p[:500], n_bins=8, strategy="quantile")
    _same_audit(_metered(p, y, edges=edges).compute(), ck.audit(p, y, edges=edges))
    w = rng.integers(0, 4, size=2500).astype(float)
    a = _metered(p, y, weights=w).compute()
    b = ck.audit(p, y, sample_weight=w)
    _same_audit(a, b)
    # integer weights: the numbers of the data with each row repeated that many times
    rep = np.repeat(np.arange(2500), w.astype(int))
    assert a.ece == pytest.approx(ck.ece(p[rep], y[rep]), rel=1e-12)


def test_a_confidence_of_one_is_in_the_last_bin():
    meter = ck.CalibrationMeter(n_bins=10)
    meter.update(np.array([1.0, 1.0, 0.05]), np.array([1, 1, 0]))
    a = meter.compute()
    assert a.table.count.tolist() == [1] + [0] * 8 + [2]
    assert a.ece == pytest.approx(0.05 / 3)  # the two 1.0s are right: only 0.05 misses


def test_tensors_on_any_dtype_with_grad_give_the_numpy_numbers():
    logits, p, y = _data(n=1200, classes=3, seed=5)
    reference = _metered(p.astype(np.float32), y).compute()
    meter = ck.CalibrationMeter()
    for i in range(0, 1200, 400):
        t = torch.tensor(p[i : i + 400], dtype=torch.float32, requires_grad=True)
        meter.update(t, torch.tensor(y[i : i + 400]))
    _same_audit(meter.compute(), reference)
    # bfloat16 logits: widened exactly to float32, then the float64 path
    half = torch.tensor(logits, dtype=torch.bfloat16)
    m16 = ck.CalibrationMeter()
    m16.update(half, torch.tensor(y), from_logits=True)
    widened = half.float().numpy()
    assert m16.compute().ece == pytest.approx(ck.audit(widened, y, from_logits=True).ece, rel=1e-12)


def test_merge_reset_and_state_dict_round_trip():
    _, p, y = _data(n=900, seed=2)
    whole = _metered(p, y)
    first, second = _metered(p[:400], y[:400]), _metered(p[400:], y[400:])
    merged = first.merge(second)
    assert merged.n == 900
    for name, values in whole.state.items():
        np.testing.assert_allclose(merged.state[name], values, rtol=1e-12, atol=1e-12)
    restored = ck.CalibrationMeter()
    restored.load_state_dict(merged.state_dict())
    assert restored.compute().ece == merged.compute().ece
    merged.reset()
    assert merged.n == 0 and repr(merged) == "CalibrationMeter(empty)"
    with pytest.raises(ck.InputError, match="no forecasts to audit"):
        merged.compute()


def test_notes_say_what_a_meter_leaves_out():
    _, p, y = _data(n=600)
    a = _metered(p, y).compute()
    assert any("Hosmer-Lemeshow deciles at boundaries of a fine logit grid" in n for n in a.notes)
    assert any("a meter does not keep" in n for n in a.notes)
    assert any("AUC from a logit grid" in n for n in a.notes)
    assert a.distinct is None
    assert a.calibration_slope is not None and "a meter sees each batch once" in str(
        a.calibration_slope
    )


def test_bad_use_is_refused_with_a_message():
    with pytest.raises(ck.InputError, match="strategy='quantile' needs two passes"):
        ck.CalibrationMeter(strategy="quantile")
    meter = ck.CalibrationMeter()
    meter.update(np.array([0.2, 0.7]), np.array([0, 1]))
    with pytest.raises(ck.InputError, match="top-label forecasts of 3 classes, the meter binary"):
        meter.update(np.full((2, 3), 1 / 3), np.array([0, 2]))
    with pytest.raises(ck.InputError, match="this batch carries sample weights"):
        meter.update(np.array([0.4]), np.array([1]), sample_weight=np.array([2.0]))
    with pytest.raises(ck.InputError, match="confidence must lie in|must lie in"):
        meter.update(np.array([1.2]), np.array([1]))
    with pytest.raises(ck.InputError, match="the meters bin differently"):
        meter.merge(ck.CalibrationMeter(n_bins=10))
    assert meter.n == 2  # nothing refused was added


def test_sync_all_reduces_in_a_gloo_group(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    _, p, y = _data(n=500, seed=7)
    meter = _metered(p, y)
    before = {k: a.copy() for k, a in meter.state.items()}
    assert meter.sync() is meter  # not initialised: nothing happens
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1
    )
    try:
        meter.sync()
        for name, values in before.items():
            np.testing.assert_array_equal(meter.state[name], values)
            assert (meter.state[name].dtype, meter.state[name].shape) == (
                values.dtype,
                values.shape,
            )
        empty = ck.CalibrationMeter().sync()  # a process without batches stays empty
        assert empty.n == 0
    finally:
        dist.destroy_process_group()


def test_the_torch_page_runs():
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "torch.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0
