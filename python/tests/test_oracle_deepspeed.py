"""DeepSpeed (deepspeed 0.19.8, CPU, pure-Python parts) as the oracle for pipescope's 1F1B
order and for `pipescope export --to deepspeed` (docs/interop.md).

Expectations:
1. deepspeed.runtime.pipe.schedule.TrainSchedule(micro_batches=M, stages=K, stage_id=s):
   its ForwardPass / BackwardPass instructions, in step order, are pipescope's 1F1B op
   list of position s (`pipescope schedule --schedule 1f1b --format csv`) op for op, for
   K = 1..8 and M in 1..4K (see the test for the subset). An instruction names a pipe buffer, not a micro-batch:
   TrainSchedule gives micro-batch m the buffer m % num_pipe_buffers() (_buffer_idx),
   forwards run in micro-batch order and a backward consumes the oldest live forward of
   its buffer; the test recovers micro-batch ids that way and checks each buffer id
   against _buffer_idx.
2. The parts `export --to deepspeed` writes (PARTS, stage p holds layers PARTS[p] ..
   PARTS[p+1]-1) are the plan's cuts; PARTITION_METHOD is "uniform" exactly when
   deepspeed.runtime.utils.partition_uniform(layers, K) gives those parts, else the file
   installs them by overriding PipelineModule._partition_layers. Run against DeepSpeed's
   own PipelineModule._partition_layers (through the exported PlannedPipelineModule) on
   every global rank of DeepSpeed's PipeModelDataParallelTopology, the module ends with
   parts == PARTS and builds layers PARTS[stage] .. PARTS[stage + 1] - 1. Plans cut as
   DeepSpeed's default partition_method="parameters" would cut them
   (partition_balanced over the profile's per-layer parameter counts) are among them.
   The batch settings (DS_CONFIG) pass DeepSpeedConfig's own batch check.
3. A v2 plan's layout: DeepSpeedConfig parses DS_CONFIG's zero_optimization.stage (0 for
   sharding none, 1 for the distributed optimizer) and bf16 as the layout says; the
   model / data / pipe groups of PipeModelDataParallelTopology start as the export's
   tp / dp / pp groups and cross 8-GPU nodes as it says. ZeRO-2 / 3 exit 2 citing the
   assertion PipelineEngine.__init__ really makes (read from DeepSpeed's source), and
   cp, ep with t > 1 (AutoEP keeps each expert whole), sequence parallel, selective recompute
   and fp8 parameters exit 2 naming the field. ep at t = 1 is AutoEP's "expert_parallel"
   section: DeepSpeedConfig parses it, AutoEP's validate_autoep_config accepts it (with and
   without a pipeline) and its folding tables give the export's ep and expert data-parallel
   groups.

Narrow stubs, and why: PipelineModule.__init__ creates process groups
(dist.new_group, PipelineParallelGrid) before it partitions; the test replaces it with
the part of it that _partition_layers reads (topology, num_stages, global rank, layer
specs, loss_fn, bounds), then calls DeepSpeed's own _partition_layers. DeepSpeedConfig
asks deepspeed.comm for the rank; the test answers 0 and passes a data-parallel size.
"""

import importlib.util
import json
import os
import random
import subprocess
import types
from collections import defaultdict, deque

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPESCOPE = os.environ.get("PIPESCOPE_BIN", os.path.join(REPO, "build", "bin", "pipescope"))
DEEPSPEED_VERSION = "0.19.8"

pytestmark = pytest.mark.skipif(not os.path.exists(PIPESCOPE),
                                reason=f"pipescope binary not built at {PIPESCOPE}")

# The pinned packages are required: a missing one fails the import, it is not skipped.
import torch  # noqa: E402
import deepspeed  # noqa: E402
from deepspeed.runtime.pipe import schedule as ds_schedule  # noqa: E402
from deepspeed.runtime.pipe.module import PipelineModule  # noqa: E402
from deepspeed.runtime.utils import partition_balanced, partition_uniform  # noqa: E402
import deepspeed.runtime.config as ds_config  # noqa: E402


def test_pinned_version():
    assert deepspeed.__version__ == DEEPSPEED_VERSION


from helpers import moe_profile, run_pipescope as run  # noqa: E402


# ------------------------------------------------------------------ 1. TrainSchedule


