"""The one place where user input is checked and turned into numpy arrays.

Every public function calls into this package before it computes anything; nothing else calls
``np.asarray`` on user data. Failures raise :class:`calibkit.InputError` with a message that says
what is wrong, where (count, first index and value) and how to fix it. Nothing is clipped,
renormalised or dropped here: data is either usable as it is or rejected.

One module per concern: :mod:`.arrays` (arrays, tensors and columns; finite values in [0, 1]),
:mod:`.outcomes` (outcomes, labels, a positive class), :mod:`.forecasts` (probabilities, logits,
the clip policy, counts), :mod:`.weights` (sample weights, Kish's effective size) and
:mod:`.options` (choices, bins, levels, seeds, edges, paths).
"""

from __future__ import annotations

from .._errors import CalibkitWarning, InputError
from .arrays import (
    ROW_SUM_ATOL,
    CountedError,
    column_to_numpy,
    finite,
    float_array,
    fmt_index,
    to_numpy,
    unit_interval,
    where_first,
)
from .forecasts import (
    AS_PROBABILITIES,
    INSIST_LOGITS,
    clip_setting,
    counts,
    logits_not_probabilities,
    probabilities,
    probability_matrix,
    probability_values,
    scores,
)
from .groups import group_values
from .options import (
    MAX_BINS,
    choice,
    edges,
    level,
    n_bins,
    number_between,
    output_path,
    positive_int,
    seed_or_rng,
    to_numpy_or_scalar,
)
from .outcomes import (
    NEAR_ZERO,
    NEAR_ZERO_SHARE,
    confidence,
    confidence_not_class_probability,
    label_values,
    labels,
    outcome,
    outcome_array,
    outcome_values,
    positive_outcome,
    same_length,
    two_valued,
)
from .weights import (
    all_weights_zero,
    effective_size,
    every_weight_zero,
    sample_weight,
    weight_column,
    weight_values,
)

__all__ = [
    "CalibkitWarning",
    "InputError",
    "AS_PROBABILITIES",
    "CountedError",
    "INSIST_LOGITS",
    "MAX_BINS",
    "NEAR_ZERO",
    "NEAR_ZERO_SHARE",
    "ROW_SUM_ATOL",
    "choice",
    "all_weights_zero",
    "effective_size",
    "every_weight_zero",
    "clip_setting",
    "column_to_numpy",
    "confidence",
    "confidence_not_class_probability",
    "counts",
    "edges",
    "finite",
    "float_array",
    "fmt_index",
    "group_values",
    "label_values",
    "labels",
    "level",
    "logits_not_probabilities",
    "n_bins",
    "number_between",
    "outcome",
    "outcome_array",
    "outcome_values",
    "output_path",
    "positive_int",
    "positive_outcome",
    "probabilities",
    "probability_matrix",
    "probability_values",
    "same_length",
    "sample_weight",
    "weight_column",
    "weight_values",
    "scores",
    "seed_or_rng",
    "to_numpy",
    "to_numpy_or_scalar",
    "two_valued",
    "unit_interval",
    "where_first",
]
