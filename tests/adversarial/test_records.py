"""Bad-input campaign, records: edited and forged records refused on every read, the keyed
signature (HMAC-SHA256) made and checked, what compare and monitor say about each record, deep
JSON refused before parsing, and random input giving only InputError."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.record import (
    calibration_record,
    check_record,
    compare_records,
    read_record,
    sign_record,
    verify_record,
    write_record,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_helpers import assert_bad_input  # noqa: E402

runner = CliRunner()
KEY = "k3y-for-tests-0123456789abcdef"
OTHER_KEY = "another-key-0123456789abcdef"
ENV = "CALIBKIT_RECORD_KEY"
FAST = {"n_boot": 50, "n_sims": 50}
CONTRACT = {"model": "toy", "outcome_definition": "argmax is the label"}


@pytest.fixture(autouse=True)
def no_key_in_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


def invoke(*args: object, env: dict[str, str] | None = None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def cohort(n: int, seed: int, *, stretch: float = 1.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, 4))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return stretch * z, y


def record_of(z, y, **kwargs):
    audit = ck.audit(z, y, from_logits=True, **FAST)
    return calibration_record(audit, scores=z, labels=y, **CONTRACT, **kwargs)


@pytest.fixture(scope="module")
def data():
    return cohort(1000, 0)


@pytest.fixture(scope="module")
def unsigned(data):
    return record_of(*data)


def canonical(record) -> bytes:
    """The canonical JSON of the record's fields but digest and signature, written out here
    as the schema describes it (keys sorted, no spaces, ASCII)."""
    body = {k: v for k, v in record.items() if k not in ("digest", "signature")}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def resealed(record):
    """What a forger does after an edit: recompute the (unkeyed) digest."""
    record["digest"]["value"] = hashlib.sha256(canonical(record)).hexdigest()
    return record


def written(tmp_path: Path, record, name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


# ----------------------------------------------------------------------------- item 5: edits


def test_an_edited_ece_is_refused_on_every_read(tmp_path, unsigned):
    edited = unsigned.to_dict()
    edited["metrics"]["ece"]["value"] = 0.001
    path = written(tmp_path, edited)
    message = "the record was edited after it was made: its fields no longer hash to its digest"
    with pytest.raises(ck.InputError, match=f"^read_record: '{path}': {message}"):
        read_record(path)
    with pytest.raises(ck.InputError, match=f"^compare_records: new record: {message}"):
        compare_records(unsigned, edited)
    with pytest.raises(ck.InputError, match=f"^write_record: {message}"):
        write_record(tmp_path / "again.json", edited)
    with pytest.raises(ck.InputError, match="signing it would vouch for the edit"):
        sign_record(edited, key=KEY)
    assert not (tmp_path / "again.json").exists()
    # forensic reading: allowed when asked for, and loud
    with pytest.warns(ck.CalibkitWarning, match="EDITED: its fields no longer hash"):
        assert read_record(path, verify=False) == edited
    assert check_record(edited, verify=False).status == "edited"


def test_an_edited_bin_no_longer_moves_a_comparison(tmp_path, unsigned, data):
    """The campaign's case: an edited bin turned 'within noise' into 'moved beyond noise'."""
    z, y = data
    other = written(tmp_path, record_of(*cohort(1000, 1)), "other.json")
    edited = unsigned.to_dict()
    edited["bins"]["sum_outcome"][7] = edited["bins"]["count"][7] * 1.0  # all correct
    path = written(tmp_path, edited)
    assert_bad_input(
        invoke("compare", other, path),
        f"read_record: '{path}': the record was edited after it was made",
    )


def test_a_recomputed_digest_passes_the_digest_but_not_the_signature(tmp_path, data):
    """What a digest does not prove: an edit whose author recomputed it reads as intact
    unsigned; the signature, which needs the key, is what catches it."""
    forged = resealed(_edited_ece(record_of(*data)))
    assert check_record(forged).status == "digest-only"
    signed = record_of(*data, key=KEY)
    forged = resealed(_edited_ece(signed))
    path = written(tmp_path, forged)
    with pytest.raises(
        ck.InputError,
        match=re.escape(
            f"read_record: '{path}': the record's signature does not verify with the given key: "
            "the record, or its signature, was changed after it was signed (its digest was "
            "recomputed to match). Refusing to use it"
        ),
    ):
        read_record(path, key=KEY)
    with pytest.warns(ck.CalibkitWarning, match="SIGNATURE DOES NOT VERIFY"):
        read_record(path, key=KEY, verify=False)
    check = verify_record(forged, *data, key=KEY)
    assert check.data_matches and not check.record_intact and not check
    assert check.trust.status == "signature-invalid"
    # a forger who also strips the signature leaves an unsigned record: refused when required
    stripped = {k: v for k, v in forged.items() if k != "signature"}
    assert check_record(stripped, key=KEY).status == "digest-only"
    with pytest.raises(ck.InputError, match="the record is not signed, and a signed record"):
        check_record(stripped, key=KEY, require_signature=True)