def deepspeed_order(M, K, s):
    """TrainSchedule's compute instructions for stage s as cells "sFm" / "sBm"."""
    sched = ds_schedule.TrainSchedule(micro_batches=M, stages=K, stage_id=s)
    buffers = sched.num_pipe_buffers()
    live = defaultdict(deque)  # buffer -> micro-batches forwarded, not yet backwarded
    next_forward = 0
    cells = []
    for step in sched.steps():
        for cmd in step:
            if isinstance(cmd, ds_schedule.ForwardPass):
                m = next_forward
                next_forward += 1
                assert cmd.buffer_id == sched._buffer_idx(m) == m % buffers
                live[cmd.buffer_id].append(m)
                cells.append(f"{s}F{m}")
            elif isinstance(cmd, ds_schedule.BackwardPass):
                m = live[cmd.buffer_id].popleft()
                cells.append(f"{s}B{m}")
    assert next_forward == M and not any(live.values())
    return cells


@pytest.mark.parametrize("K", range(1, 9))
def test_train_schedule_is_pipescope_1f1b(K):
    # M below K (a short pipeline), at K, one past, both sides of 2K, 3K and 4K; every M in
    # 1..4K with PIPESCOPE_ORACLE_FULL_GRID=1 (it passes too, ~3x as long on 2 cores).
    grid = range(1, 4 * K + 1) if os.environ.get("PIPESCOPE_ORACLE_FULL_GRID") else \
        sorted(m for m in {1, K - 1, K, K + 1, 2 * K - 1, 2 * K, 2 * K + 1, 3 * K, 4 * K} if m >= 1)
    for M in grid:
        rows = [line.split(",") for line in run("schedule", "--schedule", "1f1b", "--stages", K,
                                                 "--microbatches", M, "--format", "csv").split()]
        assert rows == [deepspeed_order(M, K, s) for s in range(K)], (K, M)


# ------------------------------------------------------------------ 2. export --to deepspeed

PROFILE = os.path.join(REPO, "profiles", "gpt-1.3b-h200.json")  # 26 layers: embedding, 24 blocks, head


def profile_layers():
    with open(PROFILE, encoding="utf-8") as f:
        return json.load(f)["layers"]


LAYERS = profile_layers()


def write_plan(path, K, cuts, microbatches, replicas=1, recompute=False):
    stages = [{"layers": [cuts[s], cuts[s + 1]], "devices": list(range(s * replicas, (s + 1) * replicas))}
              for s in range(K)]
    plan = {"format": "pipescope.plan", "version": 1, "profile": PROFILE,
            "batch_size": 2 * microbatches * replicas, "microbatches": microbatches,
            "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": recompute,
            "optimizer": {"state_bytes_per_parameter_byte": 2.0}, "stages": stages}
    path.write_text(json.dumps(plan))


def plan_cases():
    n = len(LAYERS)
    params = [layer["parameter_bytes"] for layer in LAYERS]
    cases = []
    for K in (1, 2, 3, 4, 5, 7, 8):
        cases.append((K, [int(x) for x in partition_uniform(n, K)], 1, "uniform"))
        cases.append((K, [int(x) for x in partition_balanced(params, K)], 1, "balanced"))
    rng = random.Random(20261201)
    for _ in range(12):
        K = rng.choice([2, 3, 4, 6, 8])
        cuts = [0] + sorted(rng.sample(range(1, n), K - 1)) + [n]
        cases.append((K, cuts, rng.choice([1, 2]), "random"))
    return cases


CASES = plan_cases()


def load_exported(text, tmp_path):
    path = tmp_path / "ds_setup.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("ds_setup", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def partition_as_deepspeed(monkeypatch, exported, rank):
    """Builds the exported PlannedPipelineModule as global rank `rank` and returns it after
    DeepSpeed's own _partition_layers ran (see the module doc for the stubbed part)."""

    def init(self, layers, num_stages=None, topology=None, loss_fn=None, partition_method="parameters",
             activation_checkpoint_interval=0, **kwargs):
        torch.nn.Module.__init__(self)
        self.loss_fn = loss_fn
        self.global_rank = rank
        self._topo = topology
        self.num_stages = topology.get_dim("pipe")
        self.stage_id = topology.get_coord(rank).pipe
        self._layer_specs = list(layers)
        self._num_layers = len(self._layer_specs)
        self._local_start, self._local_stop = 0, None
        self.activation_checkpoint_interval = activation_checkpoint_interval
        self._partition_layers(method=partition_method)

    monkeypatch.setattr(PipelineModule, "__init__", init)
    layers = [torch.nn.Identity() for _ in range(exported.PARTS[-1])]
    return exported.make_pipeline_module(layers, loss_fn=None)


