"""The fewest GPUs per instance, screened piece by piece (each count's layouts without
tensor parallelism first), is the first power-of-two count on which any of its layouts
fits when every layout of every count is screened at once (the definition)."""

from __future__ import annotations

import math
import random

import numpy as np

from llm_planner.core.composition.scenario import default_scenario
from llm_planner.core.composition.search import min_gpus_per_instance
from llm_planner.core.composition.search_deployment import FRUGAL_OPTIONS
from llm_planner.core.composition.search_engine import _Problem
from llm_planner.core.composition.search_layouts import enumerate_layouts
from llm_planner.core.primitives.gpus import get_gpu
from llm_planner.core.primitives.presets import get_preset
from llm_planner.core.sections import parallelism as par

MODELS = ["llama-3.1-8b", "llama-2-70b", "mixtral-8x7b", "llama-3.1-405b", "llama-2-7b"]
GPUS = ["h100-sxm", "a100-40gb", "a100-80gb", "l4"]


def _every_layout_at_once(arch, gpu, inputs, training, max_gpus):
    """(fewest power-of-two GPUs on which some layout fits, whether one without tp does):
    all layouts of each count screened in one call, counts from 1 up."""
    problem = _Problem(arch, gpu, inputs, training, params_override=None)
    options = FRUGAL_OPTIONS.model_copy(update={"max_tp": problem.gpus_per_node})
    n = 1
    while n <= max_gpus:
        batch = math.ceil(max(n, inputs.global_batch) / n) * n
        lay = enumerate_layouts(arch, n, batch, options)
        if len(lay):
            m = par.microbatches_per_step(batch, lay)
            peak = par.memory_screen(None, lay, problem.memory, m=m)["peak_bytes"]
            fits = peak <= gpu.memory_bytes
            if np.any(fits):
                return n, bool(np.any(fits & (lay.tp == 1)))
        n *= 2
    return None, False


def test_piecewise_screen_finds_the_count_every_layout_screened_at_once_finds():
    rng = random.Random(26)
    base = default_scenario()
    answers = []
    for _ in range(24):
        model, gpu_id = rng.choice(MODELS), rng.choice(GPUS)
        arch, gpu = get_preset(model).architecture, get_gpu(gpu_id)
        training = base.training.model_copy(
            update={
                "seq_len": rng.choice([1000, 2048, 4096, 8192, 32768]),
                "recompute": rng.choice(["none", "selective", "full"]),
            }
        )
        inputs = base.parallelism.model_copy(update={"global_batch": rng.choice([64, 1024])})
        expected, plain = _every_layout_at_once(arch, gpu, inputs, training, 1 << 14)
        got = min_gpus_per_instance(arch, gpu, inputs, training, max_gpus=1 << 14)
        assert got == expected, (model, gpu_id, training.seq_len)
        answers.append((expected, plain))
    # both paths ran: counts that fit without tp, and counts that need tp to fit
    assert any(plain for _, plain in answers)
    assert any(n is not None and not plain for n, plain in answers)
