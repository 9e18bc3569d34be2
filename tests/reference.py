"""Independent reference computations used by several tests (plain loops, no pmlbench code)."""

from __future__ import annotations

import numpy as np


def matlab_ranking_metrics(Y, S):
    """One-error, ranking loss, average precision and coverage, transcribed from the loops of
    Zhang's MATLAB evaluation code (degenerate rows excluded, stable ascending sort for ranks)."""
    keep = [i for i in range(len(Y)) if 0 < Y[i].sum() < Y.shape[1]]
    q = Y.shape[1]
    one_err = rl = ap = 0.0
    for i in keep:
        relevant = [j for j in range(q) if Y[i, j]]
        irrelevant = [j for j in range(q) if not Y[i, j]]
        top = S[i].max()
        one_err += 0 if any(S[i, j] == top for j in relevant) else 1
        wrong = sum(S[i, a] <= S[i, b] for a in relevant for b in irrelevant)
        rl += wrong / (len(relevant) * len(irrelevant))
        index = sorted(range(q), key=lambda j: S[i, j])  # Python's sort is stable
        loc = {j: index.index(j) + 1 for j in range(q)}
        total = 0.0
        for j in relevant:
            above = sum(1 for r in relevant if loc[r] >= loc[j])
            total += above / (q - loc[j] + 1)
        ap += total / len(relevant)
    cover = 0.0
    for i in range(len(Y)):
        index = sorted(range(q), key=lambda j: S[i, j])
        locs = [index.index(j) + 1 for j in range(q) if Y[i, j]]
        cover += q - min(locs, default=q + 1) + 1
    n = len(keep)
    return {
        "one_error": one_err / n,
        "ranking_loss": rl / n,
        "average_precision": ap / n,
        "coverage": cover / len(Y) - 1,
    }


def bipartition_metrics(Y, P):
    """Subset accuracy, Hamming loss, macro-F1 (zero_division 0) and micro-F1 from counts."""
    n, q = Y.shape
    subset = sum(all(Y[i, j] == P[i, j] for j in range(q)) for i in range(n)) / n
    hamming = sum(Y[i, j] != P[i, j] for i in range(n) for j in range(q)) / (n * q)
    f1s, TP, FP, FN = [], 0, 0, 0
    for j in range(q):
        tp = sum(1 for i in range(n) if Y[i, j] and P[i, j])
        fp = sum(1 for i in range(n) if not Y[i, j] and P[i, j])
        fn = sum(1 for i in range(n) if Y[i, j] and not P[i, j])
        f1s.append(2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else 0.0)
        TP, FP, FN = TP + tp, FP + fp, FN + fn
    return {
        "subset_accuracy": subset,
        "hamming_loss": hamming,
        "macro_f1": float(np.mean(f1s)),
        "micro_f1": 2 * TP / (2 * TP + FP + FN),
    }
