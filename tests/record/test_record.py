"""The calibration record: schema, round trip, fingerprint, tamper detection, error messages."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import calibkit as ck
from calibkit.record import build as record_module
from calibkit.record import (
    calibration_record,
    fingerprint_array,
    read_record,
    record_schema,
    record_stats,
    validate_record,
    verify_record,
    write_record,
)
from calibkit.record import schema as _schema

EXAMPLES = Path(__file__).parents[2] / "examples" / "data"
FAST = {"n_boot": 100, "n_sims": 100}


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(record_schema())


def synthetic(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, n)
    return p, (rng.random(n) < p).astype(np.int64)


@pytest.fixture(scope="module")
def small():
    p, y = synthetic()
    audit = ck.audit(p, y, **FAST)
    document = calibration_record(
        audit,
        scores=p,
        labels=y,
        scores_kind="probs",
        model="toy",
        outcome_definition="y = 1",
        population="synthetic",
        data_window="seed 0",
    )
    return audit, p, y, document


@pytest.fixture(scope="module")
def densenet():
    data = np.load(EXAMPLES / "densenet40_cifar10_logits.npz")
    z, y = data["test_logits"], data["test_labels"]
    ts = ck.TemperatureScaling().fit(data["val_logits"], data["val_labels"])
    audit = ck.audit(ts.predict_proba(z), y, **FAST)
    document = calibration_record(
        audit,
        scores=z,
        labels=y,
        scores_kind="logits",
        model="DenseNet-40",
        checkpoint="cifar10",
        outcome_definition="top-1 prediction equals the CIFAR-10 label",
        population="CIFAR-10 test images",
        data_window="official test split",
        split={"method": "given: Guo et al. 2017 validation/test", "seed": None, "n_val": 5000},
        calibrator=ts,
        notes="temperature fitted on val_logits",
    )
    return audit, z, y, ts, document


# ----------------------------------------------------------------------------- the schema


def test_schema_is_a_valid_draft_2020_12_schema():
    schema = record_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "http" not in schema["$id"]  # no URL in an HTML report that embeds records


def test_schema_uses_only_keywords_the_builtin_validator_implements():
    known = _schema.SUPPORTED_KEYWORDS | _schema.ANNOTATIONS

    def walk(node, where):
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    walk(sub, f"{where}.{name}")
                continue
            assert key in known, f"{where}: keyword {key} is not implemented"
            if isinstance(value, dict):
                walk(value, f"{where}.{key}")

    walk(record_schema(), "schema")


def test_the_schema_ships_with_the_package():
    from importlib import resources

    assert resources.files("calibkit.record").joinpath("record.schema.json").is_file()


def test_synthetic_record_is_schema_valid(small):
    _, _, _, document = small
    validator().validate(document)
    assert validate_record(document) is document


def test_densenet_record_is_schema_valid(densenet):
    *_, document = densenet
    validator().validate(document)


# ----------------------------------------------------------------------------- contents


def test_record_holds_the_contract_and_the_audit(densenet):
    audit, z, y, ts, r = densenet
    assert r["format"] == "calibkit.calibration-record" and r["format_version"] == 1
    assert r["context"] == {
        "model": "DenseNet-40",
        "checkpoint": "cifar10",
        "outcome_definition": "top-1 prediction equals the CIFAR-10 label",
        "population": "CIFAR-10 test images",
        "data_window": "official test split",
        "notes": "temperature fitted on val_logits",
    }
    assert r["data"]["n"] == 10000 and r["data"]["event"] == "top-label"
    assert r["data"]["n_classes"] == 10 and r["data"]["scores_kind"] == "logits"
    assert r["split"]["method"].startswith("given") and r["split"]["seed"] is None
    assert r["split"]["n_val"] == 5000
    # the calibrator: kind, params, fitted state, objective
    c = r["calibrator"]
    assert c["kind"] == "temperature" and c["params"] == ts.get_params()
    assert c["state"]["temperature"] == ts.temperature_
    assert "log-likelihood" in c["objective"]
    # binning, counts and sums: the audit's BinStats exactly
    assert r["binning"]["edges"] == audit.stats.edges.tolist()
    assert r["binning"]["closed"] == "right" and r["binning"]["n_bins"] == 15
    assert r["bins"]["count"] == audit.stats.count.tolist()
    assert record_stats(r) == audit.stats
    assert r["bins"]["acc"][-1] == pytest.approx(audit.table.rows[-1].acc)
    # metrics with intervals, noise floor
    m = r["metrics"]
    assert m["ece"]["value"] == audit.ece
    assert (m["ece"]["interval"]["low"], m["ece"]["interval"]["high"]) == (
        audit.ece_interval.low,
        audit.ece_interval.high,
    )
    assert m["nll"]["value"] == audit.nll and m["brier"]["value"] == audit.brier
    assert m["brier"]["decomposition"]["reliability"] == audit.brier_decomposition.reliability
    lo, hi = ck.binomial_interval(round(audit.accuracy * 10000), 10000, method="wilson")
    assert m["accuracy"]["interval"]["low"] == pytest.approx(lo)
    assert m["accuracy"]["interval"]["high"] == pytest.approx(hi)
    assert r["noise_floor"]["p95"] == audit.noise_floor.p95
    assert r["within_noise"] == audit.within_noise and r["verdict"] == audit.verdict()
    assert [t["name"] for t in r["tests"]] == [t.name for t in audit.tests]


def test_software_versions_and_utc_time(small):
    import platform

    import scipy

    *_, r = small
    assert r["software"] == {
        "calibkit": ck.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["created"])
    made = datetime.strptime(r["created"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - made).total_seconds()) < 600


def test_fingerprint_is_the_sha256_of_the_array_bytes(densenet):
    _, z, y, _, r = densenet
    f = r["data"]["fingerprint"]
    assert f["algorithm"] == "sha256"
    assert f["scores"] == {
        "dtype": "<f4",
        "shape": [10000, 10],
        "sha256": hashlib.sha256(z.tobytes()).hexdigest(),
    }
    assert f["labels"]["sha256"] == hashlib.sha256(y.tobytes()).hexdigest()


def test_fingerprint_is_computed_chunk_by_chunk(monkeypatch):
    x = np.arange(10_000, dtype=np.float64).reshape(1000, 10)
    whole = hashlib.sha256(x.tobytes()).hexdigest()
    monkeypatch.setattr(record_module, "_CHUNK", 1000)  # 80 chunks for a contiguous array
    assert fingerprint_array(x)["sha256"] == whole
    strided = x[:, ::2]  # non-contiguous: copied a block of rows at a time
    assert not strided.flags.c_contiguous
    assert fingerprint_array(strided)["sha256"] == hashlib.sha256(strided.tobytes()).hexdigest()
    assert fingerprint_array(strided)["shape"] == [1000, 5]
    assert fingerprint_array(x.astype(np.float32))["dtype"] == "<f4"
    assert fingerprint_array(x.astype(np.float32))["sha256"] != whole


def test_record_without_data_has_no_fingerprint(small):
    audit, p, y, _ = small
    r = calibration_record(audit)
    assert r["data"]["fingerprint"] is None and r["calibrator"] is None and r["split"] is None
    assert r["context"] == dict.fromkeys(r["context"])
    validator().validate(r)
    with pytest.raises(ck.InputError, match="no data fingerprint"):
        verify_record(r, p, y)


def test_calibrator_as_a_dict_and_a_split_as_a_string(small):
    audit, *_ = small
    iso = ck.IsotonicCalibration().fit(*synthetic(200, seed=3))
    r = calibration_record(audit, calibrator=iso.to_dict(), split="stratified")
    assert r["calibrator"]["kind"] == "isotonic"
    assert "squared error" in r["calibrator"]["objective"]
    assert r["split"] == {"method": "stratified", "seed": None}
    validator().validate(r)


def test_binary_record_without_per_bin_interval_has_nulls():
    p, y = synthetic(300, seed=1)
    audit = ck.audit(p, y, interval=None, **FAST)
    r = calibration_record(audit)
    assert r["binning"]["interval"] is None
    assert all(v is None for v in r["bins"]["ci_low"])
    validator().validate(r)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scores": [0.5]}, "pass scores and labels together"),
        ({"scores": [0.5, 0.2], "labels": [1, 0]}, "scores has 2 rows but the audit counts 600"),
        ({"model": 3}, "model must be text"),
        ({"scores_kind": "odds"}, "scores_kind"),
        ({"split": {"seed": 1}}, "split needs a 'method'"),
        ({"split": {"method": "k-fold", "seed": 1.5}}, "split 'seed' must be an integer"),
        ({"split": 7}, "split must be a dict"),
        ({"calibrator": ck.TemperatureScaling()}, "not fitted yet"),
        ({"calibrator": {"kind": "temperature"}}, "calibrator is missing"),
    ],
)
def test_bad_arguments(small, kwargs, match):
    audit, *_ = small
    with pytest.raises(ck.InputError, match=re.escape(match)):
        calibration_record(audit, **kwargs)


def test_not_an_audit():
    with pytest.raises(ck.InputError, match="audit must be the result of calibkit.audit"):
        calibration_record({"ece": 0.1})


# ----------------------------------------------------------------------------- round trip


def test_json_round_trip(tmp_path, densenet):
    *_, r = densenet
    path = write_record(tmp_path / "record.json", r)
    assert read_record(path) == r
    assert json.loads(path.read_text()) == r
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]  # no temporary left
    assert path.stat().st_mode & 0o044  # readable by others, unlike mkstemp's 0600


def test_a_failed_write_leaves_the_old_file(tmp_path, small):
    *_, r = small
    path = write_record(tmp_path / "record.json", r)
    before = path.read_text()
    broken = r.to_dict()
    broken["metrics"]["ece"]["value"] = "high"
    with pytest.raises(ck.InputError, match=r"metrics\.ece\.value must be a number or null"):
        write_record(path, broken)
    assert path.read_text() == before


# ----------------------------------------------------------------------------- tampering


def test_verify_the_data_it_was_made_from(densenet):
    _, z, y, _, r = densenet
    check = verify_record(r, z, y)
    assert check.ok and check.data_matches and check.record_intact and bool(check)
    assert check.problems == ()
    assert "verified" in str(check)


def test_changed_data_is_detected(densenet):
    _, z, y, _, r = densenet
    y2 = y.copy()
    y2[1234] = (y2[1234] + 1) % 10  # one label changed
    check = verify_record(r, z, y2)
    assert not check and not check.data_matches and check.record_intact
    assert check.problems[0].startswith("labels contents (sha256) differ")
    # the same numbers in another dtype are other data
    check = verify_record(r, z.astype(np.float64), y)
    assert not check and check.problems == ("scores dtype differ: <f4 recorded, <f8 now",)
    check = verify_record(r, z[:-1], y[:-1])
    assert not check and "shape differ" in check.problems[0]


def test_a_tampered_fingerprint_is_detected(densenet):
    _, z, y, _, r = densenet
    forged = r.to_dict()
    forged["data"]["fingerprint"]["scores"]["sha256"] = "0" * 64
    validator().validate(forged)  # still a well-formed record
    check = verify_record(forged, z, y)
    assert not check.data_matches and not check.record_intact
    assert any("edited after it was made" in p for p in check.problems)


def test_an_edited_metric_is_detected(tmp_path, densenet):
    _, z, y, _, r = densenet
    path = write_record(tmp_path / "r.json", r)
    text = json.loads(path.read_text())
    text["metrics"]["ece"]["value"] = 0.001  # a nicer number
    path.write_text(json.dumps(text))
    with pytest.raises(ck.InputError, match="the record was edited after it was made"):
        read_record(path)
    with pytest.warns(ck.CalibkitWarning, match="EDITED"):
        edited = read_record(path, verify=False)  # forensic reading
    check = verify_record(edited, z, y)
    assert check.data_matches and not check.record_intact and not check
    assert check.trust.status == "edited"
    assert "edited" in str(check)


# ----------------------------------------------------------------------------- malformed files


def _written(tmp_path: Path, document) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    return path


def _mutations(r):
    def drop(*keys):
        d = r.to_dict()
        node = d
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]
        return d

    def put(value, *keys):
        d = r.to_dict()
        node = d
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
        return d

    return [
        (drop("metrics"), "metrics is missing"),
        (drop("data", "fingerprint"), "data.fingerprint is missing"),
        (put("abc", "metrics", "ece", "value"), "metrics.ece.value must be a number or null"),
        (put(-1, "bins", "count", 3), "bins.count[3] must be at least 0"),
        (put(1.5, "bins", "count", 3), "bins.count[3] must be an integer"),
        (put("middle", "binning", "closed"), "binning.closed must be one of"),
        (put(2, "format_version"), "format_version must be 1"),
        (put("yesterday", "created"), "created is malformed"),
        (put("nope", "digest", "value"), "digest.value is malformed"),
        (put(1, "context", "population"), "context.population must be text or null"),
        (put(True, "data", "n"), "data.n must be an integer"),
        (put(1.5, "binning", "level"), "binning.level must be below 1"),
        (put({"x": 1}, "extra"), "extra is not a field of a calibration record"),
        (put({"seed": 0}, "split"), "split.method is missing"),
    ]


def test_malformed_records_name_the_failing_field(tmp_path, small):
    *_, r = small
    for document, message in _mutations(r):
        path = _written(tmp_path, document)
        with pytest.raises(ck.InputError, match=re.escape(message)) as info:
            read_record(path)
        assert f"'{path}'" in str(info.value)
        # jsonschema agrees that these are not records
        assert not validator().is_valid(document), message


def test_what_a_schema_cannot_say_is_checked_too(tmp_path, small):
    *_, r = small
    short = r.to_dict()
    short["bins"]["sum_conf"] = short["bins"]["sum_conf"][:-1]
    with pytest.raises(ck.InputError, match=r"bins\.sum_conf must have one entry per bin \(15\)"):
        read_record(_written(tmp_path, short))
    wrong_n = r.to_dict()
    wrong_n["data"]["n"] = 601
    with pytest.raises(ck.InputError, match=r"bins\.count adds up to 600, but data\.n is 601"):
        read_record(_written(tmp_path, wrong_n))
    backwards = r.to_dict()
    backwards["binning"]["edges"][3], backwards["binning"]["edges"][4] = (
        backwards["binning"]["edges"][4],
        backwards["binning"]["edges"][3],
    )
    with pytest.raises(ck.InputError, match=r"binning\.edges\[4\] must increase"):
        read_record(_written(tmp_path, backwards))


def test_files_that_are_not_records(tmp_path):
    with pytest.raises(ck.InputError, match="no such file"):
        read_record(tmp_path / "missing.json")
    with pytest.raises(ck.InputError, match="is a directory"):
        read_record(tmp_path)
    (tmp_path / "a.json").write_text("{not json")
    with pytest.raises(ck.InputError, match="a.json': not valid JSON"):
        read_record(tmp_path / "a.json")
    (tmp_path / "b.json").write_text('{"ece": NaN}')
    with pytest.raises(ck.InputError, match="not strict JSON"):
        read_record(tmp_path / "b.json")
    (tmp_path / "c.json").write_text("[1, 2]")
    with pytest.raises(ck.InputError, match="the document must be an object"):
        read_record(tmp_path / "c.json")


def test_builtin_validator_agrees_with_jsonschema(small, densenet):
    """Every document jsonschema accepts, calibkit accepts, and the other way round."""
    records = [small[-1], densenet[-1]]
    candidates = [*records]
    for r in records:
        candidates += [d for d, _ in _mutations(r)]
        loose = r.to_dict()
        loose["split"] = {"method": "k-fold", "seed": 3, "folds": 5}  # extra split settings
        candidates.append(loose)
        as_float = r.to_dict()
        as_float["data"]["n"] = float(r["data"]["n"])  # 600.0 is an integer in JSON Schema
        candidates.append(as_float)
    v = validator()
    for document in candidates:
        ours = _schema._check(document, _schema._schema(), _schema._schema(), ()) is None
        assert ours == v.is_valid(document), document
