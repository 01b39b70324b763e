"""Summary statistics of samples (no numpy): min / median / max and percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0–100) with linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * p / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0, "min": math.nan, "median": math.nan, "max": math.nan, "mean": math.nan}
    return {
        "n": len(values),
        "min": float(min(values)),
        "median": median(values),
        "max": float(max(values)),
        "mean": sum(values) / len(values),
    }
