"""Audit a model's predictions where they live, on a Spark cluster, and fit its temperature.

    spark-submit examples/spark_audit.py s3://bucket/predictions/ --logits 'logit_*' --label label
    spark-submit --master yarn --deploy-mode cluster --py-files calibkit.zip \\
        examples/spark_audit.py hdfs:///logs/2026-11/ --probs 'prob_*' --label label --by week

    python examples/spark_audit.py preds.parquet --master 'local[2]'   # try it on one machine

calibkit must be installed on the driver (``pip install calibkit``); the executors run only
Spark SQL (every step is a GROUP BY or a global aggregate of the DataFrame), so they need
nothing but Spark. On Databricks, ``%pip install calibkit`` in the notebook and call
``ck.audit(spark.table("catalog.schema.predictions"), engine="spark", columns={...})``.
"""

from __future__ import annotations

import argparse

import calibkit as ck


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="Parquet file or directory (any path Spark can read)")
    parser.add_argument("--label", default=None)
    parser.add_argument("--probs", default=None, help="probability columns, e.g. 'prob_*'")
    parser.add_argument("--logits", default=None, help="logit columns, e.g. 'logit_*'")
    parser.add_argument("--by", default=None, help="also monitor by a column or week/day/month")
    parser.add_argument("--master", default=None, help="only outside spark-submit")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("calibkit audit")
    if args.master:
        builder = builder.master(args.master).config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    frame = spark.read.parquet(args.path)
    columns = {
        k: v
        for k, v in (("label", args.label), ("probs", args.probs), ("logits", args.logits))
        if v is not None
    }

    print(ck.audit(frame, engine="spark", columns=columns))
    if args.logits is not None:
        t = ck.fit_temperature(frame, engine="spark", columns=columns)
        print(f"\nmaximum-likelihood temperature on these rows: T = {t:.6g}")
    if args.by is not None:
        print()
        print(ck.monitor(frame, by=args.by, engine="spark", columns=columns))


if __name__ == "__main__":
    main()
