"""Regenerate the example data of this folder from the team's shared data (see README.md).

    python examples/data/make_examples.py [--source ../shared/data]

Two files are copied byte for byte; the language-model CSV becomes a Parquet file with typed
columns (``correct`` TRUE/FALSE -> int8 1/0). Every row is kept; missing token probabilities stay
missing (null). The script checks the values and stops if any is out of range.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parents[2] / "shared" / "data"  # <repo>/../shared/data
MAX_BYTES = 1_500_000

COPIES = {
    "densenet40_cifar10_logits.npz": "image_classifiers/densenet40_cifar10_logits.npz",
    "resnet110_c10.csv": "image_classifiers/top1/resnet110_c10.csv",
}
LLM_SOURCE = "llm_confidence/stated_confidence_11_llms.csv"
LLM_TARGET = "llm_stated_confidence.parquet"
LLM_TYPES = {
    "llm": pa.string(),
    "qset": pa.string(),
    "question_id": pa.string(),  # "0".."n" for most sets, "101_h"/"101_r" for HaluEval
    "stated_confidence": pa.float64(),
    "chosen_token_confidence": pa.float64(),
    "max_token_confidence": pa.float64(),
    "correct": pa.bool_(),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    assert sha256(source) == sha256(target)
    print(f"{target.name}: copied from {source} ({target.stat().st_size:,} bytes)")


def convert_llm(source: Path, target: Path) -> None:
    table = pcsv.read_csv(source, convert_options=pcsv.ConvertOptions(column_types=LLM_TYPES))
    if table.column_names != list(LLM_TYPES):
        sys.exit(f"unexpected columns in {source}: {table.column_names}")
    print(f"{target.name}: {table.num_rows:,} rows from {source}")
    for name in table.column_names:
        col = table[name]
        line = f"  {name:<24} nulls {col.null_count:>6,}"
        if pa.types.is_floating(col.type):
            lo, hi = pc.min(col).as_py(), pc.max(col).as_py()
            nan = pc.sum(pc.is_nan(col)).as_py() or 0
            line += f"  min {lo}  max {hi}  NaN {nan}"
            if lo < 0 or hi > 1 or nan:
                sys.exit(f"{name}: values outside [0, 1] or NaN; not writing {target}")
        print(line)
    for name in ("llm", "qset", "question_id", "stated_confidence", "correct"):
        if table[name].null_count:
            sys.exit(f"{name} has missing values; not writing {target}")
    with_tokens = pc.is_valid(table["chosen_token_confidence"])
    models = pc.unique(pc.filter(table["llm"], with_tokens)).to_pylist()
    print(
        f"  token probabilities present in {pc.sum(with_tokens).as_py():,} rows, "
        f"models: {', '.join(sorted(models))}"
    )
    zero = pc.equal(table["stated_confidence"], 0.0)
    print(f"  stated_confidence == 0 in {pc.sum(zero).as_py():,} rows")

    index = table.column_names.index("correct")
    table = table.set_column(index, "correct", table["correct"].cast(pa.int8()))
    pq.write_table(table, target, compression="zstd")
    size = target.stat().st_size
    print(f"  wrote {target} ({size:,} bytes, zstd)")
    if size > MAX_BYTES:
        sys.exit(f"{target} is larger than {MAX_BYTES:,} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source",
        type=Path,
        default=DEFAULT_SOURCE,
        help=f"the shared data folder (default {DEFAULT_SOURCE})",
    )
    args = parser.parse_args()
    for target, relative in COPIES.items():
        copy(args.source / relative, HERE / target)
    convert_llm(args.source / LLM_SOURCE, HERE / LLM_TARGET)


if __name__ == "__main__":
    main()