@pytest.mark.parametrize("K,cuts,replicas,origin", CASES,
                         ids=[f"{c[3]}-K{c[0]}-r{c[2]}-{'-'.join(map(str, c[1]))}" for c in CASES])
def test_exported_parts_are_deepspeeds(K, cuts, replicas, origin, tmp_path, monkeypatch):
    plan = tmp_path / "plan.json"
    write_plan(plan, K, cuts, microbatches=2 * K, replicas=replicas)
    facts = json.loads(run("export", "--plan", plan, "--to", "deepspeed", "--json"))
    assert facts["parts"] == cuts
    uniform = [int(x) for x in partition_uniform(len(LAYERS), K)]
    assert (facts["partition_method"] == "uniform") == (cuts == uniform), facts
    if origin == "uniform":
        assert facts["partition_method"] == "uniform"

    exported = load_exported(run("export", "--plan", plan, "--to", "deepspeed"), tmp_path)
    assert exported.PARTS == cuts and exported.NUM_STAGES == K and exported.DATA_PARALLEL_SIZE == replicas
    for rank in range(K * replicas):
        module = partition_as_deepspeed(monkeypatch, exported, rank)
        stage = module.stage_id
        assert module.parts == cuts, (rank, module.parts)
        assert (module._local_start, module._local_stop) == (cuts[stage], cuts[stage + 1]), rank

    # DeepSpeed's own batch check: train_batch_size = micro-batch x accumulation x data parallel.
    monkeypatch.setattr(ds_config.dist, "get_rank", lambda *a, **k: 0)
    mpu = types.SimpleNamespace(get_data_parallel_world_size=lambda: replicas)
    config = ds_config.DeepSpeedConfig(dict(exported.DS_CONFIG), mpu=mpu)
    assert config.gradient_accumulation_steps == 2 * K
    assert config.train_batch_size == exported.DS_CONFIG["train_batch_size"]


def test_planned_plan_exports_deepspeeds_parts(tmp_path, monkeypatch):
    # A plan the planner chose (13B GPT on 8 H200s, 1F1B): DeepSpeed builds its stages.
    plan = tmp_path / "plan.json"
    run("plan", "--profile", os.path.join(REPO, "profiles", "gpt-13b-h200.json"),
        "--hardware", os.path.join(REPO, "profiles", "h200-8x-nvlink.json"), "-D", 8, "-N", 64,
        "--schedules", "1f1b", "--recompute", "off", "-o", plan)
    p = json.loads(plan.read_text())
    cuts = [s["layers"][0] for s in p["stages"]] + [p["stages"][-1]["layers"][1]]
    exported = load_exported(run("export", "--plan", plan, "--to", "deepspeed"), tmp_path)
    assert exported.PARTS == cuts
    assert (exported.PARTITION_METHOD == "uniform") == (cuts == [int(x) for x in partition_uniform(cuts[-1], len(cuts) - 1)])
    for rank in range(exported.NUM_STAGES * exported.DATA_PARALLEL_SIZE):
        module = partition_as_deepspeed(monkeypatch, exported, rank)
        assert module.parts == cuts


