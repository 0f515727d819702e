"""Regenerate the shipped data (this folder and ``tests/stated/data/``) from the collected sources.

    python examples/data/make_examples.py --source DIR

``DIR`` holds the files as collected from the public repositories named in README.md, under the
relative paths listed below (``COPIES``, ``LLM_SOURCE``, ``TEST_COPIES``, ``RAW_REPLIES``). Four
files are copied byte for byte; the language-model CSV becomes a Parquet file with typed columns
(``correct`` TRUE/FALSE -> int8 1/0); the raw replies keep only the columns the parser test reads,
every cell's text unchanged. Every row is kept; missing token probabilities stay missing (null).
The script checks the values and stops if any is out of range.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1] / "tests" / "stated" / "data"
MAX_BYTES = 1_500_000

COPIES = {
    "densenet40_cifar10_logits.npz": "image_classifiers/densenet40_cifar10_logits.npz",
    "resnet110_c10.csv": "image_classifiers/top1/resnet110_c10.csv",
    "wideresnet16_4_cifar_100_probs.npz": "image_classifiers/wideresnet16_4_cifar_100_probs.npz",
    "gastro_board_48_llms.csv": "llm_confidence/gastro_board/confidence_correctness_48_llms.csv",
}
TEST_COPIES = {
    "confidence_sentence_to_number_300.jsonl": (
        "llm_confidence/gastro_board/confidence_sentence_to_number_300.jsonl"
    ),
}
RAW_REPLIES = "llm_confidence/raw_replies"
#: the columns tests/stated/test_parse.py reads: the reply, whether the source parsed it, and
#: what it parsed (the answer and a probability per option, or one confidence)
RAW_COLUMNS = ("content", "coerce", "Answer", "A", "B", "C", "D", "E", "Confidence")
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
    if sha256(source) != sha256(target):
        sys.exit(f"{target} differs from {source} after copying")
    print(f"{target.name}: copied from {source} ({target.stat().st_size:,} bytes)")


def trim_replies(source: Path, target: Path) -> None:
    """Keep the columns of ``RAW_COLUMNS`` that ``source`` has, every row and cell text as is."""
    with source.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        keep = [c for c in RAW_COLUMNS if c in fields]
        rows = [[row[c] for c in keep] for row in reader]
    with target.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(keep)
        writer.writerows(rows)
    with target.open(newline="", encoding="utf-8") as f:
        back = list(csv.reader(f))
    if back[1:] != rows:
        sys.exit(f"{target} does not read back as written")
    print(f"{target.name}: {len(rows):,} rows, columns {', '.join(keep)} of {len(fields)}")


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
        required=True,
        help="the folder of collected sources (image_classifiers/, llm_confidence/)",
    )
    args = parser.parse_args()
    for target, relative in COPIES.items():
        copy(args.source / relative, HERE / target)
    convert_llm(args.source / LLM_SOURCE, HERE / LLM_TARGET)
    TESTS.mkdir(parents=True, exist_ok=True)
    for target, relative in TEST_COPIES.items():
        copy(args.source / relative, TESTS / target)
    replies = TESTS / "raw_replies"
    replies.mkdir(exist_ok=True)
    for source in sorted((args.source / RAW_REPLIES).glob("*.csv")):
        trim_replies(source, replies / source.name)


if __name__ == "__main__":
    main()