def _edited_ece(record):
    record = json.loads(json.dumps(record))  # an editable copy of a record or a dict
    record["metrics"]["ece"]["value"] = 0.4995
    return record


def test_a_fingerprint_of_other_rows_is_refused(tmp_path, unsigned):
    """The fingerprint of 500 other rows in a record that counts 1000, digest recomputed."""
    z, y = cohort(500, 9)
    swapped = unsigned.to_dict()
    swapped["data"]["fingerprint"] = record_of(z, y)["data"]["fingerprint"]
    resealed(swapped)
    message = (
        "not a valid calibration record: data.fingerprint.scores.shape describes 500 rows, but "
        "data.n is 1000: the fingerprint is not of the data this record counts"
    )
    path = written(tmp_path, swapped)
    with pytest.raises(ck.InputError, match=re.escape(f"read_record: '{path}': {message}")):
        read_record(path)
    with pytest.raises(ck.InputError, match=re.escape(f"verify_record: {message}")):
        verify_record(swapped, z, y)  # used to say: verified
    labels_only = unsigned.to_dict()
    labels_only["data"]["fingerprint"]["labels"]["shape"] = []
    with pytest.raises(
        ck.InputError, match=r"labels\.shape describes a single value \(shape \[\]\)"
    ):
        check_record(resealed(labels_only))


# ----------------------------------------------------------------------------- item 5: signing


def test_a_signed_record_verifies_with_its_key(tmp_path, data):
    r = record_of(*data, key=KEY)
    expected = hmac.new(KEY.encode(), canonical(r), hashlib.sha256).hexdigest()
    key_id = hmac.new(KEY.encode(), b"calibkit record key id", hashlib.sha256).hexdigest()[:16]
    assert r["signature"] == {"algorithm": "hmac-sha256", "key_id": key_id, "value": expected}
    assert r["digest"]["value"] == hashlib.sha256(canonical(r)).hexdigest()
    path = write_record(tmp_path / "signed.json", r, key=KEY)
    assert read_record(path, key=KEY, require_signature=True) == r
    trust = check_record(r, key=KEY)
    assert trust.status == "signed-verified" and trust.key_id == key_id
    assert str(trust) == f"signed and verified with the given key (HMAC-SHA256, key id {key_id})"
    check = verify_record(r, *data, key=KEY)
    assert check and check.trust.status == "signed-verified"


def test_a_signature_made_with_another_key_is_refused(tmp_path, data):
    path = write_record(tmp_path / "signed.json", record_of(*data, key=KEY))
    ours = hmac.new(KEY.encode(), b"calibkit record key id", hashlib.sha256).hexdigest()[:16]
    theirs = hmac.new(OTHER_KEY.encode(), b"calibkit record key id", hashlib.sha256).hexdigest()
    with pytest.raises(
        ck.InputError,
        match=re.escape(
            f"the record's signature does not verify with the given key: it was signed with "
            f"another key (key id {ours}; the given key has key id {theirs[:16]})"
        ),
    ):
        read_record(path, key=OTHER_KEY)


def test_a_signed_record_read_without_a_key_says_it_was_not_verified(tmp_path, data):
    path = write_record(tmp_path / "signed.json", record_of(*data, key=KEY))
    with pytest.warns(ck.CalibkitWarning, match="signature could not be verified"):
        read_record(path)
    with pytest.raises(ck.InputError, match="is signed .* but there is no key to verify it"):
        read_record(path, require_signature=True)


def test_the_key_from_the_environment(tmp_path, monkeypatch, unsigned, data):
    monkeypatch.setenv(ENV, KEY)
    r = record_of(*data)  # signed by calibration_record
    assert (
        r["signature"]["value"] == hmac.new(KEY.encode(), canonical(r), hashlib.sha256).hexdigest()
    )
    assert "signature" not in unsigned
    path = write_record(tmp_path / "u.json", unsigned)  # signed on the way out
    stored = json.loads(path.read_text())
    expected = hmac.new(KEY.encode(), canonical(unsigned), hashlib.sha256).hexdigest()
    assert stored["signature"]["value"] == expected
    assert {k: v for k, v in stored.items() if k != "signature"} == unsigned
    assert check_record(stored).status == "signed-verified"
    assert str(check_record(stored)).startswith(f"signed and verified with the key in {ENV}")
    assert sign_record(unsigned)["signature"] == stored["signature"]
    monkeypatch.setenv(ENV, "")  # empty: not set
    assert check_record(unsigned).status == "digest-only"


