"""The objective of vector and matrix scaling (:mod:`calibkit.recalibrate.matrix`): the mean
negative log-likelihood of ``softmax(A(z) + b)`` plus a quadratic penalty towards the identity,
with its exact gradient, Hessian-vector products and (for vector scaling) Hessian, each one
chunked float64 pass over the logits."""

from __future__ import annotations

import math

import numpy as np

_CHUNK_ELEMENTS = 1 << 18


class _Problem:
    """Mean NLL of ``softmax(A(z) + b)`` plus ``sum h * (x - x0)^2``: value, gradient and
    Hessian-vector products, each one chunked float64 pass over the data.

    With ``sample_weight`` (positive, one per row) the mean is the weighted mean
    ``sum_i w_i NLL_i / sum_i w_i``, and so are its derivatives and the logit scale: integer
    weights give the objective of the rows repeated that many times."""

    def __init__(
        self,
        z: np.ndarray,
        y: np.ndarray,
        matrix: bool,
        h: np.ndarray,
        identity: np.ndarray,
        sample_weight: np.ndarray | None = None,
    ) -> None:
        self.z, self.y, self.matrix, self.h = z, y, matrix, h
        self.identity = identity
        self.w = sample_weight
        rows_, self.c = z.shape
        self.n_rows = rows_
        #: what the means divide by: the rows, or their total weight
        self.n = rows_ if sample_weight is None else float(np.sum(sample_weight))
        self.rows = _chunk_rows(self.c)
        self.n_passes = 0
        self.last_nll = math.nan
        sq = 0.0
        for start in range(0, rows_, self.rows):
            block = z[start : start + self.rows].astype(np.float64)
            if sample_weight is None:
                sq += float(np.einsum("ij,ij->", block, block))
            else:
                wb = sample_weight[start : start + self.rows]
                sq += float(np.einsum("i,ij,ij->", wb, block, block))
        #: max(1, rms logit): gradients in W scale with the logits.
        self.scale = max(1.0, math.sqrt(sq / (self.n * self.c)))

    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = self.c
        if self.matrix:
            return x[: c * c].reshape(c, c), x[c * c :]
        return x[:c], x[c:]

    def _block_weights(self, start: int) -> np.ndarray | None:
        return None if self.w is None else self.w[start : start + self.rows]

    def _softmax_blocks(self, x: np.ndarray):
        """Yield (float64 logit block, labels, shifted log-sum-exp terms, probabilities, the
        block's weights or None)."""
        a, b = self._split(x)
        idx = np.arange(self.rows)
        for start in range(0, self.n_rows, self.rows):
            block = self.z[start : start + self.rows].astype(np.float64)
            yb = self.y[start : start + self.rows]
            u = _apply(block, a, b, self.matrix)
            u -= u.max(axis=1, keepdims=True)
            true = u[idx[: len(yb)], yb]
            np.exp(u, out=u)
            s = u.sum(axis=1)
            u /= s[:, None]
            yield block, yb, np.log(s) - true, u, self._block_weights(start)

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        total = 0.0
        ga = np.zeros((self.c, self.c) if self.matrix else self.c)
        gb = np.zeros(self.c)
        idx = np.arange(self.rows)
        for block, yb, terms, p, wb in self._softmax_blocks(x):
            total += float(terms.sum() if wb is None else wb @ terms)
            p[idx[: len(yb)], yb] -= 1.0  # d NLL_i / d u_i = p_i - onehot(y_i)
            if wb is not None:
                p *= wb[:, None]
            ga += p.T @ block if self.matrix else np.einsum("ij,ij->j", p, block)
            gb += p.sum(axis=0)
        self.n_passes += 1
        self.last_nll = total / self.n
        d = x - self.identity
        grad = np.concatenate([ga.ravel(), gb]) / self.n + 2.0 * self.h * d
        return self.last_nll + float(np.sum(self.h * d * d)), grad

    def hessp(self, x: np.ndarray, vec: np.ndarray) -> np.ndarray:
        va, vb = self._split(vec)
        ha = np.zeros((self.c, self.c) if self.matrix else self.c)
        hb = np.zeros(self.c)
        for block, _, _, p, wb in self._softmax_blocks(x):
            du = _apply(block, va, vb, self.matrix)
            # (diag(p) - p p^T) du, row by row
            du -= np.einsum("ij,ij->i", p, du)[:, None]
            du *= p
            if wb is not None:
                du *= wb[:, None]
            ha += du.T @ block if self.matrix else np.einsum("ij,ij->j", du, block)
            hb += du.sum(axis=0)
        self.n_passes += 1
        return np.concatenate([ha.ravel(), hb]) / self.n + 2.0 * self.h * vec

    def hess(self, x: np.ndarray) -> np.ndarray:
        """The full Hessian of vector scaling's objective (2C, 2C), in one pass: with
        S_i = diag(p_i) - p_i p_i^T, the blocks are sum_i D(z_i) S_i D(z_i), sum_i D(z_i) S_i
        and sum_i S_i, each a diagonal minus a Gram matrix."""
        c = self.c
        out = np.zeros((2 * c, 2 * c))
        for block, _, _, p, wb in self._softmax_blocks(x):
            if wb is not None:  # each row's S_i weighed by w_i: scale p by w_i in the sums
                # of p (diagonals) and by sqrt(w_i) in the Gram matrix
                root = np.sqrt(wb)[:, None]
                gram = np.concatenate([block * p, p], axis=1) * root
                out -= gram.T @ gram
                p = p * wb[:, None]
                zp = block * p
            else:
                zp = block * p
                cols = np.concatenate([zp, p], axis=1)
                out -= cols.T @ cols
            diag = np.concatenate([(zp * block).sum(axis=0), p.sum(axis=0)])
            out[np.arange(2 * c), np.arange(2 * c)] += diag
            zsum = zp.sum(axis=0)
            out[np.arange(c), np.arange(c, 2 * c)] += zsum
            out[np.arange(c, 2 * c), np.arange(c)] += zsum
        self.n_passes += 1
        out /= self.n
        out[np.diag_indices(2 * c)] += 2.0 * self.h
        return out

    def separated(self, x: np.ndarray) -> bool:
        """Every row's true class strictly ahead of the others under the map at ``x``."""
        a, b = self._split(x)
        idx = np.arange(self.rows)
        for start in range(0, self.n_rows, self.rows):
            u = _apply(self.z[start : start + self.rows].astype(np.float64), a, b, self.matrix)
            yb = self.y[start : start + self.rows]
            rows = idx[: len(yb)]
            true = u[rows, yb].copy()
            u[rows, yb] = -np.inf
            if not np.all(true > u.max(axis=1)):
                return False
        return True


# ---------------------------------------------------------------------------- helpers


def _chunk_rows(n_classes: int) -> int:
    return max(1, _CHUNK_ELEMENTS // n_classes)


def _apply(block: np.ndarray, a: np.ndarray, b: np.ndarray, matrix: bool) -> np.ndarray:
    """The new logits of a block, in float64 (a fresh array)."""
    block = block.astype(np.float64, copy=False)
    return block @ a.T + b if matrix else block * a + b
