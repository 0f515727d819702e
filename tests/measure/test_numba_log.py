"""The vectorised logarithm of the numba kernels against numpy's."""

import numpy as np
import pytest


def test_logs_is_within_one_ulp_of_numpy_and_numpys_off_the_normal_range() -> None:
    pytest.importorskip("numba")
    import numba

    from calibkit._numba_log import CHUNK, logs

    @numba.njit
    def chunked(x):
        out = np.empty_like(x)
        buf, got, scratch = np.empty(CHUNK), np.empty(CHUNK), np.empty(CHUNK, np.int64)
        for a in range(0, x.shape[0], CHUNK):
            m = min(CHUNK, x.shape[0] - a)
            buf[:m] = x[a : a + m]
            logs(buf, m, got, scratch)
            out[a : a + m] = got[:m]
        return out

    rng = np.random.default_rng(7)
    special = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 1e-310, 2.2250738585072014e-308]
    edges = [1.0, 2.0, 0.5, np.sqrt(0.5), np.sqrt(2.0), np.nextafter(np.sqrt(0.5), 0), 1e308]
    x = np.concatenate(
        [
            rng.random(200_000),
            np.exp(rng.uniform(-740.0, 709.0, 200_000)),
            1.0 + 1e-9 * rng.standard_normal(20_000),  # log near 0: relative accuracy
            special,
            edges,
        ]
    )
    got = chunked(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(x)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])  # -inf, nan, inf as numpy's
    assert got[np.isin(x, special[6:])].tolist() == want[np.isin(x, special[6:])].tolist()
    ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
    assert ulps.max() <= 1.0  # both within about half an ulp of the exact value
    assert got[x == 1.0][0] == 0.0 and got[x == 2.0][0] == np.log(2.0)
