"""The least-squares machinery of :mod:`.calibration` (numpy only): the parameters'
uncertainty from the linearised covariance, the choice of parameters the data determine,
finite-difference Jacobians and projected Levenberg–Marquardt steps on u ∈ [0, 1] (the
method and its references are in :mod:`.calibration`'s notes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from llm_planner.core.composition.calibration_report import (
    ParameterSpec,
)

FloatArray = npt.NDArray[np.float64]


UNDETERMINED_SIGMA = 0.5
"""A fitted parameter whose 1-σ exceeds half its range is held at its default instead."""


def _unit_sigma(jac: FloatArray, r: FloatArray, dof: int) -> FloatArray | None:
    """1-σ of each parameter in unit coordinates (its range = 1), from the Gauss–Newton
    covariance s²·(JᵀJ)⁻¹ with s² = residual² ÷ degrees of freedom; None without them."""
    if dof <= 0:
        return None
    s2 = float(r @ r) / dof
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
    except np.linalg.LinAlgError:
        return None
    return np.asarray(np.sqrt(np.maximum(np.diag(cov), 0.0)))


def fun_of(
    residuals: Callable[[dict[str, float]], FloatArray],
    values_of: Callable[[FloatArray, list[int]], dict[str, float]],
    chosen: list[int],
) -> Callable[[FloatArray], FloatArray]:
    """Residuals as a function of the chosen parameters' unit coordinates."""
    return lambda u: residuals(values_of(u, chosen))


def _choose(
    specs: list[ParameterSpec],
    u_base: FloatArray,
    n: int,
    fun: Callable[[FloatArray], FloatArray],
) -> list[int]:
    """In priority order, the parameters the data move across their range (secant from
    u = 0.15 to 0.85, the others at their defaults) that add a new direction (the secant
    matrix's smallest singular value stays above 1e-3 of the largest), at most n."""
    columns = []
    for k in range(len(specs)):
        low, high = u_base.copy(), u_base.copy()
        low[k], high[k] = 0.15, 0.85
        columns.append(fun(high) - fun(low))
    secants = np.array(columns).T
    chosen: list[int] = []
    for k in range(len(specs)):
        if len(chosen) >= n:
            break
        if float(np.max(np.abs(secants[:, k]))) < 1e-3:
            continue
        singular = np.linalg.svd(secants[:, [*chosen, k]], compute_uv=False)
        if singular[-1] > 1e-3 * singular[0]:
            chosen.append(k)
    return chosen


def _jacobian(fun: Callable[[FloatArray], FloatArray], u: FloatArray, r: FloatArray) -> FloatArray:
    """Forward differences in u ∈ [0, 1] (backward at the upper bound)."""
    h = 1e-5
    jac = np.zeros((len(r), len(u)))
    for k in range(len(u)):
        step = h if u[k] + h <= 1.0 else -h
        v = u.copy()
        v[k] += step
        jac[:, k] = (fun(v) - r) / step
    return jac


def _levenberg_marquardt(
    fun: Callable[[FloatArray], FloatArray], u0: FloatArray, iterations: int = 60
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Minimise ‖fun(u)‖² over the unit box; returns (u, Jacobian at u, residuals at u)."""
    u = np.clip(u0.astype(np.float64), 0.0, 1.0)
    r = fun(u)
    cost = float(r @ r)
    lam = 1e-3
    jac = _jacobian(fun, u, r)
    for _ in range(iterations):
        g = jac.T @ r
        free = ~(((u <= 0.0) & (g > 0)) | ((u >= 1.0) & (g < 0)))
        if not np.any(free):
            break
        a = jac[:, free].T @ jac[:, free]
        improved = False
        for _ in range(12):
            damp = a + lam * np.diag(np.diag(a) + 1e-12)
            try:
                step = np.linalg.solve(damp, -g[free])
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = u.copy()
            trial[free] = np.clip(u[free] + step, 0.0, 1.0)
            r_trial = fun(trial)
            c_trial = float(r_trial @ r_trial)
            if c_trial < cost:
                done = cost - c_trial < 1e-12 * max(cost, 1e-30)
                u, r, cost = trial, r_trial, c_trial
                lam = max(lam / 3, 1e-9)
                improved = True
                break
            lam *= 10
        if not improved:
            break
        jac = _jacobian(fun, u, r)
        if done or cost < 1e-20:
            break
    return u, jac, r
