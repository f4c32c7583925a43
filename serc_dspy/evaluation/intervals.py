"""95% bootstrap intervals for every quality figure, and the paired difference of two runs.

Why a bootstrap over items: a benchmark's rates pool units (planted errors, claims) that come in
clusters (a bio, an answer), and the units of one cluster are not independent: one reset draft
loses all its facts at once. Resampling whole items keeps that dependence, so the interval is
honest about how few items there really are.

A figure is a ratio of sums over items: each item contributes `(part, whole)` (errors left and
errors planted, say), and the rate is `sum(part) / sum(whole)`. A mean over items is the same
thing with `whole = 1`. Items with `whole = 0` (a bio with no units) still take part in the
resampling, and add nothing.

A change "helps" only when the interval of the paired difference excludes zero: both runs are
restricted to the items they share, and the same resampled items are used for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

LEVEL = 0.95
RESAMPLES = 2000
SEED = 0

Pair = tuple[float, float]
"""(part, whole) of one item."""


def rate(pairs: Sequence[Pair]) -> float | None:
    whole = sum(w for _, w in pairs)
    return sum(p for p, _ in pairs) / whole if whole else None


def _indices(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(round(low, 6)), float(round(high, 6))


def bootstrap_rate(pairs: Sequence[Pair], *, level: float = LEVEL, resamples: int = RESAMPLES,
                   seed: int = SEED) -> tuple[float, float] | None:
    """Percentile interval of `sum(part) / sum(whole)` over items resampled with replacement.

    None when no item has a denominator. Resamples whose denominator is 0 are left out (they
    have no rate); with a fixed seed the interval is reproducible.
    """
    if not pairs or not any(w for _, w in pairs):
        return None
    parts = np.array([p for p, _ in pairs], dtype=float)
    wholes = np.array([w for _, w in pairs], dtype=float)
    index = _indices(len(pairs), resamples, seed)
    num, den = parts[index].sum(axis=1), wholes[index].sum(axis=1)
    keep = den > 0
    return _percentiles(num[keep] / den[keep], level)


def bootstrap_statistic(n: int, statistic, *, level: float = LEVEL,
                        resamples: int = RESAMPLES, seed: int = SEED
                        ) -> tuple[float, float] | None:
    """Percentile interval of any `statistic(indices)` over `n` items resampled with
    replacement (macro-F1, say, which is no ratio of sums)."""
    if n <= 0:
        return None
    values = np.array([statistic(list(row)) for row in _indices(n, resamples, seed)],
                      dtype=float)
    return _percentiles(values, level)


class Difference(BaseModel):
    """`a - b` on the items both runs scored, with its bootstrap interval."""

    figure: str
    a: float | None
    b: float | None
    difference: float | None
    low: float | None
    high: float | None
    items: int

    @property
    def excludes_zero(self) -> bool:
        return self.low is not None and (self.low > 0 or self.high < 0)


def paired_difference(a: Mapping[str, Pair], b: Mapping[str, Pair], *, figure: str = "",
                      level: float = LEVEL, resamples: int = RESAMPLES,
                      seed: int = SEED) -> Difference:
    """The difference of two runs' rates over the items both have, resampled together."""
    keys = [k for k in a if k in b]
    pa, pb = [a[k] for k in keys], [b[k] for k in keys]
    ra, rb = rate(pa), rate(pb)
    if ra is None or rb is None:
        return Difference(figure=figure, a=ra, b=rb, difference=None, low=None, high=None,
                          items=len(keys))
    index = _indices(len(keys), resamples, seed)
    arrays = [np.array(p, dtype=float).reshape(-1, 2) for p in (pa, pb)]
    sums = [(x[:, 0][index].sum(axis=1), x[:, 1][index].sum(axis=1)) for x in arrays]
    keep = (sums[0][1] > 0) & (sums[1][1] > 0)
    diffs = sums[0][0][keep] / sums[0][1][keep] - sums[1][0][keep] / sums[1][1][keep]
    low, high = _percentiles(diffs, level)
    return Difference(figure=figure, a=ra, b=rb, difference=round(ra - rb, 6), low=low,
                      high=high, items=len(keys))


def with_intervals(figures: Mapping[str, Sequence[Pair]], *, seed: int = SEED) -> dict:
    """`{figure: rate, figure + "_ci": [low, high] or None}` for each figure's item pairs."""
    out: dict = {}
    for name, pairs in figures.items():
        out[name] = rate(pairs)
        ci = bootstrap_rate(pairs, seed=seed)
        out[f"{name}_ci"] = list(ci) if ci else None
    return out


def format_ci(value: float | None, ci: Sequence[float] | None, spec: str = ".3f") -> str:
    """`0.412 [0.30, 0.52]`; a dash when there is no value."""
    if value is None:
        return "–"
    text = format(value, spec)
    return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else text
