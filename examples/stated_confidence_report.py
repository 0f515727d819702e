"""Audit the confidences language models state, on two public data sets, as markdown tables.

1. 11 LLMs x 5 question sets (examples/data/llm_stated_confidence.parquet): the verbalized
   confidence and the answer-token probability, per model and question set.
2. 48 models on 300 gastroenterology board questions (examples/data/gastro_board_48_llms.csv):
   the stated confidence on a 0-10 scale, divided by 10. Empty cells and the placeholder strings
   "cell_empty" / "no_confidence" are excluded from that model's metrics and counted.

Run: python examples/stated_confidence_report.py (sources and licences of both data sets in
examples/data/README.md)
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from calibkit.stated.audit import StatedAudit, audit_stated

HERE = Path(__file__).resolve().parent
LLM11 = HERE / "data" / "llm_stated_confidence.parquet"
GASTRO = HERE / "data" / "gastro_board_48_llms.csv"
SHORT = {"stated_confidence": "stated", "chosen_token_confidence": "token", "confidence": "stated"}


def table(audit: StatedAudit, dataset: str | None = None) -> str:
    head = "| model | data set | source | N (excl.) | accuracy | ECE [95% CI] | noise floor "
    head += "| x0.05 | better calibrated |"
    lines = [head, "|" + "---|" * 9]
    for r in audit.rows:
        if r.n == 0:
            continue
        comp = audit.better(r.group)
        if comp is None:
            better = "only source"
        else:
            better = SHORT[comp.better] + ("" if comp.clear else " (CIs overlap)")
        model = r.group[0]
        ds = dataset or r.group[1]
        excl = r.n_missing + r.n_out_of_range
        lines.append(
            f"| {model} | {ds} | {SHORT[r.source]} | {r.n} ({excl}) | {r.accuracy:.3f} | "
            f"{r.ece:.3f} [{r.ece_low:.3f}, {r.ece_high:.3f}] | {r.noise_floor:.3f} | "
            f"{r.share_multiple_of_05:.0%} | {better} |"
        )
    return "\n".join(lines)


def read_gastro(path: Path) -> tuple[dict[str, list], Counter[tuple[str, str]]]:
    """The wide 0-10 table as long columns; counts of excluded cells by (model, reason)."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    models = [c[: -len("_confidence")] for c in rows[0] if c.endswith("_confidence")]
    out: dict[str, list] = {"llm": [], "confidence": [], "correct": []}
    excluded: Counter[tuple[str, str]] = Counter()
    for model in models:
        for row in rows:
            raw_c = (row[f"{model}_confidence"] or "").strip()
            raw_y = (row[f"{model}_correctness"] or "").strip()
            conf: float | None
            try:
                conf = float(raw_c) / 10.0
            except ValueError:
                conf = None
                excluded[(model, raw_c or "empty")] += 1
            try:
                y: float | None = float(raw_y)
            except ValueError:
                y = None
                excluded[(model, "correctness " + (raw_y or "empty"))] += 1
            out["llm"].append(model)
            out["confidence"].append(conf)
            out["correct"].append(y)
    return out, excluded


def main() -> None:
    llm11 = audit_stated(pq.read_table(LLM11))
    print("## 11 LLMs x 5 question sets (verbalized vs answer-token confidence)\n")
    print(table(llm11))
    data, excluded = read_gastro(GASTRO)
    gastro = audit_stated(data, group_by=("llm",), sources=("confidence",))
    print("\n## 48 models, 300 gastroenterology board questions (stated 0-10, /10)\n")
    print(table(gastro, "gastro_board"))
    by_reason: Counter[str] = Counter()
    for (_, reason), k in excluded.items():
        by_reason[reason] += k
    print("\nExcluded cells (not filled):", dict(by_reason))
    worst = sorted(
        {m for m, _ in excluded}, key=lambda m: -sum(excluded[(m, r)] for r in by_reason)
    )
    for m in worst[:8]:
        print(
            f"- {m}: " + ", ".join(f"{r} {excluded[(m, r)]}" for r in by_reason if excluded[(m, r)])
        )


if __name__ == "__main__":
    main()