def test_balanced_llm_plan_exports_deepspeeds_parts(tmp_path, monkeypatch):
    # Issue 38: Llama-3-8B on 8 H100s, p = 4, DeepSpeed. Its 128,256-word head costs about two
    # decoder layers, so the search's balanced split takes layers off the last stage
    # (llm/balanced_split.h; 8, 8, 9, 7 when this was written). The export's PARTS count the
    # embedding and the head as DeepSpeed layers of their own, on the end stages, and
    # DeepSpeed's own _partition_layers, run on every rank, builds exactly those stages.
    plan = tmp_path / "plan.json"
    run("plan", "--hf-config", os.path.join(REPO, "profiles", "hf", "llama-3-8b.json"), "--gpu", "h100-sxm",
        "--gpus", 8, "--global-batch-size", 64, "--seq-length", 4096, "--framework", "deepspeed",
        "--pipeline-model-parallel-size", 4, "--top", 1, "--out", plan)
    decoders = json.loads(plan.read_text())["layout"]["layers_per_chunk"]
    assert len(decoders) == 4 and sum(decoders) == 32 and decoders != [8] * 4, decoders
    assert decoders[-1] < 8  # the head's stage holds fewer decoder layers than the even split's 8
    # Stage s holds its decoder layers, plus the embedding on stage 0 and the head on stage 3.
    sizes = [n + (s == 0) + (s == 3) for s, n in enumerate(decoders)]
    cuts = [sum(sizes[:s]) for s in range(5)]
    facts = json.loads(run("export", "--plan", plan, "--to", "deepspeed", "--json"))
    assert facts["parts"] == cuts and facts["partition_method"] == "pipescope", facts
    exported = load_exported(run("export", "--plan", plan, "--to", "deepspeed"), tmp_path)
    assert exported.LAYER_NAMES[0] == "embedding" and exported.LAYER_NAMES[-1] == "head"
    assert exported.PARTS == cuts and exported.PARTS[-1] == 34
    for rank in range(exported.NUM_STAGES * exported.DATA_PARALLEL_SIZE * exported.MODEL_PARALLEL_SIZE):
        module = partition_as_deepspeed(monkeypatch, exported, rank)
        stage = module.stage_id
        assert module.parts == cuts, (rank, module.parts)
        names = exported.LAYER_NAMES[module._local_start:module._local_stop]
        assert sum(name.startswith("layers.") for name in names) == decoders[stage], (rank, names)
        assert ("embedding" in names) == (stage == 0) and ("head" in names) == (stage == 3), (rank, names)


# ------------------------------------------------------------------ a plan's layout

def write_layout_plan(path, K, replicas, microbatches, layout):
    """A v2 plan: K uniform stages of `replicas` replicas (micro-batch 2), with `layout`."""
    cuts = [int(x) for x in partition_uniform(len(LAYERS), K)]
    write_plan(path, K, cuts, microbatches, replicas=replicas)
    plan = json.loads(path.read_text())
    plan["version"] = 2
    plan["layout"] = {"p": K, "d": replicas, "micro_batch": 2, "microbatches": microbatches, **layout}
    if plan["layout"].get("ep", 1) > 1:  # expert parallelism needs an MoE model
        plan["profile"] = moe_profile(PROFILE, path.parent)
    path.write_text(json.dumps(plan))


@pytest.mark.parametrize("sharding,stage,overlap", [("none", 0, False), ("distributed-optimizer", 1, False),
                                                    ("distributed-optimizer", 1, True)])
