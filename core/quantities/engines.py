"""Serving engines: what differs between vLLM, SGLang, TensorRT-LLM, llama.cpp (and
LMDeploy's TurboMind, whose published table the serving model is checked against).

An engine is data, not a branch (STYLE.md 19): the serving model
(:mod:`llm_planner.core.sections.serving`) takes a profile and never asks which engine it
has. Each field was read from the engine's source or documentation at the commit its
``source`` names (public repositories, read through a code index this session); a value
that was not re-read says so.

What a profile sets:

* the scheduler's limit on concurrent requests, and whether requests join a running batch
  (continuous / in-flight batching) or wait for the batch to finish (static batching);
* the paged KV block (a sequence's cache is rounded up to whole blocks) and the share of
  the memory left after the weights that the KV pool takes;
* how a replica's GPUs split the model: tensor parallel (every layer on every GPU, two
  all-reduces per layer) or layers split across GPUs (llama.cpp: a token visits the GPUs
  one after another; prompt micro-batches are pipelined across them);
* whether attention is fused (FlashAttention-style: no score matrix in memory) or not;
* the prompt tokens one forward step takes (chunked prefill);
* the host time per step the GPU waits for (scheduling, sampling, kernel launches that CUDA
  graphs do not hide).
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field


class EngineProfile(BaseModel):
    """One serving engine's behaviour, as its source and documentation state it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str
    max_concurrent_requests: int = Field(
        gt=0, description="scheduler limit on requests decoding at once"
    )
    continuous_batching: bool = Field(
        description="requests join and leave the running batch at every step (in-flight "
        "batching); False: a batch runs to its end before the next starts"
    )
    kv_block_tokens: int = Field(gt=0, description="paged KV block, tokens")
    reserves_whole_sequence: bool = Field(
        description="a request's KV blocks for prompt + every output token are reserved when "
        "it starts (TensorRT-LLM's guaranteed-no-evict scheduler, llama.cpp's per-slot "
        "context); False: blocks are taken as tokens arrive, so the pool holds sequences at "
        "their mean length"
    )
    kv_memory_fraction: float = Field(
        gt=0,
        le=1,
        description="share of the GPU memory left after weights and runtime overhead that "
        "the KV pool takes",
    )
    tensor_parallel: bool = Field(
        description="GPUs of a replica split every layer (tensor parallel); False: layers "
        "are split across GPUs and a token visits them in turn"
    )
    pipeline_microbatches: int = Field(
        default=1,
        gt=0,
        description="prompt micro-batches in flight across layer-split GPUs",
    )
    fused_attention: bool = Field(
        description="FlashAttention-style attention kernels (no score matrix in memory)"
    )
    prefill_chunk_tokens: int = Field(
        gt=0, description="prompt tokens one forward step processes at most"
    )
    step_overhead_seconds: float = Field(
        ge=0, description="host time per forward step the GPU waits for (fitted, see source)"
    )
    quantized_compute_dtype: str = Field(
        default="bf16",
        description="math dtype of the matrix multiplies for block-quantized weights "
        "(GGUF k-quants, int4 groups): the peak the prefill GEMMs run at",
    )
    prefill_compute_fraction: dict[str, float] = Field(
        default_factory=dict,
        description="achieved share of peak of the engine's prefill GEMMs by GPU class "
        "(consumer, professional, apple); absent: the serving model's common fraction",
    )
    decode_bandwidth_fraction: dict[str, float] = Field(
        default_factory=dict,
        description="achieved share of memory bandwidth of the engine's decode GEMV by GPU "
        "class; absent: the serving model's common fraction",
    )
    prefill_flops_per_joule: dict[str, float] = Field(
        default_factory=dict,
        description="sustained FLOP per joule of the engine's prefill GEMMs by GPU "
        "architecture: at the board power (TDP) they cap the compute rate",
    )
    quantized_prefill_factor: float = Field(
        default=1.0, gt=0, description="speed of the block-quantized GEMMs ÷ the fp16 ones"
    )
    quantized_bandwidth_factor: float = Field(
        default=1.0,
        gt=0,
        description="achieved bandwidth of the block-quantized GEMV ÷ that of fp16 weights",
    )
    source: str = ""


STEP_OVERHEAD_TENSORRT_SECONDS = 1.5e-3
"""Host time per decode step of TensorRT-LLM's C++ in-flight-batching runtime (the batch
manager schedules in C++; the engine replays CUDA graphs). Fitted on the TensorRT-LLM
max-throughput rows of serving-calibration.json together with the compute and bandwidth
fractions of :mod:`llm_planner.core.sections.serving` (scripts/fit_serving.py;
docs/ACCURACY.md, "Serving"); it matters only where a step is shorter than a few ms. It
also absorbs what a step does besides its GEMMs and attention (sampling, the logits,
norms), which this model does not price separately."""

STEP_OVERHEAD_TURBOMIND_SECONDS = 1.0e-3
"""Host time per step of LMDeploy's TurboMind (C++ batch loop, no CUDA graphs at v0.1):
fitted on the LMDeploy per-token latencies (scripts/fit_serving.py; docs/ACCURACY.md,
"Serving")."""

