"""The CORP diagram: drawn from a result, its curve through the PAV blocks, the bands it was
asked for, the histogram underneath, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck

pytest.importorskip("matplotlib")

CONF = [0.4, 0.3, 0.2, 0.1, 0.5, 0.9]
OUTCOME = [0, 0, 0, 1, 1, 1]


def by_gid(artists, gid):
    return [a for a in artists if a.get_gid() == gid]


def test_draws_the_curve_the_band_and_the_histogram() -> None:
    rng = np.random.default_rng(0)
    x = rng.random(2000)
    r = ck.corp(x, (rng.random(x.size) < x**2).astype(int), n_boot=30, seed=0)
    ax = ck.corp_diagram(r)
    (curve,) = by_gid(ax.lines, "calibkit-corp")
    blocks = r.blocks
    xy = curve.get_xydata()
    assert xy.shape == (2 * len(blocks), 2)
    assert xy[0].tolist() == [blocks[0][0], blocks[0][3]]
    assert xy[-1].tolist() == [blocks[-1][1], blocks[-1][3]]
    (band,) = by_gid(ax.collections, "calibkit-consistency")
    assert not by_gid(ax.collections, "calibkit-confidence")
    # the band's outline runs through its lower and upper ends
    outline = band.get_paths()[0].vertices
    assert np.isclose(outline[:, 1].min(), r.consistency.low.min())
    assert np.isclose(outline[:, 1].max(), r.consistency.high.max())
    counts = next(a for a in ax.figure.axes if a.get_label() == "calibkit-counts")
    heights = [p.get_height() for p in counts.patches if p.get_gid() == "calibkit-count"]
    assert len(heights) == 20 and sum(heights) == 2000
    assert ax.get_title().splitlines()[1].startswith("log loss: MCB ")


def test_bands_on_request_and_none_without_resamples() -> None:
    r = ck.corp(CONF, OUTCOME, n_boot=20, seed=1)
    ax = ck.corp_diagram(r, band="both", histogram=False, title="model A")
    assert by_gid(ax.collections, "calibkit-consistency")
    assert by_gid(ax.collections, "calibkit-confidence")
    assert ax.get_title().splitlines()[0] == "model A"
    assert len(ax.figure.axes) == 1
    bare = ck.corp_diagram(ck.corp(CONF, OUTCOME, n_boot=0), band="both")
    assert not by_gid(bare.collections, "calibkit-consistency")
    assert by_gid(bare.lines, "calibkit-corp")


def test_refusals() -> None:
    r = ck.corp(CONF, OUTCOME, n_boot=0)
    with pytest.raises(ck.InputError, match="corp_diagram: expected a CorpResult"):
        ck.corp_diagram(ck.reliability_bins(CONF, OUTCOME))
    with pytest.raises(ck.InputError, match="corp_diagram: band must be one of"):
        ck.corp_diagram(r, band="everything")