@pytest.mark.parametrize(
    "key, message",
    [
        ("short", "the given key is 5 bytes long; a signing key needs at least 16"),
        (b"", "the given key is 0 bytes long"),
        (123, "key must be text or bytes (the signing secret), got int"),
    ],
)
def test_bad_keys(unsigned, key, message):
    with pytest.raises(ck.InputError, match=re.escape(message)):
        sign_record(unsigned, key=key)


def test_a_short_key_in_the_environment(monkeypatch, unsigned):
    monkeypatch.setenv(ENV, "abc")
    with pytest.raises(ck.InputError, match=f"the key in {ENV} is 3 bytes long"):
        sign_record(unsigned)


# ----------------------------------------------------------------------------- compare, monitor


@pytest.fixture()
def three(tmp_path, data):
    """An unsigned record, a signed one, and one signed with another key."""
    z, y = cohort(1000, 1)
    return {
        "unsigned": write_record(tmp_path / "unsigned.json", record_of(*data)),
        "signed": write_record(tmp_path / "signed.json", record_of(z, y, key=KEY)),
        "other": write_record(tmp_path / "other.json", record_of(z, y, key=OTHER_KEY)),
    }


def test_compare_says_what_each_record_is(three):
    key_id = hmac.new(KEY.encode(), b"calibkit record key id", hashlib.sha256).hexdigest()[:16]
    result = invoke(
        "compare", three["unsigned"], three["signed"], "--n-sims", "200", env={ENV: KEY}
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())  # as one line: the terminal wraps long lines
    assert "old record: unsigned; digest intact: catches accidental edits, not forgery" in out
    assert (
        f"new record: signed and verified with the key in {ENV} (HMAC-SHA256, key id {key_id})"
        in out
    )
    as_json = json.loads(
        invoke("compare", three["unsigned"], three["signed"], "--json", env={ENV: KEY}).stdout
    )
    assert as_json["old"]["trust"]["status"] == "digest-only"
    assert as_json["new"]["trust"] == {
        "status": "signed-verified",
        "key_id": key_id,
        "text": f"signed and verified with the key in {ENV} (HMAC-SHA256, key id {key_id})",
    }
    # without the key: said on stderr and in the header, exit 0
    result = invoke("compare", three["unsigned"], three["signed"], "--n-sims", "200")
    assert result.exit_code == 0
    assert result.stderr.startswith(f"calibkit: warning: read_record: '{three['signed']}': the ")
    assert "signature could not be verified" in result.stderr
    assert f"new record: signed (key id {key_id}) but NOT verified" in " ".join(
        result.stdout.split()
    )


def test_compare_refuses_what_does_not_verify(three):
    assert_bad_input(
        invoke("compare", three["unsigned"], three["other"], env={ENV: KEY}),
        "the record's signature does not verify with the key in CALIBKIT_RECORD_KEY: it was "
        "signed with another key",
    )
    assert_bad_input(
        invoke(
            "compare", three["unsigned"], three["signed"], "--require-signature", env={ENV: KEY}
        ),
        f"read_record: '{three['unsigned']}': the record is not signed, and a signed record is "
        "required",
    )
    assert_bad_input(
        invoke("compare", three["signed"], three["signed"], "--require-signature"),
        "but there is no key to verify it with; set CALIBKIT_RECORD_KEY",
    )


def test_compare_records_marks_an_edited_record_read_forensically(unsigned, data):
    edited = _edited_ece(unsigned)
    c = compare_records(unsigned, edited, verify=False, n_sims=200)
    assert c.trust_new.status == "edited"
    assert "new record: EDITED: its fields no longer hash to its digest" in str(c)
    with pytest.raises(
        ck.InputError, match="compare_records: old record: the record is not signed"
    ):
        compare_records(unsigned, unsigned, require_signature=True)


def test_monitor_checks_its_reference_record(tmp_path, three, data):
    import pyarrow as pa
    import pyarrow.parquet as pq

    z, y = data
    table = {f"logit_{k}": z[:, k] for k in range(4)}
    file = tmp_path / "log.parquet"
    pq.write_table(pa.table({**table, "label": y, "week": np.arange(1000) % 3}), file)
    run = ("monitor", file, "--by", "week", "--logits", "logit_*", "--label", "label", "--quiet")
    assert invoke(*run, "--reference-record", three["signed"], env={ENV: KEY}).exit_code == 0
    assert_bad_input(
        invoke(*run, "--reference-record", three["other"], env={ENV: KEY}),
        f"read_record: '{three['other']}': the record's signature does not verify",
    )
    assert_bad_input(
        invoke(*run, "--reference-record", three["unsigned"], "--require-signature"),
        "the record is not signed, and a signed record is required",
    )
    edited = written(tmp_path, _edited_ece(json.loads(three["unsigned"].read_text())), "e.json")
    assert_bad_input(
        invoke(*run, "--reference-record", edited), "the record was edited after it was made"
    )
    reference_name = tmp_path / "reference.rec"  # any name: read as a record, not a group
    reference_name.write_text(three["unsigned"].read_text())
    assert invoke(*run, "--reference-record", reference_name).exit_code == 0