@pytest.mark.parametrize("precision", ["bf16-mixed", "fp32"])
def test_layout_zero_stage_is_deepspeeds_config(sharding, stage, overlap, precision, tmp_path, monkeypatch):
    # DS_CONFIG parsed by DeepSpeed's own DeepSpeedConfig (no distributed init: get_rank
    # and the mpu's data-parallel size stood in for): ZeRO stage, bf16 and the batch.
    K, replicas, t = 2, 4, 2
    plan = tmp_path / "plan.json"
    write_layout_plan(plan, K, replicas, 4, {"t": t, "sharding": sharding, "precision": precision,
                                             "recompute": "full", "overlap_grad_reduce": overlap})
    exported = load_exported(run("export", "--plan", plan, "--to", "deepspeed"), tmp_path)
    facts = json.loads(run("export", "--plan", plan, "--to", "deepspeed", "--json"))
    monkeypatch.setattr(ds_config.dist, "get_rank", lambda *a, **k: 0)
    mpu = types.SimpleNamespace(get_data_parallel_world_size=lambda: replicas)
    config = ds_config.DeepSpeedConfig(dict(exported.DS_CONFIG), mpu=mpu)
    assert config.zero_optimization_stage == stage == facts["zero_stage"]
    assert config.zero_config.overlap_comm == overlap  # the gradient reduce overlapped as the plan was timed
    assert config.zero_enabled == (stage > 0)
    assert config.bfloat16_config.enabled == (precision == "bf16-mixed")
    assert not config.bfloat16_config.bf16_master_weights_and_grads  # fp32 master weights and grads, as bf16-mixed keeps
    assert config.train_batch_size == 2 * 4 * replicas
    assert exported.ACTIVATION_CHECKPOINT_INTERVAL == 1  # full recompute: every layer from its input
    # DeepSpeed's topology numbers ranks as pipescope's groups say (model = tp fastest, then data, then pipe).
    from deepspeed.runtime.pipe.topology import PipeModelDataParallelTopology
    topo = PipeModelDataParallelTopology(num_pp=K, num_mp=t, num_dp=replicas)
    for axis, group in (("model", "tp"), ("data", "dp"), ("pipe", "pp")):
        lists = topo.get_axis_comm_lists(axis)
        said = facts["groups"][group]
        assert sorted(lists)[0] == said["first_group"], (axis, lists)
        for ranks in lists:
            nodes = {r // 8 for r in ranks}
            assert (len(nodes) > 1) == said["crosses_nodes"], (axis, ranks)


def test_layout_zero_2_3_refused_as_the_pipeline_engine_refuses(tmp_path):
    # DeepSpeed's PipelineEngine asserts stage < 2; the export exits 2 naming layout.sharding.
    import inspect
    from deepspeed.runtime.pipe.engine import PipelineEngine
    assert "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" in inspect.getsource(PipelineEngine.__init__)
    for sharding in ("zero-2", "zero-3"):
        plan = tmp_path / "plan.json"
        write_layout_plan(plan, 2, 2, 4, {"sharding": sharding})
        r = subprocess.run([PIPESCOPE, "export", "--plan", str(plan), "--to", "deepspeed"], capture_output=True, text=True)
        assert r.returncode == 2 and "layout.sharding" in r.stderr and "stage < 2" in r.stderr, r.stderr


@pytest.mark.parametrize("K,replicas,ep,sharding", [(2, 4, 2, "distributed-optimizer"), (1, 16, 4, "zero-3"),
                                                     (4, 8, 8, "none")])
def test_layout_expert_parallel_is_autoeps(K, replicas, ep, sharding, tmp_path, monkeypatch):
    # At t = 1 the export writes AutoEP's section; DeepSpeedConfig parses it, AutoEP's own
    # validate_autoep_config accepts it at the ZeRO stage (a pipeline included), and AutoEP's
    # folding tables (the groups its engine checks the cached ones against) are the export's:
    # ep groups of ep consecutive ranks inside each stage (Megatron-Core's expert RankGenerator
    # at t = 1: stride 1), the experts' data-parallel groups of replicas / ep.
    from deepspeed.module_inject.auto_ep_config import validate_autoep_config
    from deepspeed.module_inject.auto_ep_folding import build_folding_spec, expected_folding_group_tables
    plan = tmp_path / "plan.json"
    write_layout_plan(plan, K, replicas, 4, {"ep": ep, "sharding": sharding})
    exported = load_exported(run("export", "--plan", plan, "--to", "deepspeed"), tmp_path)
    facts = json.loads(run("export", "--plan", plan, "--to", "deepspeed", "--json"))
    monkeypatch.setattr(ds_config.dist, "get_rank", lambda *a, **k: 0)
    mpu = types.SimpleNamespace(get_data_parallel_world_size=lambda: replicas)
    config = ds_config.DeepSpeedConfig(dict(exported.DS_CONFIG), mpu=mpu)
    autoep = config.expert_parallel_config
    assert (autoep.enabled, autoep.autoep_size, autoep.expert_tensor_parallel_size) == (True, ep, 1)
    world = K * replicas
    validate_autoep_config(autoep, world, K, 1, 1, zero_stage=config.zero_optimization_stage)
    tables = expected_folding_group_tables(build_folding_spec(world_size=world, pp_size=K, tp_size=1, ep_size=ep))
    said = facts["groups"]["ep"]
    assert sorted(tables.ep_groups) == [tuple(range(i, i + ep)) for i in range(0, world, ep)]
    assert (list(sorted(tables.ep_groups)[0]), said["size"], said["stride"]) == (said["first_group"], ep, 1)
    assert {len(g) for g in tables.edp_groups} == {replicas // ep}


@pytest.mark.parametrize("field,value", [("cp", 2), ("ep", 2), ("sequence_parallel", True),
                                         ("recompute", "selective"), ("precision", "fp8-params")])
def test_layout_fields_deepspeed_lacks_exit_two(field, value, tmp_path):
    plan = tmp_path / "plan.json"
    write_layout_plan(plan, 2, 2, 4, {"t": 2, field: value})
    r = subprocess.run([PIPESCOPE, "export", "--plan", str(plan), "--to", "deepspeed"], capture_output=True, text=True)
    assert r.returncode == 2 and f"layout.{field}" in r.stderr, r.stderr
