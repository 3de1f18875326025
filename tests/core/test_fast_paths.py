"""The one-layout fast paths give the general (array) path's values exactly."""

from __future__ import annotations

import itertools
import math

import numpy as np

from llm_planner.core.quantities import comm


def test_gemm_efficiency_of_one_gemm_equals_the_array_path() -> None:
    sizes = (1.0, 7.0, 64.0, 127.0, 128.0, 129.0, 4096.0, 14336.0 / 3, 1e6)
    for m, n, k in itertools.product(sizes, repeat=3):
        for sms, peak, bandwidth, batch in (
            (132, 989e12, math.inf, 1.0),
            (108, 312e12, 1.6e12, 1.0),
            (132, 1979e12, 3.35e12, 32.0),
        ):
            kw = {
                "sms": sms,
                "large_efficiency": 0.8,
                "peak_flops": peak,
                "memory_bytes_per_s": bandwidth,
            }
            one = comm.gemm_efficiency(np.array([m]), n, k, batch=batch, **kw)
            many = comm.gemm_efficiency(np.array([m, m]), n, k, batch=batch, **kw)
            assert one.shape == (1,)
            assert one[0] == many[0], (m, n, k, sms, peak, bandwidth, batch)
            scalar = comm.gemm_efficiency(m, n, k, batch=batch, **kw)
            assert scalar.shape == ()
            assert float(scalar) == many[0]


def test_gemm_efficiency_edge_cases_keep_numpy_rules() -> None:
    kw = {"sms": 132, "large_efficiency": 0.8, "peak_flops": 989e12}
    with np.errstate(all="ignore"):
        for m in (0.0, math.inf, math.nan):
            one = comm.gemm_efficiency(np.array([m]), 4096.0, 4096.0, **kw)
            many = comm.gemm_efficiency(np.array([m, m]), 4096.0, 4096.0, **kw)
            np.testing.assert_array_equal(one, many[:1])
