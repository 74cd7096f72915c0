"""How much the grounded TAS of each system depends on its weights: TAS recomputed from the per-turn CC,
CR and copying values over a grid of other weights (tables/weight_sensitivity.csv, drawn by the
`weight_sensitivity` figure). A ranking of systems that changes across the grid depends on the weights.
"""

from __future__ import annotations

import math

import pandas as pd

from crseval.metrics.grounded import TasSettings, tas_value

SENSITIVITY_SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
SENSITIVITY_GAMMAS = (0.0, 0.1, 0.2, 0.3, 0.4)


def grid_with(grid: tuple[float, ...], value: float) -> list[float]:
    """`grid` with `value` in it (in place of a grid point within rounding of it), ascending."""
    return sorted({point for point in grid if not math.isclose(point, value, abs_tol=1e-9)} | {value})


def weight_grid(weights: dict) -> pd.DataFrame:
    """The weights the sensitivity figure tries, one row each: alpha + beta stays at its configured sum while
    CC's share alpha / (alpha + beta) runs over SENSITIVITY_SHARES and gamma over SENSITIVITY_GAMMAS, both
    grids holding the configured value. The configured column carries the configured alpha and beta
    themselves (not share * sum), so the configured cell's TAS is the one the tables report."""
    alpha, beta, gamma = (float(weights[key]) for key in ("alpha", "beta", "gamma"))
    total = alpha + beta
    if not total > 0:
        raise ValueError(f"scoring.tas: alpha + beta is {total}; the weight grid keeps that sum and needs it positive")
    configured_share = alpha / total
    rows = []
    for gamma_value in grid_with(SENSITIVITY_GAMMAS, gamma):
        for share in grid_with(SENSITIVITY_SHARES, configured_share):
            own = share == configured_share
            rows.append(
                {
                    "alpha": alpha if own else round(share * total, 12),
                    "beta": beta if own else round((1 - share) * total, 12),
                    "gamma": gamma_value,
                    "cc_share": share,
                    "configured": own and gamma_value == gamma,
                }
            )
    return pd.DataFrame(rows)


def mean_tas(turns: pd.DataFrame, alpha: float, beta: float, gamma: float) -> pd.Series:
    """System -> TAS under these weights, averaged as the tables average it: TAS(t) per turn, its mean over
    each session's turns (the session column `tas`), then the mean over the system's sessions."""
    per_turn = tas_value(turns["cc"], turns["cr"], turns["copying"], TasSettings(alpha=alpha, beta=beta, gamma=gamma))
    per_session = per_turn.groupby([turns["system"], turns["session_id"]]).mean()
    return per_session.groupby(level=0).mean()


def sensitivity_table(turns: pd.DataFrame, weights: dict) -> pd.DataFrame:
    """Mean TAS per system for every cell of weight_grid(weights); `configured` marks the configured weights."""
    rows = []
    for cell in weight_grid(weights).to_dict("records"):
        for system, value in mean_tas(turns, cell["alpha"], cell["beta"], cell["gamma"]).items():
            rows.append({"system": system, **cell, "tas": value})
    return pd.DataFrame(rows)[["system", "alpha", "beta", "gamma", "cc_share", "tas", "configured"]]