STEP_OVERHEAD_LLAMA_CPP_SECONDS = 1.0e-3
"""Host time per llama.cpp token: ggml graph build and scheduling per ``llama_decode``
call (no CUDA graphs at build 2824). Fitted on llama.cpp's tg rows (scripts/fit_serving.py;
docs/ACCURACY.md, "Serving")."""

STEP_OVERHEAD_PYTHON_SCHEDULER_SECONDS = 2.0e-3
"""Host time per step of a Python scheduler with CUDA-graph decode (vLLM V0, SGLang):
scheduling, input preparation, sampling and detokenisation hand-off. An assumption: the
vLLM V1 announcement (vLLM blog, January 2025) names V0's CPU overhead per step as a main
cost its rewrite removes; no table in serving-calibration.json measures these engines, so
it is not fitted (twice TensorRT-LLM's fitted C++ figure)."""

LLAMA_CPP_PREFILL_FRACTION: dict[str, float] = {
    "consumer": 1.0,
    "professional": 0.6,
    "datacenter": 0.4,
    "apple": 0.8,
}
"""Share of the catalog's fp16 peak llama.cpp's prompt GEMMs reach, by GPU class. Fitted on
llama.cpp's pp rows, one value per GPU class (scripts/fit_serving.py; docs/ACCURACY.md,
"Serving").
GeForce above 0.5: llama.cpp's cuBLAS F16 path accumulates in fp16, which GeForce cards run
at twice the fp32-accumulate rate the catalog quotes; workstation and data-centre cards
reach far less of their peak at this build (May 2024)."""

LLAMA_CPP_PREFILL_FLOPS_PER_JOULE: dict[str, float] = {
    "ampere-ga10x": 0.25e12,
    "ampere-ga100": 0.42e12,
    "ada": 0.37e12,
    "hopper": 0.50e12,
}
"""FLOP per joule llama.cpp's prompt GEMMs sustain, by architecture (Samsung 8 nm GA10x,
TSMC 7 nm GA100, TSMC 4N Ada and Hopper): at the board power limit a GPU's clocks drop
below the boost clock its datasheet peak assumes, so a card's prompt rate is at most
TDP × this. Fitted on llama.cpp's pp rows (scripts/fit_serving.py; docs/ACCURACY.md,
"Serving"): within a generation the rate per watt is nearly constant (Ada 0.34-0.40
TFLOP/J from the RTX 4000 Ada at 130 W to the RTX 6000 Ada at 300 W)."""

LLAMA_CPP_DECODE_BANDWIDTH_FRACTION: dict[str, float] = {"datacenter": 0.45}
"""Share of HBM bandwidth llama.cpp's single-stream GEMV reaches on data-centre GPUs (A100,
H100): far below its share of GDDR and unified memory, which the common fraction gives.
Its GEMV keeps few bytes in flight per SM, and HBM's higher latency needs more to be
saturated (Little's law). Fitted on the llama.cpp tg rows of the A100 and H100 PCIe."""

LLAMA_CPP_QUANTIZED_PREFILL_FACTOR = 0.8
"""Speed of llama.cpp's quantized matrix multiplies (MMQ: int8 dot products on CUDA cores
at build 2824, before its int8 tensor-core kernels) ÷ its F16 cuBLAS path, for prompts.
Fitted on the Q4_K_M pp rows (scripts/fit_serving.py; docs/ACCURACY.md, "Serving")."""

LLAMA_CPP_QUANTIZED_BANDWIDTH_FACTOR = 0.8
"""Achieved bandwidth of llama.cpp's Q4_K dequantising GEMV ÷ that of its F16 GEMV (the
k-quant super-blocks are unpacked on the fly). Fitted on the Q4_K_M tg rows."""

VLLM_SOURCE = (
    "vllm-project/vllm@001999d2f360c2c5da23a916510c273b1a73d06c vllm/engine/arg_utils.py "
    "EngineArgs: max_num_seqs 256 (V0) / 1024 (V1), gpu_memory_utilization 0.90, CUDA "
    "graphs up to max_seq_len_to_capture 8192; block_size 16 on CUDA (vllm/config.py "
    "CacheConfig; not re-read this session); chunked prefill budget max_num_batched_tokens "
    "(2048 default with chunked prefill in V0's SchedulerConfig; not re-read)"
)
SGLANG_SOURCE = (
    "sgl-project/sglang docs/backend/server_arguments.md (what max_running_requests, "
    "chunked_prefill_size and mem_fraction_static mean); the defaults used here (page_size "
    "1: token-granular radix cache; chunked_prefill_size 8192 on GPUs of 25 GB or more; "
    "mem_fraction_static 0.88 on one GPU; max_running_requests derived from the KV pool, "
    "capped here at 4096) are ServerArgs.__post_init__'s in python/sglang/srt/"
    "server_args.py, not re-read at a commit this session"
)
TENSORRT_SOURCE = (
    "NVIDIA/TensorRT-LLM@258c7540c03517def55d9a5aadfa9288af474e1b "
    "docs/source/performance/perf-overview.md (trtllm-bench build/throughput, in-flight "
    "batching, kv_cache_free_gpu_mem_fraction 0.95, chunked context on GH200); "
    "max_batch_size 2048 and tokens_per_block 64 are TensorRT-LLM build defaults "
    "(not re-read this session)"
)
LLAMA_CPP_SOURCE = (
    "ggml-org/llama.cpp@001d906a6d86e2490e394361e7cc6f478b100088 common/common.h "
    "common_params: n_batch 2048, n_ubatch 512, n_parallel 1, split_mode "
    "LLAMA_SPLIT_MODE_LAYER, cache_type_k/v F16; pipeline parallelism over layer-split GPUs "
    "with n_batch / n_ubatch = 4 micro-batches in flight (ggml-backend scheduler copies, "
    "GGML_SCHED_MAX_COPIES 4, llama.cpp PR #6017); llama-bench ran with flash attention "
    "off (its default at build 2824, May 2024; not re-read this session)"
)
TURBOMIND_SOURCE = (
    "InternLM/lmdeploy@3e391df4673326f79363eebe030876861a9b7090 docs/en/benchmark/"
    "a100_fp16.md (static batches of concurrent requests, TurboMind engine, v0.1.0a1); "
    "KV pool: the memory left after the weights (the table's mem(GB) column: 76.55 GB of "
    "80 used with llama2-7b)"
)


