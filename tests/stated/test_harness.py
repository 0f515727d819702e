"""lm-evaluation-harness samples files (``lm_eval --log_samples``): read, cross-checked against the
harness's own per-line metrics and its results file, and audited from the command line."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.stated import Grade
from calibkit.stated.answers import audit_answers
from calibkit.stated.harness import HARNESS_COLUMNS, is_harness_samples, read_harness_samples

DATA = Path(__file__).parent / "data" / "harness"
RUN = DATA / "example-org__tiny-lm"
DATE = "2026-01-15T10-20-30.123456"
ARC = RUN / f"samples_arc_easy_{DATE}.jsonl"
GSM = RUN / f"samples_gsm8k_{DATE}.jsonl"
OLD = DATA / "samples_piqa_old_layout.jsonl"
RESULTS = RUN / f"results_{DATE}.json"
FAST = {"n_boot": 50, "n_sims": 50}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_multiple_choice_line_by_hand():
    rows = read_harness_samples(ARC)
    assert list(rows) == list(HARNESS_COLUMNS)
    # doc 0: log-likelihoods -4.1, -1.2, -6.3, -3.0 of its four options; target 1
    z = math.exp(-4.1) + math.exp(-1.2) + math.exp(-6.3) + math.exp(-3.0)
    assert rows["chosen_token_confidence"][0] == pytest.approx(math.exp(-1.2) / z, rel=1e-12)
    assert rows["answer"][0] == "carbon dioxide"
    assert (rows["correct"][0], rows["target"][0], rows["n_options"][0]) == (1, "1", 4)
    # per character: -4.1/6, -1.2/14, -6.3/6, -3.0/8 ("carbon dioxide" has 14 characters)
    per = [-4.1 / 6, -1.2 / 14, -6.3 / 6, -3.0 / 8]
    zn = sum(math.exp(v) for v in per)
    assert rows["chosen_token_confidence_norm"][0] == pytest.approx(math.exp(per[1]) / zn)


def test_an_option_of_log_likelihood_minus_infinity_has_probability_0():
    rows = read_harness_samples(ARC)
    # doc 11: -3.2, -inf, -3.0, -4.4; the chosen option is the third (wrong: target 1)
    z = math.exp(-3.2) + math.exp(-3.0) + math.exp(-4.4)
    assert rows["chosen_token_confidence"][11] == pytest.approx(math.exp(-3.0) / z)
    assert (rows["answer"][11], rows["correct"][11]) == ("plastic", 0)


def test_outcomes_agree_with_the_harness_per_line_and_in_its_results_file():
    rows = read_harness_samples([ARC, GSM])
    lines = _lines(ARC) + _lines(GSM)
    mc = [i for i, k in enumerate(rows["kind"]) if k == "multiple_choice"]
    assert [rows["correct"][i] for i in mc] == [int(line["acc"]) for line in _lines(ARC)]
    assert [rows["correct_norm"][i] for i in mc] == [int(line["acc_norm"]) for line in _lines(ARC)]
    gen = [i for i, k in enumerate(rows["kind"]) if k == "generate_until"]
    assert [rows["correct"][i] for i in gen] == [int(line["exact_match"]) for line in _lines(GSM)]
    assert len(rows["llm"]) == len(lines) == 24
    results = json.loads(RESULTS.read_text())["results"]
    assert np.mean([rows["correct"][i] for i in mc]) == pytest.approx(
        results["arc_easy"]["acc,none"]
    )
    assert np.mean([rows["correct_norm"][i] for i in mc]) == pytest.approx(
        results["arc_easy"]["acc_norm,none"]
    )
    for name in ("strict-match", "flexible-extract"):
        got = [rows["correct"][i] for i in gen if rows["filter"][i] == name]
        assert np.mean(got) == pytest.approx(results["gsm8k"][f"exact_match,{name}"])


def test_generation_reads_the_stated_confidence_of_the_reply():
    rows = read_harness_samples(GSM)
    strict = [i for i, f in enumerate(rows["filter"]) if f == "strict-match"]
    stated = [rows["stated_confidence"][i] for i in strict]
    assert stated[:4] + stated[5:] == [0.9, 0.8, 0.7, 0.95, 0.6]
    assert math.isnan(stated[4]) and rows["confidence_reason"][strict[4]] == "absent"
    assert rows["reply"][strict[2]].startswith("20 - 7 = 12.")
    assert {rows["grader"][i] for i in strict} == {"lm-eval exact_match"}
    assert all(math.isnan(rows["chosen_token_confidence"][i]) for i in strict)


def test_a_grader_regrades_generations_and_an_undecided_one_is_missing():
    def final_number(answer: str, target: str) -> Grade:
        if answer == "[invalid]":
            return Grade(None, "final number", reason="no answer")
        return Grade(answer == target.split("#### ")[1], "final number")

    rows = read_harness_samples(GSM, grader=final_number)
    lines = _lines(GSM)
    for i, line in enumerate(lines):
        if line["filtered_resps"][0] == "[invalid]":
            assert math.isnan(rows["correct"][i])
        else:
            assert rows["correct"][i] == int(line["exact_match"])
    assert set(rows["grader"]) == {"final number"}


def test_the_older_layout_reads_as_the_current_one(tmp_path):
    current = []
    for line in _lines(OLD):
        line = dict(line)
        line["arguments"] = {
            f"gen_args_{i}": {"arg_0": a[0], "arg_1": a[1]} for i, a in enumerate(line["arguments"])
        }
        line["resps"] = [[[str(r[0][0]), str(r[0][1])]] for r in line["resps"]]
        line["filtered_resps"] = [[str(r[0]), str(r[1])] for r in line["filtered_resps"]]
        line["target"] = str(line["target"])
        current.append(line)
    new = _write(tmp_path / "samples_piqa_old_layout.jsonl", current)
    assert read_harness_samples(OLD, llm="m") == read_harness_samples(new, llm="m")
    rows = read_harness_samples(OLD, llm="m")
    assert rows["correct"] == [int(line["acc"]) for line in _lines(OLD)]
    # doc 1: -5.5 and -5.1; the second is chosen, target 0
    assert rows["chosen_token_confidence"][1] == pytest.approx(1 / (1 + math.exp(-0.4)))


def test_the_model_name_from_the_results_file_the_folder_or_llm(tmp_path):
    assert set(read_harness_samples(ARC)["llm"]) == {"example-org/tiny-lm"}
    folder = tmp_path / "org__other-model"
    folder.mkdir()
    shutil.copy(ARC, folder / ARC.name)
    assert set(read_harness_samples(folder / ARC.name)["llm"]) == {"org__other-model"}
    assert set(read_harness_samples(ARC, llm="mine")["llm"]) == {"mine"}
    assert set(read_harness_samples(ARC)["qset"]) == {"arc_easy"}


def test_harness_files_are_told_apart_from_tables():
    assert is_harness_samples(ARC) and is_harness_samples(OLD)
    assert not is_harness_samples(RESULTS)
    assert not is_harness_samples(
        Path(ck.__file__).parent / "stated" / "data" / "decision_set.jsonl"
    )


def test_the_audit_of_harness_samples_is_the_audit_of_its_arrays():
    audit = audit_answers([ARC, GSM], **FAST)
    assert audit.group_by == ("llm", "qset", "filter")  # gsm8k has two filters
    rows = read_harness_samples(ARC)
    conf, y = np.array(rows["chosen_token_confidence"]), np.array(rows["correct"])
    arc = audit.get(("example-org/tiny-lm", "arc_easy", "none"), "chosen_token_confidence")
    assert arc.n == 12 and arc.ece == pytest.approx(ck.ece(conf, y, n_bins=15), rel=1e-12)
    assert arc.auc == pytest.approx(ck.auc(conf, y), rel=1e-12)
    # each group lists only the sources its task gives
    assert [(r.group[1], r.source) for r in audit.rows] == [
        ("arc_easy", "chosen_token_confidence"),
        ("gsm8k", "stated_confidence"),
        ("gsm8k", "stated_confidence"),
    ]
    strict = audit.get(("example-org/tiny-lm", "gsm8k", "strict-match"), "stated_confidence")
    assert (strict.n_rows, strict.n, strict.n_missing) == (6, 5, 1)
    only_arc = audit_answers(ARC, **FAST)
    assert only_arc.group_by == ("llm", "qset")
    norm = audit_answers(
        ARC, sources="chosen_token_confidence_norm", correct="correct_norm", **FAST
    ).rows[0]
    assert norm.accuracy == pytest.approx(np.mean(rows["correct_norm"]))


def _mc_line(**changes) -> dict:
    line = _lines(ARC)[0]
    line.update(changes)
    return line


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"target": "2"}, "the harness's acc is 1.0 but the option with the largest"),
        ({"target": "7"}, "target 7 is not an option index (0 .. 3)"),
        ({"target": "sunlight"}, "neither an option index nor one of the options"),
        ({"target": "[0, 1]"}, "several right options"),
        ({"acc_norm": 0.0}, "the harness's acc_norm is 0.0 but the largest log-likelihood per"),
        (
            {"filtered_resps": [["-2.3", "True"]], "resps": [[["-2.3", "True"]]]},
            "one loglikelihood request per document (a task such as LAMBADA",
        ),
        (
            {
                "filtered_resps": ["-1234.5"],
                "resps": [["-1234.5"]],
                "arguments": {"gen_args_0": {"arg_0": "A page of text."}},
            },
            "loglikelihood_rolling",
        ),
        ({"filtered_resps": [["nan", "False"]] * 4}, "is not a number <= 0 or -inf"),
        ({"arguments": {}}, "does not hold the 4 options' texts"),
        ({"filtered_resps": []}, "filtered_resps is empty"),
    ],
)
def test_a_line_that_cannot_be_read_as_the_harness_meant_is_refused(tmp_path, changes, message):
    path = _write(tmp_path / "samples_arc_easy.jsonl", [_mc_line(**changes)])
    with pytest.raises(ck.InputError, match="line 1") as info:
        read_harness_samples(path, llm="m")
    assert message in str(info.value)


def test_a_generation_line_without_a_0_1_metric_asks_for_one(tmp_path):
    line = _lines(GSM)[0]
    del line["exact_match"]
    line["metrics"] = []
    path = _write(tmp_path / "samples_gsm8k.jsonl", [line])
    with pytest.raises(ck.InputError, match="pass metric= naming the task's 0/1 metric"):
        read_harness_samples(path, llm="m")
    line["score"] = 1.0
    _write(path, [line])
    assert read_harness_samples(path, llm="m", metric="score")["correct"] == [1]
    with pytest.raises(ck.InputError, match="metric 'other' is not a 0/1 value"):
        read_harness_samples(path, llm="m", metric="other")


def test_a_document_twice_and_an_empty_file_are_refused(tmp_path):
    twice = _write(tmp_path / "samples_arc_easy_2026-01-16T00-00-00.jsonl", _lines(ARC)[:2])
    with pytest.raises(ck.InputError, match="document 0 of task arc_easy .* is also at"):
        read_harness_samples([ARC, twice], llm="m")
    empty = tmp_path / "samples_empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ck.InputError, match="holds no samples"):
        read_harness_samples(empty, llm="m")
    with pytest.raises(ck.InputError, match="no such file"):
        read_harness_samples(tmp_path / "missing.jsonl")


runner = CliRunner(env={"COLUMNS": "200"})


def test_the_command_line_audits_several_samples_files():
    res = runner.invoke(
        app, ["stated", "audit", str(ARC), str(GSM), "--n-boot", "50", "--n-sims", "50", "--json"]
    )
    assert res.exit_code == 0, res.output
    document = json.loads(res.stdout)
    assert document["source"] == [str(ARC), str(GSM)]
    assert [r["group"] for r in document["rows"]][0] == [
        "example-org/tiny-lm",
        "arc_easy",
        "none",
    ]
    res = runner.invoke(app, ["stated", "audit", str(OLD), "--llm", "old-run", "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    assert "old-run" in res.stdout and "piqa_old_layout" in res.stdout


def test_the_command_line_refuses_mixing_and_llm_without_harness_files(tmp_path):
    table = tmp_path / "answers.csv"
    table.write_text("llm,stated_confidence,correct\nm,0.9,1\nm,0.6,0\n")
    res = runner.invoke(app, ["stated", "audit", str(ARC), str(table)])
    assert res.exit_code != 0 and "not an lm-evaluation-harness samples file" in res.output
    res = runner.invoke(app, ["stated", "audit", str(table), str(table)])
    assert res.exit_code != 0 and "several files go together only" in res.output
    res = runner.invoke(app, ["stated", "audit", str(table), "--llm", "x"])
    assert res.exit_code != 0 and "--llm goes with lm-evaluation-harness samples" in res.output


def test_a_mutual_information_task_reads_the_conditional_requests(tmp_path):
    # acc_mutual_info asks each option twice, given the context and given "", interleaved
    line = _lines(ARC)[0]
    args, resps, filtered = {}, [], []
    for j in range(4):
        cond = line["arguments"][f"gen_args_{j}"]
        args[f"gen_args_{2 * j}"] = cond
        args[f"gen_args_{2 * j + 1}"] = {"arg_0": "", "arg_1": cond["arg_1"][1:]}
        resps += [line["resps"][j], [[str(-7.0 - j), "False"]]]
        filtered += [line["filtered_resps"][j], [str(-7.0 - j), "False"]]
    mutual = {**line, "arguments": args, "resps": resps, "filtered_resps": filtered}
    plain = read_harness_samples(_write(tmp_path / "samples_plain.jsonl", [line]), llm="m")
    both = read_harness_samples(_write(tmp_path / "samples_plain_mi.jsonl", [mutual]), llm="m")
    for column in ("answer", "correct", "chosen_token_confidence", "n_options", "correct_norm"):
        assert both[column] == plain[column], column
