"""ck.audit reports its stages to a progress callback (the command line draws a bar from it)."""

from __future__ import annotations

import numpy as np

import calibkit as ck
from calibkit.audit import AUDIT_STAGES


def test_progress_reports_every_stage_in_order_and_ends_complete():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 500)
    y = (rng.random(500) < p).astype(int)
    calls = []
    result = ck.audit(p, y, n_boot=50, n_sims=50, progress=lambda *a: calls.append(a))
    assert [c[0] for c in calls] == [*AUDIT_STAGES, "done"]
    assert [c[1] for c in calls] == list(range(len(AUDIT_STAGES) + 1))
    assert all(c[2] == len(AUDIT_STAGES) for c in calls)
    assert result.ece == ck.audit(p, y, n_boot=50, n_sims=50).ece  # progress changes nothing