@cache
def engine_profiles() -> dict[str, EngineProfile]:
    """Every engine profile by id."""
    profiles = [
        EngineProfile(
            id="vllm",
            name="vLLM",
            max_concurrent_requests=256,
            continuous_batching=True,
            reserves_whole_sequence=False,
            kv_block_tokens=16,
            kv_memory_fraction=0.90,
            tensor_parallel=True,
            fused_attention=True,
            prefill_chunk_tokens=2048,
            step_overhead_seconds=STEP_OVERHEAD_PYTHON_SCHEDULER_SECONDS,
            source=VLLM_SOURCE,
        ),
        EngineProfile(
            id="sglang",
            name="SGLang",
            max_concurrent_requests=4096,
            continuous_batching=True,
            reserves_whole_sequence=False,
            kv_block_tokens=1,
            kv_memory_fraction=0.88,
            tensor_parallel=True,
            fused_attention=True,
            prefill_chunk_tokens=8192,
            step_overhead_seconds=STEP_OVERHEAD_PYTHON_SCHEDULER_SECONDS,
            source=SGLANG_SOURCE,
        ),
        EngineProfile(
            id="tensorrt-llm",
            name="TensorRT-LLM",
            max_concurrent_requests=2048,
            continuous_batching=True,
            reserves_whole_sequence=True,
            kv_block_tokens=64,
            kv_memory_fraction=0.95,
            tensor_parallel=True,
            fused_attention=True,
            prefill_chunk_tokens=8192,
            step_overhead_seconds=STEP_OVERHEAD_TENSORRT_SECONDS,
            source=TENSORRT_SOURCE,
        ),
        EngineProfile(
            id="llama.cpp",
            name="llama.cpp",
            max_concurrent_requests=1,
            continuous_batching=True,
            reserves_whole_sequence=True,
            kv_block_tokens=1,
            kv_memory_fraction=1.0,
            tensor_parallel=False,
            pipeline_microbatches=4,
            fused_attention=False,
            prefill_chunk_tokens=512,
            step_overhead_seconds=STEP_OVERHEAD_LLAMA_CPP_SECONDS,
            quantized_compute_dtype="fp16",
            prefill_compute_fraction=dict(LLAMA_CPP_PREFILL_FRACTION),
            prefill_flops_per_joule=dict(LLAMA_CPP_PREFILL_FLOPS_PER_JOULE),
            decode_bandwidth_fraction=dict(LLAMA_CPP_DECODE_BANDWIDTH_FRACTION),
            quantized_prefill_factor=LLAMA_CPP_QUANTIZED_PREFILL_FACTOR,
            quantized_bandwidth_factor=LLAMA_CPP_QUANTIZED_BANDWIDTH_FACTOR,
            source=LLAMA_CPP_SOURCE,
        ),
        EngineProfile(
            id="lmdeploy",
            name="LMDeploy (TurboMind)",
            max_concurrent_requests=256,
            continuous_batching=False,
            reserves_whole_sequence=False,
            kv_block_tokens=64,
            kv_memory_fraction=0.95,
            tensor_parallel=True,
            fused_attention=True,
            prefill_chunk_tokens=1 << 20,
            step_overhead_seconds=STEP_OVERHEAD_TURBOMIND_SECONDS,
            source=TURBOMIND_SOURCE,
        ),
    ]
    return {profile.id: profile for profile in profiles}


ENGINE_IDS: tuple[str, ...] = ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "lmdeploy")
"""The engine ids a scenario may name, in display order."""


def get_engine(engine_id: str) -> EngineProfile:
    """The profile ``engine_id`` (case-insensitive); ValueError naming the known ids."""
    profiles = engine_profiles()
    key = engine_id.strip().lower()
    if key in profiles:
        return profiles[key]
    raise ValueError(f"unknown serving engine {engine_id!r}; known: {', '.join(profiles)}")
