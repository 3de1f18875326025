"""NVIDIA's Megatron-Bridge performance recipes (issue 27): every published row stated as a
scenario and priced (``megatron_bridge.py``; the page's section is written by
``scripts/gen_accuracy.py``).

The bounds are ratcheted to the figures reached (docs/ACCURACY.md states them; each
docstring keeps the history), so a change that makes these rows worse fails here; issue
27's target, a median |error| ≤ 10%, p90 ≤ 25%, every subgroup's median ≤ 15%, with no row
refused, is met.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


mb = _load("llm_planner_megatron_bridge", HERE / "megatron_bridge.py")


def _row(suffix: str) -> dict:
    return next(r for r in mb.load()["rows"] if r["id"].endswith(suffix))


def test_every_published_row_is_read() -> None:
    """86 rows; the first is line 112 of the 26.06 table: DeepSeek-V3 on 256 GB300, MXFP8,
    tp 1, pp 2, vp 8, ep 32, 6,338 tokens/s per GPU (raw row in the file's notes)."""
    rows = mb.bridge_rows()
    assert len(rows) == 86
    first = rows[0]
    assert first.model == "deepseekv3"
    assert first.gpu == "gb300"
    assert first.recipe == "mxfp8"
    assert first.measured == 6338.0


def test_the_scenario_is_the_rows_layout() -> None:
    """Line 112: 256 GPUs at tp 1 · pp 2 · cp 1 ⇒ dp 128 (the table's dp column is inferred
    the same way); ep 32; interleaved with 8 chunks; 4 GPUs per GB300 compute tray."""
    sc = mb.scenario_of(_row("-L112"))
    par = sc.parallelism
    assert (sc.num_gpus, par.tp, par.pp, par.expert_parallel) == (256, 1, 2, 32)
    assert (par.schedule, par.interleave_chunks, par.gpus_per_node) == ("interleaved", 8, 4)
    assert sc.gpu.id == "gb300"
    # MXFP8: Transformer Engine's recipe, the GEMMs at the FP8 peak, the rest at BF16's
    assert (sc.compute.compute_dtype, sc.training.precision) == ("bf16", "mxfp8")
    assert sc.training.seq_len == 4096
    assert sc.training.micro_batch == 1


def test_precision_labels() -> None:
    """The table's labels across releases: 25.09's plain FP8 is 25.11's FP8-CS."""
    assert mb.recipe_of("BF16") == "bf16"
    assert mb.recipe_of("FP8-CS") == "fp8_cs"
    assert (
        mb.recipe_of("FP8 (not stated in the 25.09 table; 25.11 labels the same rows FP8-CS)")
        == "fp8_cs"
    )
    assert mb.recipe_of("FP8-MX") == "mxfp8"
    assert mb.recipe_of("MXFP8") == "mxfp8"
    assert mb.recipe_of("FP8 with 32x32 block scaling (MX) per table footnote") == "mxfp8"
    assert mb.recipe_of("NVFP4") == "nvfp4"


def test_subgroups_partition_the_rows() -> None:
    """Each row is in exactly one model/precision group and one GPU generation: 14 rows on
    H100 (counted in the file), 22 DeepSeek-V3 and 22 Qwen3-30B-A3B rows."""
    rows = mb.bridge_rows()
    for r in rows:
        assert len(r.groups) == 2
    assert sum("Hopper" in r.groups for r in rows) == 14
    assert sum("large MoE" in r.groups for r in rows) == 22
    assert sum("fine-grained MoE" in r.groups for r in rows) == 22


def test_no_row_is_refused() -> None:
    """Every row is expressible since the recipes (FP8-CS, MXFP8, NVFP4) are precision
    choices (issue 27 step 3); 82 of 86 were when the module landed (NVFP4 refused)."""
    rows = mb.bridge_rows()
    assert [r.id for r in rows if r.refused is not None] == []


def test_every_moe_row_ran_the_fused_router_the_counts_are_for() -> None:
    """Every Qwen3 and DeepSeek-V3 row's release ran TE's fused router and permutation
    (``RELEASE_MOE_FUSION``, read from each release's presets), the path step_time_host's
    MoE kernel counts are tallied for (tests/core/test_moe_router_kernels.py): 44 MoE rows
    (22 Qwen3-30B-A3B, 22 DeepSeek-V3) over the five releases."""
    moe = [r for r in mb.load()["rows"] if not mb.model_key(r["model"]["name"]).startswith("llama")]
    assert len(moe) == 44
    releases = {mb.recipes.release_of(r) for r in moe}
    assert releases == {"25.09", "25.11", "26.02", "26.04", "26.06"}
    assert all(mb.recipes.RELEASE_MOE_FUSION[mb.recipes.release_of(r)] == (True, True) for r in moe)


def test_errors_meet_issue_27s_target() -> None:
    """Median |error| of tokens/s per GPU over all rows ≤ 8.5%, p90 ≤ 20% (issue 27: ≤ 10% and ≤
    25%). 8.2% and 19.5% with the 18 DeepSeek-V3 rows that trained one MTP depth stated so
    (``training.mtp_layers``, megatron_bridge.mtp_layers_of): the median moves up because the
    26.02-26.06 rows, already pessimistic, lose 4-19% more (the last stage's extra head pass; at
    pp 16 the app's last stage keeps ⌈L/p⌉ layers, where the recipe's layout leaves it one), the
    p90 down because the 25.09/25.11 MTP rows, optimistic, gain (25.11 B200 pp 16 +28.3% →
    +5.6%). 7.3% and 24.2% with the MoE rows' CUDA graphs and all-to-all overlap as their own
    release ran them (megatron_bridge_recipes.RELEASES) and the overlap bounded by the compute
    it hides under; history: 7.5% / 27.8% with GB200 at its sustained tensor rate, 0.9229 of the
    datasheet from the paired B200 rows; 10.1% / 30.8% with each row stated as the recipe that
    ran it, megatron_bridge_recipes.py: Megatron-FSDP, recomputation, LoRA targets, precision
    switches, bf16 moments, activation offload; 10.9% / 32.1% with every row assumed ZeRO-1
    without recomputation, after the MoE work and the GB200 network per GPU; 10.4% once the MoE
    work was priced, issue 27 item 4; 13.1% / 43.0% with the low-precision recipes and the NVL72
    NVLink domain; 41.6% / 69.8% when the module landed."""
    st = mb.stats(mb.bridge_rows())
    assert st.median_abs_error is not None
    assert st.median_abs_error <= 0.085, st
    assert st.p90_abs_error <= 0.20, st


def test_every_subgroup_meets_issue_27s_target() -> None:
    """No subgroup's median |error| above 15% (issue 27). Today: dense FP8/FP4 6.7%,
    fine-grained MoE 14.1%, large MoE 8.3%, Hopper 10.1%, Blackwell 7.5% (6.6% before the
    DeepSeek-V3 rows' MTP depth was stated; no BF16 dense row in the table)."""
    rows = mb.bridge_rows()
    for label in mb.SUBGROUPS:
        st = mb.stats([r for r in rows if label in r.groups])
        if st.priced:
            assert st.median_abs_error is not None
            assert st.median_abs_error <= 0.15, (label, st)
    hopper = mb.stats([r for r in rows if "Hopper" in r.groups])
    blackwell = mb.stats([r for r in rows if "Blackwell" in r.groups])
    assert hopper.median_abs_error is not None
    assert hopper.median_abs_error <= 0.105, hopper
    assert blackwell.median_abs_error is not None
    assert blackwell.median_abs_error <= 0.08, blackwell


def test_dense_low_precision_rows_meet_issue_27s_subgroup_target() -> None:
    """Dense FP8/FP4 rows (Llama 3 8B and 70B): median |error| ≤ 7.5% (6.7% with GB200 at its
    sustained tensor rate, p90 13.6%; 10.1% before; 25.7%
    when FP8 was stated as every FLOP at the FP8 peak), p90 ≤ 22% (21.6%: 19.5% before the
    rows' recipes were read; stated as the Megatron-FSDP they ran, the Llama 3 70B GB200
    rows hide all their sharded-data-parallel traffic and move from +10-17% to +17-26%);
    issue 27 asks ≤ 15% for every subgroup."""
    st = mb.stats([r for r in mb.bridge_rows() if "dense FP8/FP4" in r.groups])
    assert st.rows == 42
    assert st.median_abs_error is not None
    assert st.median_abs_error <= 0.075, st
    assert st.p90_abs_error <= 0.15, st


def test_large_moe_rows_within_issue_27s_subgroup_target() -> None:
    """DeepSeek-V3 rows: median |error| ≤ 8.5%, p90 ≤ 19% (8.3% and 18.5% with the MTP depth
    each row trained: 1 on all but the four 25.11 "w/o MTP" rows; the 25.09 rows from
    +16%/+37%/+21%/+28% to +8%/+20%/−1%/+5%, 25.11 w/ MTP +28% → +6%, the 26.x pp 16 rows
    from −6%/+3%/−2%/+8% to −23%/−15%/−19%/−11%, the GB300 26.06 rows −13% → −16%;
    5.7% and 27.5% with their release's
    CUDA graphs and all-to-all overlap: the 26.06 MXFP8 rows on GB300/GB200 from −27%/−17%
    to −13%/−3%, the 25.09 H100 row, whose all-to-all is longer than the compute it hides
    under, from −34% to +9%; 6.3% with GB200 at its sustained tensor rate; 9.3% with each
    row's recipe: its selective recompute_modules, bf16 Adam moments, 16-bit main
    gradients, FP8 parameters; 11.3% reached with the MoE work priced, issue 27 item 4, and
    the GB200 tray's network per GPU halved to its one 400 Gb/s NIC; 10.2% with the MoE
    work alone; 14.3% once an expert-parallel group inside an NVL72 rack rides NVLink;
    48.6% when the module landed)."""
    st = mb.stats([r for r in mb.bridge_rows() if "large MoE" in r.groups])
    assert st.median_abs_error is not None
    assert st.median_abs_error <= 0.085, st
    assert st.p90_abs_error <= 0.19, st


def test_fine_grained_moe_rows_meet_issue_27s_subgroup_target() -> None:
    """Qwen3-30B-A3B rows: median |error| ≤ 14.5%, p90 ≤ 29% (14.1% and 28.3% with each
    row's release: the 26.06 MXFP8 rows' full-iteration graphs and all-to-all overlap move
    them from −29%/−26%/−26% to −9%/−5%/−6%, the 25.09 token-drop row on 8 B200 with its
    whole-layer graphs from −46% to +23%; the 25.11 and 26.02 micro-batch-1 B200 rows with
    their router graphs from +4%/+0% to +18%/+13%; 17.1% and 44.5% with GB200 at its
    sustained tensor rate; 19.8% and 45.1% with the MoE work priced, issue 27 item 4: the
    all-to-all's links, the permutations, the MoE layer's launches; 30.3% and 134% before
    it). Issue 27 asks ≤ 15%."""
    st = mb.stats([r for r in mb.bridge_rows() if "fine-grained MoE" in r.groups])
    assert st.rows == 22
    assert st.median_abs_error is not None
    assert st.median_abs_error <= 0.145, st
    assert st.p90_abs_error <= 0.29, st


def test_stats_by_hand() -> None:
    """Three rows with errors +10%, −20%, +40%: median |error| 20%, p90 between the 2nd and
    3rd order statistics: 20 + 0.8 · (40 − 20) = 36%."""
    rows = [
        mb.BridgeRow("a", "m", "g", "bf16", "", ("x",), 100.0, 110.0, None),
        mb.BridgeRow("b", "m", "g", "bf16", "", ("x",), 100.0, 80.0, None),
        mb.BridgeRow("c", "m", "g", "bf16", "", ("x",), 100.0, 140.0, None),
        mb.BridgeRow("d", "m", "g", "nvfp4", "", ("x",), 100.0, None, "no"),
    ]
    st = mb.stats(rows)
    assert (st.rows, st.priced) == (4, 3)
    assert abs(st.median_abs_error - 0.20) < 1e-12
    assert abs(st.p90_abs_error - 0.36) < 1e-12
    assert abs(st.median_signed_error - 0.10) < 1e-12


def test_every_row_has_the_recipe_that_ran_it() -> None:
    """Each row names one function of NVIDIA-NeMo/Megatron-Bridge@067f987d perf_recipes/:
    line 307 (26.04, Llama 3 70B, 64 GB200, FP8) is
    ``llama3_70b_pretrain_64gpu_gb200_fp8cs_config`` in llama/gb200/llama3.py, which sets
    ``ddp.use_megatron_fsdp = True`` and ``model.cpu_offloading_num_layers = 40``; line 589
    (25.11, Llama 3 8B, 8 H100) is ``llama3_8b_pretrain_8gpu_h100_fp8cs_config`` in
    llama/h100/llama3.py: ``recompute_granularity = "full"``, ``recompute_method = "block"``,
    ``recompute_num_layers = 5``."""
    rows = mb.bridge_rows()
    assert all(r.function in mb.recipes.RECIPES for r in rows)
    assert len({r.function for r in rows}) == 40
    by_id = {r.id: r for r in rows}
    l307 = by_id[_row("-L307")["id"]]
    rec = mb.recipes.RECIPES[l307.function]
    assert l307.function == "llama3_70b_pretrain_64gpu_gb200_fp8cs"
    assert rec.file == "llama/gb200/llama3.py"
    assert (rec.megatron_fsdp, rec.cpu_offload_layers) == (True, 40)
    l589 = mb.recipes.RECIPES[by_id[_row("-L589")["id"]].function]
    assert (l589.recompute, l589.method, l589.layers) == ("full", "block", 5)


def test_megatron_fsdp_rows_are_stated_as_zero3() -> None:
    """The table's FSDP column is non-zero on 9 rows (Llama 3 70B on 64 GB200/GB300 FP8-CS
    in 25.09-26.04: lines 306, 307, 487, 488, 553, 566, 608; Llama 3 8B on 8 H100: 589,
    628); the 26.06 table has no such column and its rows' recipes do not use Megatron-FSDP.
    Megatron-FSDP's ``optim_grads_params`` shards all three: ZeRO-3."""
    zero3 = sorted(
        int(r["id"].rsplit("-L", 1)[1])
        for r in mb.load()["rows"]
        if mb.scenario_of(r).parallelism.zero_stage == 3
    )
    assert zero3 == [306, 307, 487, 488, 553, 566, 589, 608, 628]


def test_lora_rows_use_the_recipes_adapter() -> None:
    """llama3_70b_peft_config sets LoRA dim 16, and every LoRA perf recipe
    ``peft.target_modules = ["linear_qkv"]``: rank 16 on q, k and v only."""
    sc = mb.scenario_of(_row("-L187"))
    assert sc.training.lora_rank == 16
    assert sc.training.lora_targets == ("q", "k", "v")


def test_precision_switches_as_the_recipes_set_them() -> None:
    """``_benchmark_common`` sets ``grad_reduce_in_fp32 = False`` for every row; the FP8 and
    FP4 mixed-precision configs ``fp8_param_gather`` / ``fp4_param_gather``; BF16 has no
    low-precision copy to keep."""
    fp8 = mb.scenario_of(_row("-L112")).training
    assert (fp8.grad_reduce_16bit, fp8.low_precision_params) == (True, True)
    bf16 = mb.scenario_of(_row("-L555")).training
    assert (bf16.grad_reduce_16bit, bf16.low_precision_params) == (True, False)


def test_recompute_as_the_recipe_sets_it() -> None:
    """Selective with the modules set empty recomputes nothing (DeepSeek-V3 GB300 MXFP8,
    ``recompute_modules = []``); no recompute where the recipe sets none (Qwen3 on GB300);
    DeepSeek-V3 GB200 MXFP8 selective ``["mla_up_proj"]``; Llama 3 8B H100 full, block, 5."""
    assert mb.scenario_of(_row("-L112")).training.recompute == "none"
    assert mb.scenario_of(_row("-L129")).training.recompute == "none"
    ds = mb.scenario_of(_row("-L114")).training
    assert (ds.recompute, ds.recompute_modules) == ("selective", ("mla_up_proj",))
    h100 = mb.scenario_of(_row("-L589")).training
    assert (h100.recompute, h100.recompute_method, h100.recompute_layers) == ("full", "block", 5)


def test_rows_that_fit_in_the_apps_memory_model() -> None:
    """NVIDIA ran all 86 rows, so every row the app does not fit is a miss of its memory
    model. Floor: 74 rows fit with the recipes' settings applied (Megatron-FSDP, LoRA on q, k,
    v, FP8/FP4 parameters, 16-bit main gradients, the recipes' recomputation, the MoE paged
    stash at 1.2 in the 26.06 rows) and Megatron-Core's saved MoE tensors (no expert-output
    copy, quantized expert inputs), the interleaved schedule's stage-loads (the last rank's
    loss tensors of one micro-batch) and the in-place loss (issue 27); 47 before those
    three, 41 without the recomputation, 24 without the precision switches, 21 when every
    row was stated with no recomputation and ZeRO-1."""
    rows = mb.bridge_rows()
    assert mb.fitting(rows) >= 74
    assert all(r.peak_bytes is not None and r.peak_bytes > 0 for r in rows)


def test_releases_are_the_bridge_tags_they_shipped() -> None:
    """docs/releases/software-versions.md at 067f987d: NeMo 25.09 ships Megatron-Bridge
    0.1.0rc3, 25.11 0.2.0, 26.02 0.3.0, 26.04 0.4.0; 26.06 v0.5.0 (tagged the day of the
    26.06 summary). Each row's release is its table section's."""
    releases = mb.recipes.RELEASES
    assert sorted(releases) == ["25.09", "25.11", "26.02", "26.04", "26.06"]
    assert releases["25.09"].endswith("@bf71eba07bae8d36f08b796c106d1197d46ad541")
    assert releases["26.06"].endswith("@fcbb6031103d0ca845c1a54d4fee55ecfcca17b6")
    assert mb.recipes.release_of(_row("-L112")) == "26.06"
    assert mb.recipes.release_of(_row("-L621")) == "25.09"
    assert {mb.recipes.release_of(r) for r in mb.load()["rows"]} == set(releases)


def test_moe_rows_run_their_releases_cuda_graphs() -> None:
    """Read in each release's presets (megatron_bridge_recipes.RELEASE_CUDA_GRAPHS): Qwen3 on
    8 GB300 at mb 8 ran TE graphs of [moe_router, moe_preprocess] in 26.04 (v0.4.0
    QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1, line 344) and full-iteration graphs in
    26.06 (v0.5.0, line 129); on 8 B200 [attn, moe_router, moe_preprocess] in 26.04 (line
    347); the 25.09 token-drop row on 8 B200 whole layers (v0.1.0rc3 perf_matrix
    ``cuda_graphs: true``, line 621); the Llama 3 rows are not read and stay eager."""
    graphs = {
        line: mb.scenario_of(_row(f"-L{line}")).training.cuda_graphs
        for line in (344, 129, 347, 621, 589)
    }
    assert graphs == {
        344: "moe_router",
        129: "full_iteration",
        347: "attn_moe_router",
        621: "layer",
        589: "none",
    }


def test_all_to_all_overlap_share_by_hand() -> None:
    """``moe_a2a_overlap`` (the 26.06 MXFP8 presets; 25.09's A2A_1F1B on H100): the combined
    1F1B schedule pairs a micro-batch's forward with the previous one's backward. Line 129,
    Qwen3 on 8 GB300: dp 8, m = 512 ÷ (8 · 8) = 8 micro-batches, no pipeline: 7 of 8 paired.
    Line 631, DeepSeek-V3 on 1024 H100: tp 2, pp 8 → dp 64, m = 8192 ÷ 64 = 128, pp 8: the
    1F1B steady phase 128 − 7 = 121 of 128. Line 344 (26.04) sets none."""
    assert mb.scenario_of(_row("-L129")).parallelism.ep_overlap == 7 / 8
    assert mb.scenario_of(_row("-L631")).parallelism.ep_overlap == 121 / 128
    assert mb.scenario_of(_row("-L344")).parallelism.ep_overlap == 0.0


def test_token_drop_row_with_its_releases_cuda_graphs() -> None:
    """The 25.09 token-drop Qwen3-30B-A3B row on 8 B200 (micro-batch 1, launch-bound) ran
    whole-layer CUDA graphs; drop-and-pad lets Megatron capture the MoE block and has no host
    sync. Eager it would be priced 46% slow; with its graphs within 25% (+23%)."""
    row = _row("tokendrop_-DGX-B200-8g-FP8notstated-tp1pp1cp1vp1ep8mbs1gbs512-primary-L621")
    priced = mb.price(row)
    assert priced.error is not None
    assert abs(priced.error) < 0.25
    sc = mb.scenario_of(row)
    eager = sc.model_copy(
        update={"training": sc.training.model_copy(update={"cuda_graphs": "none"})}
    )
    par = mb.estimate(eager, suggest=False).parallelism
    assert par.tokens_per_s / par.gpus / priced.measured - 1.0 < -0.40


def _gb200_over_b200_pairs() -> list[float]:
    """Measured GB200 ÷ B200 tokens/s per GPU where a release ran one recipe and layout on
    both (Llama 3 8B on 8 GPUs, tp1 dp8 mb2: 25.09 and 25.11, FP8 and MXFP8)."""
    rows = mb.load()["rows"]
    ratios = []
    for r in rows:
        if r["gpu"]["type"] != "B200" or "LLAMA3_8B" not in r["id"]:
            continue
        twin_id = r["id"].replace("-DGX-B200-", "-DGX-GB200-")
        twin = [t for t in rows if t["id"].rsplit("-L", 1)[0] == twin_id.rsplit("-L", 1)[0]]
        if twin:
            measured = twin[0]["measured"]["tokens_per_s_per_gpu"]
            ratios.append(measured / r["measured"]["tokens_per_s_per_gpu"])
    return ratios


def test_gb200_sustained_rate_is_the_paired_runs_ratio() -> None:
    """The catalog's GB200 sustained fraction is the paired runs' mean ratio over the
    datasheets' (FP8 dense 5.0 vs 4.5 PF): 31508/30624, 29789/29521, 31357/29994 and
    29925/29388 → mean 1.0254; × 4.5/5.0 = 0.9229."""
    from llm_planner.core.primitives.gpus import get_gpu

    ratios = _gb200_over_b200_pairs()
    assert len(ratios) == 4
    mean = sum(ratios) / len(ratios)
    assert abs(mean - 1.0254) < 5e-4
    gb200, b200 = get_gpu("gb200"), get_gpu("b200")
    assert gb200.peak_flops.fp8 == 5e15
    assert b200.peak_flops.fp8 == 4.5e15
    expected = mean * b200.peak_flops.fp8 / gb200.peak_flops.fp8
    assert gb200.sustained_tensor_fraction is not None
    assert abs(gb200.sustained_tensor_fraction - expected) < 5e-4
    assert b200.sustained_tensor_fraction is None
    assert b200.tensor_rate_fraction == 1.0


def test_gb200_priced_at_its_sustained_rate() -> None:
    """The paired compute-bound rows are priced GB200 ≈ B200 × 1.025 (measured 1.009-1.045),
    no longer the datasheets' 5.0/4.5 = 1.11: the tensor work runs at 0.9229 of GB200's
    peak, the memory-bound kernels at its HBM's (equal to B200's 8 TB/s)."""
    priced = {r.id: r.predicted for r in mb.bridge_rows()}
    pairs = []
    for rid, value in priced.items():
        if "LLAMA3_8B-DGX-B200-" in rid:
            twin = rid.replace("-DGX-B200-", "-DGX-GB200-").rsplit("-L", 1)[0]
            other = [v for k, v in priced.items() if k.rsplit("-L", 1)[0] == twin]
            if other and value and other[0]:
                pairs.append(other[0] / value)
    assert len(pairs) == 4
    for ratio in pairs:
        assert 1.0 < ratio < 1.06
