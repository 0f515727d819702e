"""Golden table, agreement with the fields parsed in raw_replies, batch accounting and speed."""

from __future__ import annotations

import glob
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from calibkit import InputError
from calibkit.stated import ConfidenceParse, parse_batch, parse_confidence, parse_decision

HERE = Path(__file__).parent
# the team's shared data sits beside the repository (../shared), in CI as in a session
_SHARED = [Path(__file__).resolve().parents[3] / "shared", Path("/work/shared")]
DATA = next((p for p in _SHARED if p.exists()), _SHARED[0]) / "data" / "llm_confidence"
GOLDEN = [json.loads(line) for line in (HERE / "golden_replies.jsonl").open(encoding="utf-8")]


@pytest.mark.parametrize(
    "case", GOLDEN, ids=[f"{i}-{c['note'][:30]}" for i, c in enumerate(GOLDEN)]
)
def test_golden(case: dict) -> None:
    exp = case["expected"]
    if case["kind"] == "confidence":
        r = parse_confidence(case["text"])
        assert isinstance(r, ConfidenceParse)
        if isinstance(exp, float):
            assert r and r.value is not None and math.isclose(r.value, exp)
            assert r.source is not None and r.source in case["text"]
        elif exp is None:
            assert not r and r.value is None
        else:
            assert not r and r.value is None and r.reason == exp
    else:
        got = parse_decision(case["text"], list(case["options"]))
        if exp is None:
            assert got is None
        else:
            assert got is not None and got[0] == exp[0] and math.isclose(got[1], exp[1])


def test_forms_and_sources() -> None:
    assert parse_confidence("I'd say 7 out of 10.").form == "N out of 10"
    r = parse_confidence('{"A": 0.05, "B": 0.9, "C": 0.05}')
    assert r.form == "distribution" and r.option == "B"
    r = parse_confidence('{"Answer": "A", "A": 0.3, "B": 0.6}')
    assert r.value == 0.3 and r.option == "A"  # the chosen option, not the largest
    assert parse_confidence("８５％").source == "８５％"
    assert not parse_confidence("")
    assert parse_confidence(0.4).value == 0.4
    assert parse_confidence(float("nan")).reason == "out of range"


def test_verbal_scale_is_configurable() -> None:
    assert parse_confidence("rather sure", scale={"rather sure": 0.75}).value == 0.75
    assert parse_confidence("very confident", scale={"rather sure": 0.75}).reason == "absent"
    assert parse_confidence("very confident, or only fairly confident").reason == "conflicting"


def test_duplicate_options_rejected() -> None:
    with pytest.raises(InputError):
        parse_decision("Answer: a", ["A", "a "])


def test_batch_counts_and_excludes() -> None:
    rep = parse_batch(["0.9", "nothing", "120%", "80% or 60%", "7/10"])
    assert rep.n == 5 and np.allclose(rep.values, [0.9, 0.7]) and list(rep.indices) == [0, 4]
    assert list(rep.unparsed) == [1, 2, 3]
    assert rep.reasons == {"absent": 1, "out of range": 1, "conflicting": 1}
    assert rep.parse_rate == pytest.approx(0.4) and not np.isnan(rep.values).any()
    rep = parse_batch(["Answer: B\nConfidence: 0.6", "Answer: Z\nConfidence: 0.6"], options="AB")
    assert rep.answers == ["B"] and rep.reasons == {"not an option": 1}


def _raw_agreement() -> tuple[int, int]:
    pd = pytest.importorskip("pandas")
    agree = total = 0
    for f in sorted(glob.glob(str(DATA / "raw_replies" / "*.csv"))):
        d = pd.read_csv(f, keep_default_na=False)
        decision = "Answer" in d.columns
        opts = [c for c in "ABCDE" if c in d.columns]
        for _, row in d.iterrows():
            total += 1
            ok = str(row["coerce"]) == "True"
            if decision:
                exp = (row["Answer"], float(row[row["Answer"]])) if ok else None
                got = parse_decision(row["content"], opts)
                same = (got is None) == (exp is None) and (
                    got is None or (got[0] == exp[0] and math.isclose(got[1], exp[1]))
                )
            else:
                expv = float(row["Confidence"]) if ok else None
                v = parse_confidence(row["content"]).value
                same = v == expv
            agree += bool(same)
    return agree, total


@pytest.mark.skipif(not DATA.exists(), reason="shared data not present")
def test_agreement_with_raw_replies() -> None:
    agree, total = _raw_agreement()
    # measured: 3411 / 3436 = 0.9927 (24 SAT replies with unescaped quotes in the JSON, which
    # calibkit calls malformed; 1 LSAT all-zero distribution the source pipeline rejected)
    assert total == 3436
    assert agree / total >= 0.992


@pytest.mark.skipif(not DATA.exists(), reason="shared data not present")
def test_agreement_with_model_extracted_sentences() -> None:
    path = DATA / "gastro_board" / "confidence_sentence_to_number_300.jsonl"
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    agree = 0
    for r in rows:
        v = parse_confidence(r["sentence"]).value
        exp = None if r["extracted"] == "not_mentioned" else int(r["extracted"]) / 10
        agree += (v is None and exp is None) or (
            v is not None and exp is not None and math.isclose(v, exp)
        )
    assert agree == len(rows) == 300  # measured: 300 / 300


def test_speed_100k() -> None:
    base = [
        '{\n"Reasoning": "Oxidants accept electrons.",\n"Answer": "C",\n"A": 0.05,\n"B": 0.05,'
        '\n"C": 0.85,\n"D": 0.05\n}',
        "Answer: B\nConfidence: 85%",
        "**Confidence Level:** 9/10 I am highly confident in this decision.",
        "I'm about 80% sure but it could be 60%",
    ]
    replies = base * 25_000
    t = time.perf_counter()
    rep = parse_batch(replies, options="ABCD")
    dt = time.perf_counter() - t
    assert rep.n == 100_000 and rep.reasons == {"no answer": 50_000}
    assert dt < 10.0, dt  # measured about 0.5 s here; generous for slow CI
