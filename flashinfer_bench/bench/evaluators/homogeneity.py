"""Whether a solution's samples come from the reference's distribution, at any vocabulary size: a chi-square test
of homogeneity on tokens merged into bins, with a false-failure rate that does not grow with the vocabulary.

Comparing the two histograms token by token (a total variation distance) cannot work for a large vocabulary: a
row of 128k tokens whose top-p keeps tens of thousands of them gives 100 draws that almost never repeat a token,
so two honest samplers' histograms are nearly disjoint. Here, per row, tokens are put in order of their input
probability (a bijection, so no information about which token was drawn is lost, and tokens of like probability
sit side by side), and consecutive tokens are merged, greedily in that order, into bins that hold at least
``MIN_EXPECTED`` draws of the smaller sample under the pooled frequencies (the last, short run joins the bin
before it). The bins depend only on the pooled counts of both samples; under the hypothesis that both draw from
one distribution, the pooled draws are exchangeable and which of them are the solution's is a uniformly random
split of them, so the test of homogeneity (which conditions on the pooled counts) keeps its level whatever the
bins are. The statistic, summed over rows and trials (independent draws), is compared with a chi-square
distribution of as many degrees of freedom as the bins add: it fails when its upper tail is below the
significance. A row whose pooled draws fill one bin (a deterministic row) adds nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

#: The least expected count, in the smaller sample, of a bin (the chi-square approximation's usual rule).
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class Homogeneity:
    """The chi-square statistic and its degrees of freedom, summed over rows (and trials, by ``+``), and the
    largest of the per-trial mean total variation distances between the binned histograms (a diagnostic)."""

    statistic: float = 0.0
    df: int = 0
    tvd: float = 0.0

    def __add__(self, other: Homogeneity) -> Homogeneity:
        return Homogeneity(self.statistic + other.statistic, self.df + other.df, max(self.tvd, other.tvd))

    @property
    def p_value(self) -> float:
        """The chance that two samplers of one distribution give a statistic at least this large."""
        if self.df == 0:
            return 1.0
        return float(torch.special.gammaincc(torch.tensor(self.df / 2, dtype=torch.float64),
                                             torch.tensor(self.statistic / 2, dtype=torch.float64)))


def homogeneity(probs: torch.Tensor, reference: torch.Tensor, solution: torch.Tensor) -> Homogeneity:
    """The test on one trial's per-row counts [rows, vocab] of the reference's and the solution's draws, with
    tokens ordered by ``probs`` (the rows the samplers were given)."""
    order = torch.argsort(probs.to(reference.device), dim=1, descending=True, stable=True)
    ref_sorted = reference.gather(1, order).double().cpu()
    sol_sorted = solution.to(reference.device).gather(1, order).double().cpu()
    statistic, df, tvd = 0.0, 0, 0.0
    for ref_row, sol_row in zip(ref_sorted, sol_sorted, strict=True):
        drawn = (ref_row + sol_row).nonzero().squeeze(1)
        bins = _bins(ref_row[drawn].tolist(), sol_row[drawn].tolist())
        ref_total, sol_total = sum(r for r, _ in bins), sum(s for _, s in bins)
        total = ref_total + sol_total
        for r, s in bins:
            pooled = r + s
            expected_ref, expected_sol = pooled * ref_total / total, pooled * sol_total / total
            statistic += (s - expected_sol) ** 2 * (1 / expected_ref + 1 / expected_sol)
        df += len(bins) - 1
        tvd += 0.5 * sum(abs(r / ref_total - s / sol_total) for r, s in bins)
    return Homogeneity(statistic, df, tvd / max(len(ref_sorted), 1))


def _bins(ref: list[float], sol: list[float]) -> list[tuple[float, float]]:
    """Consecutive (reference, solution) counts merged so that each bin's pooled count is at least what gives
    MIN_EXPECTED draws of the smaller sample; the short tail joins the last bin."""
    total = sum(ref) + sum(sol)
    smaller = min(sum(ref), sum(sol))
    if smaller == 0:
        return [(sum(ref), sum(sol))]
    least = math.ceil(MIN_EXPECTED * total / smaller)
    bins: list[tuple[float, float]] = []
    r_bin = s_bin = 0.0
    for r, s in zip(ref, sol, strict=True):
        r_bin, s_bin = r_bin + r, s_bin + s
        if r_bin + s_bin >= least:
            bins.append((r_bin, s_bin))
            r_bin = s_bin = 0.0
    if r_bin + s_bin:
        if bins:
            last_r, last_s = bins.pop()
            bins.append((last_r + r_bin, last_s + s_bin))
        else:
            bins.append((r_bin, s_bin))
    return bins
