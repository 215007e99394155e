"""Issue #37's job grid, end to end: what `pipescope plan` picks is what the framework runs.

The grid is tests/llm/llm_job_grid.h's job_grid(), mirrored here job for job (33 jobs:
llama3-8b, gpt3-175b, mixtral 8x7b, llama3-70b on 8 .. 16,384 GPUs under Megatron-LM, torch
and DeepSpeed, the pinned torch schedules, the same t / p pins); a job added there or changed
there must be added or changed here. For each job:
1. `plan <model> ... --top 1 --json --out plan.json`, then `simulate --plan plan.json --json`:
   the re-read job gives best[0]'s step to the nanosecond and each rank's bytes by kind to the
   byte (one Job, one evaluate_job: docs/llm-scale.md), and the plan carries the grid's model
   shape (tests/llm/llm_shapes.h) and the planned layout.
2. `export --plan plan.json --to <framework>`, read back by the framework's own code, gives
   the planned layout: Megatron-Core's TransformerConfig (with the model's real shape),
   DistributedDataParallelConfig, micro-batch calculator, layer split and RankGenerator;
   DeepSpeed's DeepSpeedConfig (ZeRO stage, batch arithmetic) and PipelineModule partition;
   torch's own schedule class built on the exported stages, placing them where the file says.
   Expert parallelism (the mixtral jobs with ep > 1) is read back too: DeepSpeed's AutoEP
   config and its own folding arithmetic (deepspeed/module_inject/auto_ep_folding.py) give
   ep and the experts' ZeRO group; torch's DeviceMesh, unflattened as torchtitan's ParallelDims
   builds it (torchtitan is not installed: its _validate rule is restated, its meshes built
   with torch's own _unflatten on a fake process group), gives ep, efsdp and the ep group.
An export that refuses a planned layout (exit 2) fails the job, naming it: the planner offers
only what the framework runs (llm/framework.cpp), so a refusal is a disagreement between the
two, not a case to skip; none is known today (EXPORT_REFUSES, strict expected failures with
their reasons, is empty: the 5 of issue #38 were fixed by torch's table offering no selective
recompute and by the torch and DeepSpeed exports writing ep). The helpers that drive each
framework are its oracle file's, imported.
"""

import collections
import functools
import inspect
import json
import os
import re
import subprocess
import types

import pytest

from helpers import PIPESCOPE, REPO, run_pipescope as run
# Each import loads its framework once for the whole module (Megatron-Core, DeepSpeed, torch).
from test_oracle_megatron import (FLAG_TO_DDP_CONFIG, ConstantNumMicroBatchesCalculator, DistributedDataParallelConfig,
                                  config_from_flags, flag_value, megatron_rank_groups, megatron_stages)
from test_oracle_deepspeed import ds_config, load_exported, partition_as_deepspeed
from test_oracle_torch_schedules import EXPORT_ROWS, FakeStage, compute_cells, flat_compute, single_case
from test_oracle_torch_schedules import S as torch_schedules

import torch  # noqa: E402  (loaded by the imports above; named for its own API below)
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: E402
from deepspeed.module_inject.auto_ep_config import validate_autoep_config  # noqa: E402
from deepspeed.module_inject.auto_ep_folding import build_folding_spec, local_folding_ranks  # noqa: E402
from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(PIPESCOPE),
                                reason=f"pipescope binary not built at {PIPESCOPE}")

HF = os.path.join(REPO, "profiles", "hf")

# tests/llm/llm_shapes.h's shapes as the plan file's job states them (llm/layout.h's
# TransformerShape), the Llamas at the grid's sequence of 4096.
LLAMA3 = {"kv_heads": 8, "swiglu": True, "bias_linear": False, "rms_norm": True, "tied_embeddings": False,
          "experts": 0, "moe_topk": 0}
