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
    Hessian-vector products, each one chunked float64 pass over the data."""

    def __init__(
        self, z: np.ndarray, y: np.ndarray, matrix: bool, h: np.ndarray, identity: np.ndarray
    ) -> None:
        self.z, self.y, self.matrix, self.h = z, y, matrix, h
        self.identity = identity
        self.n, self.c = z.shape
        self.rows = _chunk_rows(self.c)
        self.n_passes = 0
        self.last_nll = math.nan
        sq = 0.0
        for start in range(0, self.n, self.rows):
            block = z[start : start + self.rows].astype(np.float64)
            sq += float(np.einsum("ij,ij->", block, block))
        #: max(1, rms logit): gradients in W scale with the logits.
        self.scale = max(1.0, math.sqrt(sq / z.size))

    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = self.c
        if self.matrix:
            return x[: c * c].reshape(c, c), x[c * c :]
        return x[:c], x[c:]

    def _softmax_blocks(self, x: np.ndarray):
        """Yield (float64 logit block, labels, shifted log-sum-exp terms, probabilities)."""
        a, b = self._split(x)
        idx = np.arange(self.rows)
        for start in range(0, self.n, self.rows):
            block = self.z[start : start + self.rows].astype(np.float64)
            yb = self.y[start : start + self.rows]
            u = _apply(block, a, b, self.matrix)
            u -= u.max(axis=1, keepdims=True)
            true = u[idx[: len(yb)], yb]
            np.exp(u, out=u)
            s = u.sum(axis=1)
            u /= s[:, None]
            yield block, yb, np.log(s) - true, u

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        total = 0.0
        ga = np.zeros((self.c, self.c) if self.matrix else self.c)
        gb = np.zeros(self.c)
        idx = np.arange(self.rows)
        for block, yb, terms, p in self._softmax_blocks(x):
            total += float(terms.sum())
            p[idx[: len(yb)], yb] -= 1.0  # d NLL_i / d u_i = p_i - onehot(y_i)
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
        for block, _, _, p in self._softmax_blocks(x):
            du = _apply(block, va, vb, self.matrix)
            # (diag(p) - p p^T) du, row by row
            du -= np.einsum("ij,ij->i", p, du)[:, None]
            du *= p
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
        for block, _, _, p in self._softmax_blocks(x):
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
        for start in range(0, self.n, self.rows):
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
