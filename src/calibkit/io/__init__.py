"""Reading prediction files (CSV, TSV, Parquet, JSON lines and NumPy ``.npz``) and tables in
memory (pandas and polars DataFrames, pyarrow Tables).

:func:`read_predictions` turns a file or a table into a :class:`Predictions` (``kind``,
``scores``, ``labels``, the ``columns`` it used and the ``path``), ready for
``ck.audit(p.scores, p.labels, from_logits=p.kind == "logits")``; ``ck.audit(table)`` and
``ck.monitor(table, by=...)`` read a table so. :func:`calibrate_table` replaces a table's score
columns by a calibrator's probabilities and keeps the rest (``calibkit apply``).

Reading checks what belongs to reading, by the rules of :mod:`calibkit.io._rules` that every
engine applies (docs/file-rules.md): the file is a regular file that parses as its format, the
columns exist once each, hold numbers in the forms the rules admit, and have no missing or NaN
values; TRUE/FALSE becomes 1/0 in label and outcome columns. The numbers themselves (ranges,
row sums) are checked later by the function that uses them, and its message names the column
and the row.

Formats
-------
By extension, or ``format=``: ``.csv`` (``csv``), ``.tsv``/``.tab`` (``tsv``), ``.parquet``/``.pq``
(``parquet``), ``.jsonl``/``.ndjson`` (``jsonl``, one JSON object per line), ``.npz``
(``npz``). Text formats may be compressed (``.csv.gz``, ``.jsonl.bz2``, ...). In an ``.npz``
the arrays play the role of columns: a 1-D array is a column, a 2-D array a whole (N, C)
matrix. In Parquet and JSON lines a column of equal-length lists is such a matrix too.

Choosing columns
----------------
``probs`` / ``logits`` take a list of column names, a comma-separated string, or a glob such as
``"prob_*"`` (columns whose names end in numbers are put in numeric order, so ``prob_10`` follows
``prob_9``); in an ``.npz``, the name of a 2-D array. A single 1-D column is a binary forecast:
P(label = 1), or its logit. ``label`` names the class-index column. ``confidence`` with
``correct`` names a confidence column and its 0/1 outcome (1/0, TRUE/FALSE, true/false);
``confidence`` with ``prediction`` and ``label`` derives ``correct = (prediction == label)``.
With one score column, ``pos_label`` names the label value it forecasts (``labels`` is then
the 0/1 outcome ``label == pos_label``); a label column written as text needs it, and the
message lists its two values. A table in memory is read by the same rules, its column names
as text; an error names the user's column and row.

Detection (when an option is not given)
---------------------------------------
Names are matched without regard to case, and detection only ever picks a column when exactly
one candidate fits; otherwise it raises :class:`calibkit.InputError` listing the columns and the
option to pass.

- label: a column named ``label``, ``labels``, ``y``, ``target``, ``true_label`` or ``y_true``.
- probabilities: the columns matching one of ``prob_*``, ``p_*``, ``proba_*``, or one 2-D
  array / list column named ``probs``, ``probabilities`` or ``proba``.
- logits: the columns matching ``logit_*`` or ``logits_*``, or one 2-D array / list column
  named ``logits``.
- confidence: a column named ``confidence``, with either a column named ``correct``, or a
  prediction column (``prediction``, ``pred``, ``pred_label``, ``predicted``,
  ``predicted_label``, ``y_pred``) and a label column. Passing ``label`` selects the
  prediction route.

Exactly one of the three kinds must be found: a file with both ``prob_*`` and ``logit_*``
columns, or with ``prob_*`` columns and a ``confidence`` column, is ambiguous, and so are two
groups of probability columns (``prob_*`` and ``p_*``) or a ``correct`` column beside a
prediction column. Pass the option the message names.

Examples
--------
>>> import numpy as np, pathlib, tempfile
>>> from calibkit.io import read_predictions
>>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.csv"
>>> _ = path.write_text("prob_0,prob_1,label\\n0.9,0.1,0\\n0.2,0.8,1\\n0.6,0.4,1\\n")
>>> p = read_predictions(path)
>>> p.kind, p.scores.shape, p.labels.tolist(), p.columns["probs"]
('probs', (3, 2), [0, 1, 1], ['prob_0', 'prob_1'])
"""

from . import _rules as rules
from ._batches import file_schema, read_batches
from ._calibrate import (
    TABLE_OUTPUTS,
    CalibratedTable,
    calibrate_table,
    check_scale,
    plan_scores,
    write_table,
)
from ._entry import Entry, entry, retagged
from ._formats import EXTENSIONS, format_from_extension, resolve_format
from ._frames import FrameSource, frame_kind, is_frame
from ._named import naming_columns
from ._partial import PartlyLabelled, read_partly_labelled
from ._plan import (
    COLUMN_ROLES,
    ColumnPlan,
    column_options,
    plan_columns,
    planned_names,
    planned_roles,
)
from ._problems import missing_values
from ._read import FORMATS, Predictions, open_any, read_predictions
from ._rules import check_names, short, shown
from ._sources import Schema, check_file, check_path, column_list, open_source

__all__ = [
    "PartlyLabelled",
    "read_partly_labelled",
    "COLUMN_ROLES",
    "CalibratedTable",
    "ColumnPlan",
    "EXTENSIONS",
    "Entry",
    "FORMATS",
    "FrameSource",
    "Predictions",
    "Schema",
    "TABLE_OUTPUTS",
    "calibrate_table",
    "check_file",
    "check_names",
    "check_path",
    "check_scale",
    "column_list",
    "column_options",
    "entry",
    "file_schema",
    "format_from_extension",
    "frame_kind",
    "is_frame",
    "missing_values",
    "naming_columns",
    "open_any",
    "open_source",
    "plan_columns",
    "plan_scores",
    "planned_names",
    "planned_roles",
    "read_batches",
    "read_predictions",
    "resolve_format",
    "retagged",
    "rules",
    "short",
    "shown",
    "write_table",
]