SHAPES = {
    "llama3-8b": {**LLAMA3, "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 14336, "sequence": 4096},
    "llama3-70b": {**LLAMA3, "layers": 80, "hidden": 8192, "heads": 64, "ffn_hidden": 28672, "sequence": 4096},
    "mixtral": {**LLAMA3, "layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 14336, "sequence": 4096,
                "experts": 8, "moe_topk": 2},
    "gpt3-175b": {"layers": 96, "hidden": 12288, "heads": 96, "kv_heads": 0, "ffn_hidden": 0, "sequence": 2048,
                  "swiglu": False, "bias_linear": False, "rms_norm": False, "tied_embeddings": True,
                  "experts": 0, "moe_topk": 0},
}
# The model form of `pipescope plan`: the shipped Hugging Face config where there is one,
# Megatron's model flags for gpt3-175b (no HF config of it ships).
MODEL_FLAGS = {
    "llama3-8b": ["--hf-config", os.path.join(HF, "llama-3-8b.json"), "--seq-length", 4096],
    "llama3-70b": ["--hf-config", os.path.join(HF, "llama-3-70b.json"), "--seq-length", 4096],
    "mixtral": ["--hf-config", os.path.join(HF, "mixtral-8x7b.json"), "--seq-length", 4096],
    "gpt3-175b": ["--num-layers", 96, "--hidden-size", 12288, "--num-attention-heads", 96, "--seq-length", 2048,
                  "--vocab-size", 51200, "--disable-bias-linear"],
}

GridJob = collections.namedtuple("GridJob", "label model gpu gpus global_batch framework schedule t p")


def job_grid():
    """tests/llm/llm_job_grid.h's job_grid(), line for line (t, p: pins, 0 = searched)."""
    grid = []
    frameworks = ("megatron", "torch", "deepspeed")
    for f in frameworks:
        grid += [GridJob(f"llama3-8b 8 {f}", "llama3-8b", "h100-sxm", 8, 64, f, None, 0, 0),
                 GridJob(f"llama3-8b 64 {f}", "llama3-8b", "h100-sxm", 64, 256, f, None, 0, 0),
                 GridJob(f"llama3-8b 512 {f}", "llama3-8b", "a100-80gb", 512, 1024, f, None, 0, 0),
                 GridJob(f"gpt3-175b 64 {f}", "gpt3-175b", "h100-sxm", 64, 128, f, None, 0, 0),
                 GridJob(f"gpt3-175b 1024 {f}", "gpt3-175b", "h100-sxm", 1024, 1536, f, None, 8, 0),
                 GridJob(f"mixtral 16 {f}", "mixtral", "h100-sxm", 16, 64, f, None, 0, 0),
                 GridJob(f"mixtral 128 {f}", "mixtral", "h200", 128, 512, f, None, 0, 0),
                 GridJob(f"llama3-8b 16384 {f}", "llama3-8b", "h100-sxm", 16384, 16384, f, None, 8, 4)]
    # The 70B job of issue #37: 64 H100s, 512 sequences of 4096.
    grid += [GridJob(f"llama3-70b 64 {f}", "llama3-70b", "h100-sxm", 64, 512, f, None, 0, 0) for f in frameworks]
    grid.append(GridJob("mixtral 64 megatron interleaved", "mixtral", "h100-sxm", 64, 256, "megatron",
                        "interleaved", 0, 4))
    for k in ("gpipe", "looped-bfs", "interleaved-zb", "zb-v", "dualpipev"):
        grid.append(GridJob(f"llama3-8b 32 torch {k}", "llama3-8b", "h100-sxm", 32, 128, "torch", k, 0, 4))
    return grid


GRID = job_grid()
JOBS = {j.label: j for j in GRID}
LABELS = list(JOBS)


def test_grid_is_llm_job_tests():
    # job_grid() holds 33 jobs over the three frameworks and the five pinned torch schedules
    # (llm_job_test.cpp: 33 x top 3 = 99 layouts); the issue asks for at least 30.
    assert len(GRID) == len(JOBS) == 33
    assert {j.framework for j in GRID} == {"megatron", "torch", "deepspeed"}
    assert {j.schedule for j in GRID if j.framework == "torch"} == {None, "gpipe", "looped-bfs", "interleaved-zb",
                                                                      "zb-v", "dualpipev"}


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """label -> (folder, best[0], the plan file): each job planned once for the module."""

    @functools.lru_cache(maxsize=None)
    def plan(label):
        job = JOBS[label]
        folder = tmp_path_factory.mktemp(label.replace(" ", "_"))
        args = ["plan", *MODEL_FLAGS[job.model], "--gpu", job.gpu, "--gpus", job.gpus,
                "--global-batch-size", job.global_batch, "--framework", job.framework]
        if job.schedule:
            args += ["--schedule", job.schedule]
        if job.t:
            args += ["--tensor-model-parallel-size", job.t]
        if job.p:
            args += ["--pipeline-model-parallel-size", job.p]
        out = folder / "plan.json"
        best = json.loads(run(*args, "--top", 1, "--json", "--out", out))["best"][0]
        return folder, best, json.loads(out.read_text())

    return plan


def summary(layout):
    keys = ("t", "sequence_parallel", "cp", "ep", "d", "p", "v", "schedule", "micro_batch", "microbatches",
            "recompute", "sharding")
    return " ".join(f"{k}={layout[k]}" for k in keys)


def export(label, folder, framework, *extra):
    """`export --plan plan.json --to framework EXTRA`; a refusal fails the job, naming it and the layout."""
    r = subprocess.run([PIPESCOPE, "export", "--plan", str(folder / "plan.json"), "--to", framework,
                        *map(str, extra)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        layout = json.loads((folder / "plan.json").read_text())["layout"]
        pytest.fail(f"{label}: export --to {framework} refused the planned layout ({summary(layout)}), "
                    f"exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def plan_stages(folder, plan):
    """{model-order stage: (decoder layers, first decoder index)} from the plan's cuts over its profile."""
    with open(folder / plan["profile"], encoding="utf-8") as f:
        kinds = [layer.get("spec", {}).get("type") for layer in json.load(f)["layers"]]
    out, seen = {}, 0
    for s, stage in enumerate(plan["stages"]):
        a, b = stage["layers"]
        n = sum(1 for k in kinds[a:b] if k not in ("embedding", "hf_embedding", "lm_head", "hf_lm_head"))
        out[s] = (n, seen)
        seen += n
    return out


# ------------------------------------------------------------------ 1. the plan, re-read


@pytest.mark.parametrize("label", LABELS)
def test_simulate_plan_gives_the_planned_step_and_bytes(label, planned):
    job = JOBS[label]
    folder, best, plan = planned(label)
    # The file carries the grid's model (llm_shapes.h) and the layout the search picked.
    shape = plan["job"]["model"]["shape"]
    assert {k: shape[k] for k in SHAPES[job.model]} == SHAPES[job.model], label
    assert plan["layout"] == best["layout"], label
    assert (plan["job"]["framework"], plan["job"]["cluster"]["gpu"]) == (job.framework, job.gpu)
    layout = best["layout"]
    assert layout["t"] * layout["cp"] * layout["d"] * layout["p"] == job.gpus
    assert layout["micro_batch"] * layout["microbatches"] * layout["d"] == job.global_batch
    for pin in ("t", "p"):
        assert getattr(job, pin) in (0, layout[pin]), f"{label}: pinned {pin}"
    assert job.schedule in (None, layout["schedule"]), f"{label}: pinned schedule"
    # simulate --plan evaluates the re-read job with the search's own function (evaluate_job):
    # the identical step and the identical bytes of each kind on every pipeline rank.
    sim = json.loads(run("simulate", "--plan", folder / "plan.json", "--json"))
    assert sim["layout"] == best["layout"], label
    assert sim["step_ns"] == best["step_ns"], f"{label}: step {sim['step_ns']} ns, planned {best['step_ns']} ns"
    assert len(sim["ranks"]) == len(best["ranks"]) == layout["p"], label
    for got, want in zip(sim["ranks"], best["ranks"]):
        for kind in ("parameter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes", "total_bytes"):
            assert got[kind] == want[kind], f"{label}: rank {want['rank']} {kind} {got[kind]}, planned {want[kind]}"
    assert sim["peak_bytes"] == best["peak_bytes"], label


# ------------------------------------------------------------------ 2. the export, read by the framework


def megatron_model(shape):
    """The model's own Megatron-Core TransformerConfig fields (what --swiglu, --num-query-groups,
    --normalization, --disable-bias-linear, --num-experts, --moe-router-topk set)."""
    model = {"hidden_size": shape["hidden"], "num_attention_heads": shape["heads"],
             "add_bias_linear": shape["bias_linear"], "normalization": "RMSNorm" if shape["rms_norm"] else "LayerNorm"}
    if shape["kv_heads"]:
        model["num_query_groups"] = shape["kv_heads"]
    if shape["ffn_hidden"]:
        model["ffn_hidden_size"] = shape["ffn_hidden"]
    if shape["swiglu"]:  # arguments.py: --swiglu sets gated_linear_unit and activation_func silu
        model.update(gated_linear_unit=True, activation_func=torch.nn.functional.silu)
    if shape["experts"]:
        model.update(num_moe_experts=shape["experts"], moe_router_topk=shape["moe_topk"])
    return model


def check_megatron(job, folder, best, plan):
    layout, shape = best["layout"], SHAPES[job.model]
    exported = json.loads(export(job.label, folder, "megatron", "--json", "--gpus-per-node", 8))
    flags = exported["flags"]
    # Megatron-Core validates the flags, which carry the model's own: its shape, as planned
    config = config_from_flags(flags)
    for field, value in megatron_model(shape).items():
        if field != "activation_func":
            assert getattr(config, field) == value, f"{job.label}: {field}"
    got = (config.tensor_model_parallel_size, config.sequence_parallel, config.context_parallel_size,
           config.expert_model_parallel_size, config.pipeline_model_parallel_size,
           config.virtual_pipeline_model_parallel_size or 1)
    want = (layout["t"], layout["sequence_parallel"] and layout["t"] > 1, layout["cp"], layout["ep"], layout["p"],
            layout["v"])
    assert got == want, f"{job.label}: Megatron-Core's (t, SP, cp, ep, p, v) {got}, planned {want}"
    assert config.num_layers == shape["layers"], f"{job.label}: Megatron builds the model's {shape['layers']} layers"
    assert int(flag_value(flags, "--seq-length")) == shape["sequence"], job.label
    assert config.recompute_granularity == (None if layout["recompute"] == "none" else layout["recompute"]), job.label
    if layout["recompute"] == "full":  # every layer keeps only its input
        assert (config.recompute_method, config.recompute_num_layers) == ("uniform", 1), job.label
    assert config.bf16 == (layout["precision"] != "fp32"), job.label
    ddp = DistributedDataParallelConfig(**{field: True for flag, field in FLAG_TO_DDP_CONFIG.items()
                                           if flag_value(flags, flag)})
    got = (ddp.use_distributed_optimizer, ddp.overlap_grad_reduce, ddp.overlap_param_gather)
    want = (layout["sharding"] == "distributed-optimizer", layout["overlap_grad_reduce"],
            layout["overlap_param_gather"])
    assert got == want, f"{job.label}: DDP config (distributed optimizer, overlaps) {got}, planned {want}"
    # Megatron's own arithmetic: d = WORLD_SIZE / (t cp p), M = global batch / (micro-batch x d).
    world = exported["world_size"]
    assert world == job.gpus, job.label
    dp = world // (layout["t"] * layout["cp"] * layout["p"])
    micro, global_batch = int(flag_value(flags, "--micro-batch-size")), int(flag_value(flags, "--global-batch-size"))
    calc = ConstantNumMicroBatchesCalculator(global_batch, micro, dp, None, 0)
    got, want = (dp, calc.get(), micro, global_batch), (layout["d"], layout["microbatches"], layout["micro_batch"],
                                                        job.global_batch)
    assert got == want, f"{job.label}: Megatron's (d, M, micro-batch, global batch) {got}, planned {want}"
    # Megatron's layer split gives every (pipeline rank, virtual stage) the plan's decoder layers.
    assert megatron_stages(config, layout["p"], layout["v"]) == plan_stages(folder, plan), (job.label, exported["cut"])
    # RankGenerator's groups (the dense and the expert generator) are the export's.
    order, groups = megatron_rank_groups(flags, world)
    assert order == exported["order"] == layout["order"], job.label
    for g, ranks in groups.items():
        said = exported["groups"][g]
        assert ranks[0] == said["first_group"], f"{job.label}: RankGenerator's first {g} group"
        assert {len(group) for group in ranks} == {said["size"]}, f"{job.label}: {g} size"


# DeepSpeed's ZeRO stage of each sharding (deepspeed/runtime/zero: stage 1 partitions the
# optimizer state, what Megatron's distributed optimizer does; 2 adds gradients; 3 parameters).
ZERO_STAGE = {"none": 0, "distributed-optimizer": 1, "zero-2": 2, "zero-3": 3}


def check_deepspeed(job, folder, best, plan, tmp_path, monkeypatch):
    layout = best["layout"]
    text = export(job.label, folder, "deepspeed")
    exported = load_exported(text, tmp_path)
    monkeypatch.setattr(ds_config.dist, "get_rank", lambda *a, **k: 0)
    mpu = types.SimpleNamespace(get_data_parallel_world_size=lambda: exported.DATA_PARALLEL_SIZE)
    config = ds_config.DeepSpeedConfig(dict(exported.DS_CONFIG), mpu=mpu)  # DeepSpeed's own parse and batch check
    assert config.zero_optimization_stage == ZERO_STAGE[layout["sharding"]], \
        f"{job.label}: DeepSpeed's ZeRO stage {config.zero_optimization_stage}, planned {layout['sharding']}"
    assert config.zero_config.overlap_comm == layout["overlap_grad_reduce"], job.label
    assert config.bfloat16_config.enabled == (layout["precision"] != "fp32"), job.label
    # train_batch_size = micro-batch x gradient accumulation x data parallel (DeepSpeedConfig checks it).
    got = (config.train_micro_batch_size_per_gpu, config.gradient_accumulation_steps, exported.DATA_PARALLEL_SIZE,
           config.train_batch_size)
    want = (layout["micro_batch"], layout["microbatches"], layout["d"], job.global_batch)
    assert got == want, f"{job.label}: DeepSpeed's (micro-batch, accumulation, d, batch) {got}, planned {want}"
    assert (exported.NUM_STAGES, exported.MODEL_PARALLEL_SIZE) == (layout["p"], layout["t"]), job.label
    assert exported.ACTIVATION_CHECKPOINT_INTERVAL == (1 if layout["recompute"] == "full" else 0), job.label
    check_deepspeed_experts(job, folder, layout, config)
    topo = PipeModelDataParallelTopology(num_pp=layout["p"], num_mp=layout["t"], num_dp=layout["d"])
    assert topo.world_size() == job.gpus, job.label
    if layout["p"] > 1:
        # DeepSpeed's PipelineModule._partition_layers, on the first global rank of each stage,
        # ends with the plan's cuts and builds that stage's layers.
        cuts = [s["layers"][0] for s in plan["stages"]] + [plan["stages"][-1]["layers"][1]]
        for stage in range(layout["p"]):
            rank = topo.filter_match(pipe=stage, data=0, model=0)[0]
            module = partition_as_deepspeed(monkeypatch, exported, rank)
            assert module.stage_id == stage and module.parts == cuts, (job.label, rank, module.parts)
            assert (module._local_start, module._local_stop) == (cuts[stage], cuts[stage + 1]), (job.label, rank)


def check_deepspeed_experts(job, folder, layout, config):
    """ep as DeepSpeed's AutoEP reads it: DeepSpeedConfig's expert_parallel section, AutoEP's own
    validation at the ZeRO stage, and its folding arithmetic's ep and expert data-parallel (edp)
    groups of rank 0: the export's ep group (Megatron-Core's expert RankGenerator, what llm/
    counts) and d / ep ranks, the group llm/memory.cpp shards the experts' bytes over."""
    autoep = config.expert_parallel_config
    assert (autoep.enabled, autoep.autoep_size if autoep.enabled else 1) == (layout["ep"] > 1, layout["ep"]), job.label
    if layout["ep"] == 1:
        return
    world = layout["t"] * layout["cp"] * layout["d"] * layout["p"]
    validate_autoep_config(autoep, world, layout["p"], layout["t"], 1, zero_stage=config.zero_optimization_stage)
    spec = build_folding_spec(world_size=world, pp_size=layout["p"], tp_size=layout["t"], ep_size=autoep.autoep_size,
                              etp_size=autoep.expert_tensor_parallel_size, mp_mode="sp")
    ranks = local_folding_ranks(0, spec)
    groups = json.loads(export(job.label, folder, "deepspeed", "--json"))["groups"]
    got = (list(ranks["ep"]), len(ranks["edp"]), spec.edp_size)
    want = (groups["ep"]["first_group"], layout["d"] * layout["cp"] // layout["ep"],
            layout["d"] * layout["cp"] // layout["ep"])
    assert got == want, f"{job.label}: AutoEP's (ep group of rank 0, edp group size, edp) {got}, planned {want}"


# torch's class for each pipescope schedule (test_oracle_torch_schedules.py's rows).
TORCH_CLASS = {name: (cls, shape) for name, cls, _, shape in EXPORT_ROWS}
# How torch shards the data-parallel replicas (FSDP2's fully_shard: reshard_after_forward=False
# keeps the gathered parameters, ZeRO-2; True frees them, ZeRO-3; DDP replicates).
TORCH_SHARDING = {"none": "replicate", "distributed-optimizer": "zero-1",
                  "zero-2": "fully_shard(reshard_after_forward=False)",
                  "zero-3": "fully_shard(reshard_after_forward=True)"}


def check_torch(job, folder, best, plan, tmp_path):
    layout = best["layout"]
    exported = load_exported(export(job.label, folder, "torch"), tmp_path)
    cls, shape = TORCH_CLASS[layout["schedule"]]
    assert getattr(torch_schedules, exported.SCHEDULE_CLASS) is cls, \
        f"{job.label}: file names {exported.SCHEDULE_CLASS}, torch's class for {layout['schedule']} is {cls.__name__}"
    p, v, M = layout["p"], layout["v"], layout["microbatches"]
    got = (exported.PIPELINE_SIZE, len(exported.STAGE_RANKS), exported.N_MICROBATCHES, exported.MICROBATCH_SIZE)
    assert got == (p, p * v, M, layout["micro_batch"]), f"{job.label}: file's (p, stages, M, micro-batch) {got}"
    # torch's own class, built on the exported stages, accepts them and M (its constructor's
    # rules) and runs every stage on the rank the file says, for all M micro-batches. A
    # single-stage class is run (_step_microbatches, each rank's stage r: its pipeline_order is
    # only a description, wrong on the last rank in 2.13); a multi-stage one is built on rank
    # 0's stages and its pipeline_order, for every rank, is what it runs.
    if shape == "single":
        _, cells = single_case(cls, p, M)
    else:
        sched = cls([FakeStage(s, p * v, p, 0) for s in exported.stages_of_rank(0)], M)
        cells = compute_cells(sched.pipeline_order, p)
    for rank in range(p):
        ops = [re.fullmatch(r"(\d+)([FBIW])(\d+)", c).groups() for c in flat_compute(cells[rank])]
        placed = sorted({int(s) for s, _, _ in ops})
        assert placed == exported.stages_of_rank(rank), f"{job.label}: torch runs stages {placed} on rank {rank}"
        for s in placed:
            forwards = sorted(int(m) for st, kind, m in ops if int(st) == s and kind == "F")
            assert forwards == list(range(M)), f"{job.label}: torch's forwards of stage {s}: {forwards}"
    # d, cp, t and the sharding as the file states them for the user's parallelize code.
    mesh = dict(zip(exported.MESH_DIM_NAMES, exported.MESH_SHAPE))
    assert mesh == {"pp": p, "dp": layout["d"], "cp": layout["cp"], "tp": layout["t"]}, job.label
    got = (exported.DATA_PARALLEL_SIZE, exported.CONTEXT_PARALLEL_SIZE, exported.TENSOR_PARALLEL_SIZE,
           exported.SEQUENCE_PARALLEL)
    assert got == (layout["d"], layout["cp"], layout["t"], layout["sequence_parallel"] and layout["t"] > 1), job.label
    assert exported.DATA_PARALLEL_SHARDING == TORCH_SHARDING[layout["sharding"]], job.label
    if exported.DATA_PARALLEL_SHARDING.startswith("fully_shard"):  # the keyword is FSDP2's own
        assert "reshard_after_forward" in inspect.signature(torch.distributed.fsdp.fully_shard).parameters
    assert exported.ACTIVATION_CHECKPOINT == layout["recompute"], job.label
    assert getattr(exported, "EXPERT_PARALLEL_SIZE", 1) == layout["ep"], job.label
    if layout["ep"] > 1:
        check_torch_experts(job, folder, layout, exported)


def torchtitan_validate(dims, world):
    """torchtitan/distributed/parallel_dims.py ParallelDims._validate, restated (torchtitan is not installed)."""
    assert dims["dp_replicate"] * dims["dp_shard"] * dims["cp"] * dims["tp"] * dims["pp"] == world, dims
    assert (dims["dp_shard"] * dims["cp"] * dims["tp"]) % dims["ep"] == 0, \
        f"expert_parallel_degree ({dims['ep']}) must divide dp_shard * cp * tp"


def check_torch_experts(job, folder, layout, exported):
    """ep as torchtitan's ParallelDims.build_mesh lays it out, built by torch's own DeviceMesh on a
    fake process group of the job's world: the dense mesh (pp, dp_replicate, dp_shard, cp, tp) and
    the sparse one (pp, dp_replicate, efsdp, ep), both _unflatten-ed from the world. The ep group
    holding rank 0 is the export's (Megatron-Core's expert RankGenerator, what llm/ times the
    all-to-all over); an expert's replicas, dp_replicate x efsdp, are d cp / ep (llm/memory.cpp's
    expert data-parallel group, which FSDP2 shards over: efsdp); dp_shard is d under
    fully_shard, 1 under DDP."""
    dims, world = exported.PARALLEL_DIMS, job.gpus
    torchtitan_validate(dims, world)
    fsdp = exported.DATA_PARALLEL_SHARDING.startswith("fully_shard")
    assert (dims["dp_replicate"], dims["dp_shard"]) == ((1, layout["d"]) if fsdp else (layout["d"], 1)), job.label
    assert (dims["cp"], dims["tp"], dims["pp"], dims["ep"]) == (layout["cp"], layout["t"], layout["p"], layout["ep"])
    groups = json.loads(export(job.label, folder, "torch", "--json"))["groups"]
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        world_mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("world",))
        dense = world_mesh._unflatten(0, tuple(dims[k] for k in ("pp", "dp_replicate", "dp_shard", "cp", "tp")),
                                      ("pp", "dp_replicate", "dp_shard", "cp", "tp"))
        sparse = world_mesh._unflatten(0, tuple(exported.EXPERT_MESH_SHAPE), tuple(exported.EXPERT_MESH_DIM_NAMES))
        got = (sparse["ep"].size(), sparse["ep"].mesh.tolist(), sparse["efsdp"].size() * dims["dp_replicate"],
               dense["cp"].mesh.tolist())
    finally:
        dist.destroy_process_group()
    want = (layout["ep"], groups["ep"]["first_group"], layout["d"] * layout["cp"] // layout["ep"],
            groups["cp"]["first_group"])
    assert got == want, f"{job.label}: torch's (ep size, ep group of rank 0, expert replicas, cp group) {got}, " \
                        f"planned {want}"


# Planned layouts whose export exits 2 (label -> reason): llm/framework.cpp offers what the
# framework runs, so an entry is an exporter behind the table. Strict: when an exporter learns
# the layout, the test passes, xfail fails, and the entry goes. Empty today.
EXPORT_REFUSES = {}


@pytest.mark.parametrize("label", [pytest.param(label, marks=pytest.mark.xfail(reason=EXPORT_REFUSES[label],
                                                                               strict=True))
                                   if label in EXPORT_REFUSES else label for label in LABELS])
def test_export_read_by_the_framework_is_the_planned_layout(label, planned, tmp_path, monkeypatch):
    job = JOBS[label]
    folder, best, plan = planned(label)
    if job.framework == "megatron":
        check_megatron(job, folder, best, plan)
    elif job.framework == "deepspeed":
        check_deepspeed(job, folder, best, plan, tmp_path, monkeypatch)
    else:
        check_torch(job, folder, best, plan, tmp_path)