# ----------------------------------------------------------------------------- item 1: depth


@pytest.mark.parametrize("depth", [100, 5_000, 200_000])
def test_deep_json_is_refused_in_every_record_reader(tmp_path, unsigned, depth):
    deep = written(tmp_path, unsigned, "deep.json")
    deep.write_text("[" * depth + "]" * depth)
    message = f"JSON nested {depth} levels deep; calibkit reads at most 64 levels"
    with pytest.raises(ck.InputError, match=re.escape(f"read_record: '{deep}': {message}")):
        read_record(deep)
    good = written(tmp_path, unsigned, "good.json")
    assert_bad_input(invoke("compare", good, deep), message)
    assert_bad_input(invoke("compare", deep, good), message)
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = tmp_path / "log.parquet"
    pq.write_table(pa.table({"confidence": [0.6, 0.7], "correct": [1, 0], "g": [0, 1]}), file)
    assert_bad_input(invoke("monitor", file, "--by", "g", "--reference-record", deep), message)
    # nested deep inside a record
    inner = json.dumps({**unsigned, "notes": "@"}).replace(
        '"@"', '{"a":' * depth + "1" + "}" * depth
    )
    deep.write_text(inner)
    with pytest.raises(ck.InputError, match=f"JSON nested {depth + 1} levels deep"):
        read_record(deep)


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
        for i, value in enumerate(node[:3]):
            yield from leaf_paths(value, (*prefix, i))
    yield prefix


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_input_gives_only_input_errors(tmp_path, unsigned, data):
    path = data.draw(st.sampled_from([p for p in leaf_paths(unsigned) if p]))
    mutated = unsigned.to_dict()
    node = mutated
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = data.draw(JSON)
    target = tmp_path / "r.json"
    try:
        target.write_text(json.dumps(mutated))
    except ValueError:  # NaN or infinity drawn: not JSON
        target.write_text(json.dumps(mutated, allow_nan=True))
    documents = [mutated]
    if _has_digest(mutated):
        documents.append(resealed(copy.deepcopy(mutated)))  # past the digest, to the fields
    for document in documents:
        try:
            check_record(document)
        except ck.InputError:
            pass
    try:
        read_record(target)
    except ck.InputError:
        pass
    target.write_bytes(data.draw(st.binary(max_size=300)))
    with pytest.raises(ck.InputError):
        read_record(target)
    target.write_text(json.dumps(data.draw(JSON)))
    with pytest.raises(ck.InputError):
        read_record(target)


def _has_digest(record) -> bool:
    digest = record.get("digest")
    return isinstance(digest, dict) and "value" in digest


def test_values_strict_json_cannot_hold_are_refused_in_a_dict(unsigned):
    nan = unsigned.to_dict()
    nan["metrics"]["ece"]["value"] = float("nan")
    with pytest.raises(ck.InputError, match=r"metrics\.ece\.value must be a finite number"):
        check_record(nan)
    loose = unsigned.to_dict()
    loose["split"] = {"method": "k-fold", "seed": 1, "weight": float("inf")}
    with pytest.raises(ck.InputError, match="it holds a value strict JSON cannot"):
        check_record(loose)
    loose["split"] = {"method": "k-fold", "seed": 1, "ids": np.arange(3)}
    with pytest.raises(ck.InputError, match="it holds a value strict JSON cannot"):
        compare_records(loose, unsigned)


def test_the_signature_field_in_the_schema(data):
    """A signed record is valid under the published schema (checked by jsonschema too), and a
    malformed signature is refused by both, calibkit naming the field."""
    import jsonschema

    from calibkit.record import record_schema

    validator = jsonschema.Draft202012Validator(record_schema())
    signed = record_of(*data, key=KEY)
    validator.validate(signed)
    for change, message in [
        ({"algorithm": "hmac-md5"}, 'signature.algorithm must be "hmac-sha256"'),
        ({"key_id": "XYZ"}, "signature.key_id is malformed"),
        ({"value": None}, "signature.value must be text, got null"),
        ({"by": "me"}, "signature.by is not a field of a calibration record"),
    ]:
        bad = signed.to_dict()
        bad["signature"].update(change)
        assert not validator.is_valid(bad), change
        with pytest.raises(ck.InputError, match=re.escape(message)):
            check_record(bad, key=KEY)
