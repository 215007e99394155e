"""Megatron-Core (megatron-core 0.16.1, CPU, pure-Python parts) as the oracle for
`pipescope export --to megatron` and for the interleaved schedule (docs/interop.md).

Expectations:
1. Every pipeline split the exporter writes -- an even split, --account-for-embedding/loss-
   in-pipeline-split, --decoder-first/last-pipeline-num-layers, or a
   --pipeline-model-parallel-layout string -- is accepted by Megatron-Core's
   TransformerConfig (its __post_init__ validates the split and parses the layout with
   PipelineParallelLayerLayout, which checks the embedding, the loss and the decoder
   count), and Megatron's own get_num_layers_to_build / get_transformer_layer_offset
   (or, for a layout, PipelineParallelLayerLayout.get_num_layers_to_build /
   get_layer_offset) give, for every (pipeline rank p, virtual stage c), exactly the
   decoder layers of the plan's stage c K + p: how many, and from which layer on.
   Megatron-LM's argument parser (megatron/training/arguments.py, not in the
   megatron-core wheel) maps each flag to the TransformerConfig field of the same
   meaning; the map is FLAG_TO_CONFIG below.
2. Megatron's interleaved order -- get_schedule_table(M, v, K) (the (micro-batch, chunk)
   of each virtual micro-batch, group size K, Megatron's default) and
   get_pp_rank_microbatches (warm-up count per rank) walked as
   forward_backward_pipelining_with_interleaving walks them (warm-up forwards, then one
   forward and one backward, then the cool-down backwards; a backward runs chunk
   v - 1 - c) -- equals `pipescope schedule --schedule interleaved` op for op, for
   several (K, v, M) with M a multiple of K.
3. A v2 plan's layout (t, SP, cp, ep, d, p, v, sharding, recompute, precision, rank
   order; one of them Llama-3-405B-shaped: t 8, p 16, d 128 on 16,384 GPUs): the exported
   flags build Megatron-Core's TransformerConfig (ModelParallelConfig's sizes) and
   DistributedDataParallelConfig with exactly the layout's values, Megatron's
   ConstantNumMicroBatchesCalculator gives the plan's M, and RankGenerator -- the dense
   one and the expert one, as initialize_model_parallel builds them, with the order
   Megatron-LM's initialize.py derives from --use-tp-pp-dp-mapping -- forms groups whose
   ranks sit on 8-GPU nodes exactly as the export's "groups" says (ranks per node,
   crossing nodes, the group of rank 0). Orders and shardings Megatron lacks exit 2.

Narrow stubs, and why: get_num_layers_to_build for a layout reads the pipeline rank from
parallel_state (a process group); the layout object's own methods take the rank as an
argument, so the test calls those, after setting parallel_state's virtual pipeline size
(a plain module global, set and reset here) so that they honour vp_stage.
get_pp_rank_microbatches reads the group size, rank and virtual size from a
p2p_communicator argument; a SimpleNamespace stands in for it.
"""

import json
import os
import random
import subprocess
import types
import warnings

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPESCOPE = os.environ.get("PIPESCOPE_BIN", os.path.join(REPO, "build", "bin", "pipescope"))
MEGATRON_VERSION = "0.16.1"

pytestmark = pytest.mark.skipif(not os.path.exists(PIPESCOPE),
                                reason=f"pipescope binary not built at {PIPESCOPE}")

# The pinned packages are required: a missing one fails the import, it is not skipped.
import torch  # noqa: E402
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed": CPU fallbacks
    import megatron.core as megatron_core
    from megatron.core import parallel_state
    from megatron.core.pipeline_parallel import schedules as mschedules
    from megatron.core.transformer.enums import AttnBackend, LayerType
    from megatron.core.transformer.pipeline_parallel_layer_layout import PipelineParallelLayerLayout
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    from megatron.core.transformer.transformer_config import TransformerConfig
    from megatron.core.transformer.transformer_layer import get_transformer_layer_offset
    from megatron.core.distributed import DistributedDataParallelConfig
    from megatron.core.num_microbatches_calculator import ConstantNumMicroBatchesCalculator


def test_pinned_version():
    assert megatron_core.__version__ == MEGATRON_VERSION


from helpers import run_pipescope as run  # noqa: E402


# ------------------------------------------------------------------ 1. exported splits

# Megatron-LM's flag -> TransformerConfig field (arguments.py's dest names).
FLAG_TO_CONFIG = {
    "--pipeline-model-parallel-size": ("pipeline_model_parallel_size", int),
    "--num-layers": ("num_layers", int),
    "--num-virtual-stages-per-pipeline-rank": ("virtual_pipeline_model_parallel_size", int),
    "--decoder-first-pipeline-num-layers": ("num_layers_in_first_pipeline_stage", int),
    "--decoder-last-pipeline-num-layers": ("num_layers_in_last_pipeline_stage", int),
    "--account-for-embedding-in-pipeline-split": ("account_for_embedding_in_pipeline_split", None),
    "--account-for-loss-in-pipeline-split": ("account_for_loss_in_pipeline_split", None),
    "--pipeline-model-parallel-layout": ("pipeline_model_parallel_layout", str),
    "--recompute-granularity": ("recompute_granularity", str),
    "--recompute-method": ("recompute_method", str),
    "--recompute-num-layers": ("recompute_num_layers", int),
    # store_false in Megatron-LM's parser (dest overlap_p2p_comm, default on): the switch sets False
    "--no-overlap-p2p-communication": ("overlap_p2p_comm", False),
    # what a v2 plan's layout adds (ModelParallelConfig / TransformerConfig fields)
    "--tensor-model-parallel-size": ("tensor_model_parallel_size", int),
    "--sequence-parallel": ("sequence_parallel", None),
    "--context-parallel-size": ("context_parallel_size", int),
    "--expert-model-parallel-size": ("expert_model_parallel_size", int),
    "--bf16": ("bf16", None),
    "--fp16": ("fp16", None),
    "--fp8-format": ("fp8", str),          # arguments.py: dest='fp8'
    "--fp8-param-gather": ("fp8_param", None),  # training.py: config.fp8_param = args.fp8_param_gather
    "--fp8-recipe": ("fp8_recipe", str),
    # arguments.py: type=lambda attn_backend: AttnBackend[attn_backend]
    "--attention-backend": ("attention_backend", lambda name: AttnBackend[name]),
    "--tp-comm-overlap": ("tp_comm_overlap", None),  # ModelParallelConfig.tp_comm_overlap
}
# Megatron-LM's flags whose dest is a DistributedDataParallelConfig field (training.py
# builds the DDP config from the args of the same names).
FLAG_TO_DDP_CONFIG = {
    "--use-distributed-optimizer": "use_distributed_optimizer",
    "--fp8-param-gather": "fp8_param_gather",
    "--overlap-grad-reduce": "overlap_grad_reduce",
    "--overlap-param-gather": "overlap_param_gather",
}
# megatron/training/initialize.py: order = 'tp-cp-ep-pp-dp' if args.use_tp_pp_dp_mapping
# else 'tp-cp-ep-dp-pp', passed to initialize_model_parallel (and so to RankGenerator).
ORDER_FLAG = "--use-tp-pp-dp-mapping"
# Flags about batches and sequence: not config fields (the batch ones feed the
# micro-batch calculator, checked in part 3).
OTHER_FLAGS = {"--seq-length", "--micro-batch-size", "--global-batch-size", ORDER_FLAG, "--use-distributed-optimizer",
               "--overlap-grad-reduce", "--overlap-param-gather"}

PROFILE = os.path.join(REPO, "profiles", "gpt-1.3b-h200.json")  # embedding, 24 blocks, head


def profile_roles():
    with open(PROFILE, encoding="utf-8") as f:
        layers = json.load(f)["layers"]
    roles = []
    for layer in layers:
        kind = layer.get("spec", {}).get("type")
        roles.append("E" if kind in ("embedding", "hf_embedding") else "L" if kind in ("lm_head", "hf_lm_head") else "t")
    return roles


ROLES = profile_roles()


def write_plan(path, K, v, cuts, microbatches, recompute=False, p2p=None):
    """A pipescope.plan with stages cut at `cuts` (K v + 1 layer boundaries), stage s on
    position s % K (Megatron's interleaving), one device per position."""
    stages = [{"layers": [cuts[s], cuts[s + 1]], "devices": [s % K]} for s in range(K * v)]
    plan = {"format": "pipescope.plan", "version": 1, "profile": PROFILE,
            "batch_size": 2 * microbatches, "microbatches": microbatches,
            "schedule": {"kind": "interleaved" if v > 1 else "1f1b", "chunks": v},
            "recompute": recompute, "optimizer": {"state_bytes_per_parameter_byte": 2.0},
            "stages": stages}
    if p2p is not None:
        plan["p2p"] = p2p
    path.write_text(json.dumps(plan))


def config_kwargs(flags, tables, skip=()):
    """TransformerConfig's keyword arguments from the exported flags, each mapped by the
    first table that has it; a flag in `skip` or OTHER_FLAGS is not a config field."""
    kwargs = {}
    for flag in flags:
        name = flag[0]
        if name in OTHER_FLAGS or name in skip:
            continue
        table = next((t for t in tables if name in t), None)
        assert table is not None, f"exporter wrote {name}, which this oracle does not map"
        field, kind = table[name]
        kwargs[field] = True if kind is None else kind if isinstance(kind, bool) else kind(flag[1])
    if kwargs.get("pipeline_model_parallel_size", 1) > 1:
        kwargs["pipeline_dtype"] = torch.bfloat16
    return kwargs


def megatron_config(flags, **model):
    """A profile plan's export (no model flags) with a model's shape given here."""
    shape = {"hidden_size": 64, "num_attention_heads": 4, **model}
    return TransformerConfig(use_cpu_initialization=True, **shape, **config_kwargs(flags, [FLAG_TO_CONFIG]))


def megatron_stages(config, K, v):
    """{model-order stage c K + p: (decoder layers, first decoder index)} as Megatron builds them."""
    out = {}
    layout = config.pipeline_model_parallel_layout
    vp = config.virtual_pipeline_model_parallel_size
    for c in range(v):
        for p in range(K):
            if layout is not None:
                parallel_state.set_virtual_pipeline_model_parallel_world_size(vp)
                try:
                    n = layout.get_num_layers_to_build(layer_type=LayerType.decoder, vp_stage=c, pp_rank=p)
                    first = layout.get_layer_offset(layer_type=LayerType.decoder, vp_stage=c, pp_rank=p)
                finally:
                    parallel_state.set_virtual_pipeline_model_parallel_world_size(None)
            else:
                vp_stage = c if vp is not None else None
                n = get_num_layers_to_build(config, vp_stage=vp_stage, pp_rank=p)
                first = get_transformer_layer_offset(config, vp_stage=vp_stage, pp_rank=p)
            out[c * K + p] = (n, first)
    return out


def plan_stages(cuts):
    """{stage: (decoder layers, first decoder index)} from the plan's cuts and the profile's roles."""
    out, seen = {}, 0
    for s in range(len(cuts) - 1):
        n = sum(1 for r in ROLES[cuts[s]:cuts[s + 1]] if r == "t")
        out[s] = (n, seen)
        seen += n
    return out


def random_cuts(rng, S):
    """S contiguous stages over the profile's layers, each holding at least one decoder."""
    decoders = [i for i, r in enumerate(ROLES) if r == "t"]
    inner = sorted(rng.sample(decoders[1:], S - 1))
    return [0] + inner + [len(ROLES)]


def crafted_cuts():
    """Splits that the exporter says in each of its four forms (see interop/export_megatron.cpp)."""
    n = len(ROLES)  # 26: E at 0, decoders 1..24, L at 25
    return [
        (2, 1, [0, 13, n]),                 # 12 | 12: even
        (4, 2, [0, 4, 7, 10, 13, 16, 19, 22, n]),  # 3 each: even, v = 2
        (5, 1, [0, 5, 10, 15, 20, n]),      # 4, 5, 5, 5, 5: account for the embedding
        (5, 1, [0, 6, 11, 16, 21, n]),      # 5, 5, 5, 5, 4: account for the loss
        (4, 1, [0, 4, 11, 18, n]),          # 3, 7, 7, 7: first stage uneven
        (3, 1, [0, 9, 17, n]),              # 8, 8, 8 -> even; kept as a control
        (3, 1, [0, 10, 19, n]),             # 9, 9, 6: last stage uneven
    ]


def plan_cases():
    cases = [(K, v, cuts, False) for K, v, cuts in crafted_cuts()]
    rng = random.Random(20261201)
    for _ in range(24):
        K = rng.choice([2, 3, 4, 6, 8])
        v = rng.choice([1, 2]) if K <= 6 else 1
        cases.append((K, v, random_cuts(rng, K * v), rng.random() < 0.25))
    return cases


CASES = plan_cases()


@pytest.mark.parametrize("K,v,cuts,recompute", CASES, ids=[f"K{c[0]}v{c[1]}-{'-'.join(map(str, c[2]))}{'-r' if c[3] else ''}" for c in CASES])
def test_exported_split_is_megatrons(K, v, cuts, recompute, tmp_path):
    plan = tmp_path / "plan.json"
    write_plan(plan, K, v, cuts, microbatches=2 * K, recompute=recompute)
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    config = megatron_config(exported["flags"])  # Megatron-Core validates it here
    assert config.pipeline_model_parallel_size == K
    if v > 1:
        assert config.virtual_pipeline_model_parallel_size == v
    assert megatron_stages(config, K, v) == plan_stages(cuts), (exported["cut"], exported["flags"])
    if exported["cut"] == "layout":
        layout_flag = [f[1] for f in exported["flags"] if f[0] == "--pipeline-model-parallel-layout"][0]
        parsed = PipelineParallelLayerLayout(layout_flag, K)  # the parser on its own, too
        parsed.validate_layer_layout(num_layers=config.num_layers, mtp_num_layers=None)
        assert parsed.virtual_pipeline_model_parallel_size == v


@pytest.mark.parametrize("v,p2p,flag,megatron_p2p", [
    (2, "blocking", True, "blocking"),       # interleaved: --no-overlap-p2p-communication
    (2, "overlapped", False, "overlapped"),  # interleaved: Megatron-LM's default overlaps
    (2, None, False, "overlapped"),          # a plan without "p2p": overlapped
    (1, "overlapped", False, "blocking"),    # 1f1b: Megatron-LM's sends and receives block anyway
    (1, "blocking", False, "blocking"),
])
def test_p2p_is_said_in_megatrons_flag(v, p2p, flag, megatron_p2p, tmp_path):
    plan = tmp_path / "plan.json"
    cuts = [0, 7, 13, 19, len(ROLES)] if v == 2 else [0, 13, len(ROLES)]
    write_plan(plan, 2, v, cuts, microbatches=4, p2p=p2p)
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    names = [f[0] for f in exported["flags"]]
    assert ("--no-overlap-p2p-communication" in names) == flag, names
    assert "--overlap-p2p-communication" not in names  # not a flag of the pinned Megatron-LM
    assert exported["p2p"] == megatron_p2p
    config = megatron_config(exported["flags"])  # the oracle parses the switch
    if flag:
        assert config.overlap_p2p_comm is False


def test_every_cut_form_is_covered(tmp_path):
    # The grid above must reach each of the exporter's four forms, or it checks less than it says.
    forms = set()
    for K, v, cuts, recompute in CASES:
        plan = tmp_path / "plan.json"
        write_plan(plan, K, v, cuts, microbatches=2 * K, recompute=recompute)
        forms.add(json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))["cut"])
    assert forms == {"even", "account-for", "first-last", "layout"}


def test_planned_interleaved_plan_exports_megatrons_split(tmp_path):
    # A plan the planner chose (13B GPT on 8 H200s, interleaved): Megatron builds its stages.
    plan = tmp_path / "plan.json"
    run("plan", "--profile", os.path.join(REPO, "profiles", "gpt-13b-h200.json"),
        "--hardware", os.path.join(REPO, "profiles", "h200-8x-nvlink.json"), "-D", 8, "-N", 64,
        "--schedules", "interleaved", "--recompute", "off", "-o", plan)
    p = json.loads(plan.read_text())
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    K = next(f for f in exported["flags"] if f[0] == "--pipeline-model-parallel-size")[1]
    K, v = int(K), p["schedule"]["chunks"]
    config = megatron_config(exported["flags"])
    with open(os.path.join(REPO, "profiles", "gpt-13b-h200.json"), encoding="utf-8") as f:
        kinds = [layer.get("spec", {}).get("type") for layer in json.load(f)["layers"]]
    expected, seen = {}, 0
    for s, stage in enumerate(p["stages"][:K * v]):
        a, b = stage["layers"]
        n = sum(1 for k in kinds[a:b] if k not in ("embedding", "lm_head"))
        expected[s] = (n, seen)
        seen += n
    assert megatron_stages(config, K, v) == expected


# ------------------------------------------------------------------ 2. interleaved order


def megatron_interleaved_order(K, v, M, rank):
    """The op order forward_backward_pipelining_with_interleaving runs on `rank`, as cells."""
    table = mschedules.get_schedule_table(M, v, K)
    comm = types.SimpleNamespace(pp_group=types.SimpleNamespace(size=lambda: K, rank=lambda: rank),
                                 virtual_pipeline_model_parallel_size=v)
    total, _, warmup, remaining = mschedules.get_pp_rank_microbatches(M, v, K, p2p_communicator=comm)
    assert total == M * v == len(table)

    def forward(k):
        mb, chunk = table[k]
        return f"{chunk * K + rank}F{mb}"

    def backward(k):
        mb, chunk = table[k]
        return f"{(v - 1 - chunk) * K + rank}B{mb}"

    cells = [forward(k) for k in range(warmup)]
    for i in range(remaining):
        cells += [forward(warmup + i), backward(i)]
    cells += [backward(k) for k in range(remaining, total)]
    return cells


@pytest.mark.parametrize("K,v", [(2, 2), (2, 3), (3, 2), (4, 2), (4, 4), (8, 2)])
def test_interleaved_order_is_megatrons(K, v):
    for M in (K, 2 * K, 3 * K, 4 * K):
        rows = [line.split(",") for line in run("schedule", "--schedule", "interleaved", "--stages", K,
                                                 "--microbatches", M, "--chunks", v, "--format", "csv").split()]
        assert rows == [megatron_interleaved_order(K, v, M, r) for r in range(K)], (K, v, M)


# ------------------------------------------------------------------ 3. a plan's layout

# Layouts of a v2 plan (llm/plan_layout.h). Each is exported, its flags parsed by
# Megatron-Core's configs, and the rank groups pipescope states checked against
# RankGenerator's. (t, sp, cp, ep, d, p, v, sharding, recompute, precision, order, b, M, decoders)
LAYOUTS = {
    # Llama-3-405B-shaped: t 8, p 16, d 128 on 16,384 GPUs, 126 layers (7 + 14 x 8 + 7 with
    # the embedding and the loss counted), the distributed optimizer, 2048 sequences a step.
    "405b": (8, True, 1, 1, 128, 16, 1, "distributed-optimizer", "selective", "bf16-mixed", "tp-cp-ep-dp-pp", 1, 16, 126),
    "pp-dp": (4, True, 1, 1, 4, 2, 1, "none", "full", "fp32", "tp-cp-ep-pp-dp", 2, 4, 8),
    # --use-tp-pp-dp-mapping with cp > 1 needs ep = cp (initialize_model_parallel's pp groups)
    "cp-ep-pp-dp": (2, True, 2, 2, 2, 2, 1, "none", "selective", "bf16-mixed", "tp-cp-ep-pp-dp", 1, 4, 6),
    # MoE (8 experts, ep 4) in bf16: Megatron-Core refuses MoE with fp8 without Transformer Engine.
    "moe": (2, False, 1, 4, 8, 2, 1, "distributed-optimizer", "none", "bf16-mixed", "tp-cp-ep-dp-pp", 1, 4, 8),
    "fp8-params": (2, True, 1, 1, 4, 2, 1, "distributed-optimizer", "none", "fp8-params", "tp-cp-ep-dp-pp", 2, 4, 8),
    "cp-ep-interleaved": (8, True, 2, 2, 2, 4, 2, "distributed-optimizer", "selective", "bf16-mixed",
                          "tp-cp-ep-dp-pp", 1, 8, 22),
    "dp-only": (1, False, 1, 1, 8, 1, 1, "none", "none", "bf16-mixed", "tp-cp-ep-dp-pp", 4, 2, 4),
}


# The data-parallel overlap some layouts are timed with (--overlap-param-gather needs the
# distributed optimizer: Megatron-LM's arguments.py asserts it, the exporter refuses it).
OVERLAPS = {"405b": (True, True), "moe": (True, True), "pp-dp": (True, False)}


def write_layout_plan(tmp_path, t, sp, cp, ep, d, p, v, sharding, recompute, precision, order, b, M, decoders,
                      overlap=(False, False)):
    """A profile of an embedding, `decoders` blocks and a head (gpt-1.3b's layers, no
    tensor-parallel size of its own), and a v2 plan over it: p positions of d replicas, v
    chunks, stage s on position s % p; the cut puts (decoders + 2) / (p v) layers per stage."""
    with open(PROFILE, encoding="utf-8") as f:
        profile = json.load(f)
    emb, block, head = profile["layers"][0], profile["layers"][1], profile["layers"][-1]
    if ep > 1:  # an MoE block (8 experts, top-2, as the config below): ep on a dense model is refused
        block = dict(block, spec=dict(block["spec"], experts=8, moe_topk=2))
    profile["layers"] = [emb] + [dict(block, name=f"block.{i}") for i in range(decoders)] + [head]
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    S = p * v
    n = decoders + 2
    assert n % S == 0, "the test's cuts are even in profile layers"
    cuts = [n // S * s for s in range(S + 1)]
    stages = [{"layers": [cuts[s], cuts[s + 1]], "devices": [(s % p) * d + k for k in range(d)]} for s in range(S)]
    plan = {"format": "pipescope.plan", "version": 2, "profile": "profile.json", "batch_size": b * M * d,
            "microbatches": M, "schedule": {"kind": "interleaved" if v > 1 else "1f1b", "chunks": v},
            "recompute": False, "stages": stages,
            "layout": {"t": t, "sequence_parallel": sp, "cp": cp, "ep": ep, "d": d, "p": p, "v": v,
                       "sharding": sharding, "recompute": recompute, "micro_batch": b, "microbatches": M,
                       "precision": precision, "order": order,
                       "overlap_grad_reduce": overlap[0], "overlap_param_gather": overlap[1]}}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def flag_value(flags, name, default=None):
    for f in flags:
        if f[0] == name:
            return f[1] if len(f) > 1 else True
    return default


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_flags_are_megatron_cores_config(name, tmp_path):
    t, sp, cp, ep, d, p, v, sharding, recompute, precision, order, b, M, decoders = LAYOUTS[name]
    plan = write_layout_plan(tmp_path, *LAYOUTS[name], overlap=OVERLAPS.get(name, (False, False)))
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    flags = exported["flags"]
    model = {"hidden_size": 1024, "num_attention_heads": 16}
    if ep > 1:  # an MoE model; Megatron-Core has biases in MoE only with expert tensor parallel 1
        model.update(num_moe_experts=8, moe_router_topk=2, add_bias_linear=False)
    config = megatron_config(flags, **model)  # ModelParallelConfig / TransformerConfig validate here
    assert (config.tensor_model_parallel_size, config.sequence_parallel, config.context_parallel_size,
            config.expert_model_parallel_size, config.pipeline_model_parallel_size) == (t, sp and t > 1, cp, ep, p)
    assert (config.virtual_pipeline_model_parallel_size or 1) == v
    assert config.expert_tensor_parallel_size == t  # Megatron's default, which pipescope's memory assumes
    assert config.recompute_granularity == (None if recompute == "none" else recompute)
    if recompute == "full":
        assert (config.recompute_method, config.recompute_num_layers) == ("uniform", 1)
    assert config.bf16 == (precision != "fp32")
    assert (config.fp8, config.fp8_param) == (("hybrid", True) if precision == "fp8-params" else (None, False))
    ddp = DistributedDataParallelConfig(**{field: True for flag, field in FLAG_TO_DDP_CONFIG.items()
                                           if flag_value(flags, flag)})
    assert ddp.use_distributed_optimizer == (sharding == "distributed-optimizer")
    assert (ddp.overlap_grad_reduce, ddp.overlap_param_gather) == OVERLAPS.get(name, (False, False))
    # Megatron's own micro-batch arithmetic: M = global batch / (micro-batch x data parallel),
    # data parallel = WORLD_SIZE / (t cp p).
    world = exported["world_size"]
    assert world == t * cp * d * p
    dp = world // (t * cp * p)
    calc = ConstantNumMicroBatchesCalculator(int(flag_value(flags, "--global-batch-size")),
                                             int(flag_value(flags, "--micro-batch-size")), dp, None, 0)
    assert (dp, calc.get()) == (d, M)
    assert config.num_layers == decoders
    assert megatron_stages(config, p, v) == {s: ((decoders + 2) // (p * v) - (s == 0) - (s == p * v - 1),
                                                 sum((decoders + 2) // (p * v) - (k == 0) for k in range(s)))
                                             for s in range(p * v)}


def megatron_rank_groups(flags, world):
    """{group: RankGenerator's groups}, as initialize_model_parallel builds its two generators."""
    t = int(flag_value(flags, "--tensor-model-parallel-size", 1))
    cp = int(flag_value(flags, "--context-parallel-size", 1))
    ep = int(flag_value(flags, "--expert-model-parallel-size", 1))
    pp = int(flag_value(flags, "--pipeline-model-parallel-size", 1))
    order = "tp-cp-ep-pp-dp" if flag_value(flags, ORDER_FLAG) else "tp-cp-ep-dp-pp"
    dp = world // (t * cp * pp)
    dense = parallel_state.RankGenerator(tp=t, ep=1, dp=dp, pp=pp, cp=cp, order=order)
    expert = parallel_state.RankGenerator(tp=t, ep=ep, dp=world // (t * ep * pp), pp=pp, cp=1, order=order)
    groups = {g: dense.get_ranks(g) for g in ("tp", "cp", "dp", "pp")}
    groups["ep"] = expert.get_ranks("ep")
    assert dense.get_ranks("pp") == expert.get_ranks("pp")  # initialize_model_parallel asserts it too
    return order, groups


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_groups_share_nodes_as_rank_generator_says(name, tmp_path):
    # 8 GPUs per node: for every group of every kind, each node holds either none of its
    # ranks or exactly the ranks_per_node pipescope states, and the group crosses nodes
    # exactly when pipescope says so; the group of rank 0 is pipescope's first_group.
    layout = LAYOUTS[name]
    plan = write_layout_plan(tmp_path, *layout)
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json", "--gpus-per-node", 8))
    order, groups = megatron_rank_groups(exported["flags"], exported["world_size"])
    assert order == exported["order"] == layout[10]
    for g, ranks in groups.items():
        said = exported["groups"][g]
        assert ranks[0] == said["first_group"], g
        assert all(len(group) == said["size"] for group in ranks), g
        for group in ranks:
            per_node = {}
            for r in group:
                per_node[r // 8] = per_node.get(r // 8, 0) + 1
            assert set(per_node.values()) == {said["ranks_per_node"]}, (g, group[:16], per_node)
            assert (len(per_node) > 1) == said["crosses_nodes"], (g, group[:16])
    assert sum(len(x) for x in groups["tp"]) == exported["world_size"]


def test_pp_dp_order_with_cp_but_not_ep_is_what_megatron_refuses(tmp_path):
    # RankGenerator's dense and expert pp groups differ (strides t cp and t ep) and
    # initialize_model_parallel asserts they are the same: the export refuses it too.
    plan = write_layout_plan(tmp_path, 4, True, 2, 1, 4, 2, 1, "none", "full", "fp32", "tp-cp-ep-pp-dp", 2, 4, 8)
    dense = parallel_state.RankGenerator(tp=4, ep=1, dp=4, pp=2, cp=2, order="tp-cp-ep-pp-dp")
    expert = parallel_state.RankGenerator(tp=4, ep=1, dp=8, pp=2, cp=1, order="tp-cp-ep-pp-dp")
    assert dense.get_ranks("pp") != expert.get_ranks("pp")
    r = subprocess.run([PIPESCOPE, "export", "--plan", str(plan), "--to", "megatron"], capture_output=True, text=True)
    assert r.returncode == 2 and "layout.order" in r.stderr and "cp = 2 and ep = 1" in r.stderr, r.stderr


@pytest.mark.parametrize("field,value,names", [
    ("sharding", "zero-2", "layout.sharding"),
    ("sharding", "zero-3", "layout.sharding"),
    ("order", "tp-dp-cp-ep-pp", "layout.order"),
])
def test_layout_megatron_lacks_exits_two(field, value, names, tmp_path):
    plan = write_layout_plan(tmp_path, *LAYOUTS["pp-dp"])
    p = json.loads(plan.read_text())
    p["layout"][field] = value
    plan.write_text(json.dumps(p))
    r = subprocess.run([PIPESCOPE, "export", "--plan", str(plan), "--to", "megatron"], capture_output=True, text=True)
    assert r.returncode == 2 and names in r.stderr, r.stderr


# ------------------------------------------------------------------ issue 38: a balanced split

SPLIT_FLAGS = {"--pipeline-model-parallel-size", "--num-layers", "--num-virtual-stages-per-pipeline-rank",
               "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
               "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
               "--pipeline-model-parallel-layout"}


def test_balanced_llm_plan_rebuilds_megatrons_stages(tmp_path):
    # Llama-3-8B on 64 H100s with p = 4 pinned: the search's best splits the 32 layers
    # unevenly (llm/balanced_split.h: its 128,256-word head costs about two decoder layers,
    # so the head's chunk holds fewer; 8, 8, 9, 7 per rank over v = 4 chunks when this was
    # written). Megatron-Core, given the export's split flags, builds each (rank, virtual
    # stage) with the plan's decoder layers, starting at the plan's offset, and puts the
    # embedding on the first stage and the loss on the last.
    plan = tmp_path / "plan.json"
    run("plan", "--hf-config", os.path.join(REPO, "profiles", "hf", "llama-3-8b.json"), "--gpu", "h100-sxm",
        "--gpus", 64, "--global-batch-size", 512, "--seq-length", 4096, "--pipeline-model-parallel-size", 4,
        "--top", 1, "--out", plan)
    layout = json.loads(plan.read_text())["layout"]
    chunks, K, v = layout["layers_per_chunk"], layout["p"], layout["v"]
    assert len(chunks) == K * v and sum(chunks) == 32 and len(set(chunks)) > 1, chunks
    flags = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))["flags"]
    config = megatron_config([f for f in flags if f[0] in SPLIT_FLAGS])
    assert config.num_layers == 32
    expected = {s: (n, sum(chunks[:s])) for s, n in enumerate(chunks)}  # model order: stage c K + p
    assert megatron_stages(config, K, v) == expected
    if config.pipeline_model_parallel_layout is not None:
        stages = config.pipeline_model_parallel_layout.layout  # [pp rank][vp stage] -> layer types
        assert LayerType.embedding in stages[0][0] and LayerType.loss in stages[K - 1][v - 1]


def test_balanced_405b_split_is_megatrons_accounted_split(tmp_path):
    # Llama-3-405B on 16,384 H100s (docs/llm-scale.md): the balanced split of the best layout
    # (p 16, v 4) gives the head's chunk one layer and the embedding's one, 2 to every other
    # chunk: (126 + 2) / 64 = 2, Megatron-LM's own --account-for-embedding-in-pipeline-split
    # --account-for-loss-in-pipeline-split, which the export writes and Megatron-Core rebuilds.
    plan = tmp_path / "plan.json"
    run("llm-plan", *LLAMA3_405B, "--top", 1, "--out", plan)
    layout = json.loads(plan.read_text())["layout"]
    chunks, K, v = layout["layers_per_chunk"], layout["p"], layout["v"]
    assert (K, v) == (16, 4) and chunks == [1] + [2] * 62 + [1], chunks
    flags = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))["flags"]
    split = [f for f in flags if f[0] in SPLIT_FLAGS]
    assert ["--account-for-embedding-in-pipeline-split"] in split and ["--account-for-loss-in-pipeline-split"] in split
    config = megatron_config(split)
    assert megatron_stages(config, K, v) == {s: (n, sum(chunks[:s])) for s, n in enumerate(chunks)}


# ------------------------------------------------------------------ 4. the planner's own 405B answer

LLAMA3_405B = ["--gpu", "h100-sxm", "--num-layers", 126, "--hidden-size", 16384, "--num-attention-heads", 128,
               "--num-query-groups", 8, "--ffn-hidden-size", 53248, "--swiglu", "--normalization", "RMSNorm",
               "--vocab-size", 128256, "--seq-length", 8192, "--untie-embeddings-and-output-weights",
               "--disable-bias-linear", "--gpus", 16384, "--global-batch-size", 2048]


def test_llm_plan_405b_exports_what_megatron_core_accepts(tmp_path):
    # `llm-plan` on Llama-3-405B / 16,384 H100s (docs/llm-scale.md), its best layout
    # written with --out and exported: Megatron-Core's TransformerConfig accepts the flags
    # with the model's own shape (GQA 8 groups, SwiGLU FFN 53248, RMSNorm, no biases), the
    # sizes are the planned layout's, its micro-batch calculator derives the planned d and
    # M from WORLD_SIZE 16,384, and RankGenerator's groups are the export's.
    out = tmp_path / "best.json"
    best = json.loads(run("llm-plan", *LLAMA3_405B, "--top", 1, "--json", "--out", out))["best"][0]["layout"]
    exported = json.loads(run("export", "--plan", out, "--to", "megatron", "--json", "--gpus-per-node", 8))
    flags = exported["flags"]
    config = config_from_flags(flags)  # the export carries the model's own flags
    assert (config.hidden_size, config.num_attention_heads, config.num_query_groups, config.ffn_hidden_size,
            config.gated_linear_unit, config.normalization, config.add_bias_linear) == \
        (16384, 128, 8, 53248, True, "RMSNorm", False)
    assert (config.tensor_model_parallel_size, config.context_parallel_size, config.pipeline_model_parallel_size,
            config.virtual_pipeline_model_parallel_size or 1) == (best["t"], best["cp"], best["p"], best["v"])
    assert config.sequence_parallel == (best["sequence_parallel"] and best["t"] > 1)
    assert config.num_layers == 126
    assert exported["world_size"] == 16384
    dp = 16384 // (best["t"] * best["cp"] * best["p"])
    calc = ConstantNumMicroBatchesCalculator(int(flag_value(flags, "--global-batch-size")),
                                             int(flag_value(flags, "--micro-batch-size")), dp, None, 0)
    assert (dp, calc.get(), int(flag_value(flags, "--global-batch-size"))) == (best["d"], best["microbatches"], 2048)
    _, groups = megatron_rank_groups(flags, exported["world_size"])
    for g, ranks in groups.items():
        assert ranks[0] == exported["groups"][g]["first_group"], g
        assert all(len(group) == exported["groups"][g]["size"] for group in ranks), g


# ------------------------------------------------- 4. a job planned from a Hugging Face config

# Model flags that are not TransformerConfig fields: GPTModel's constructor arguments and
# the tokenizer's (pretrain_gpt.py's model_provider passes them), checked against the
# Hugging Face config in hf_model_args below.
GPT_MODEL_FLAGS = {"--max-position-embeddings", "--position-embedding-type", "--untie-embeddings-and-output-weights",
                   "--vocab-size", "--make-vocab-size-divisible-by", "--rotary-base", "--use-rope-scaling",
                   "--rope-scaling-factor", "--group-query-attention"}
# Model flags whose dest is a TransformerConfig field (core_transformer_config_from_args
# copies each arg of a field's name; --swiglu sets gated_linear_unit, --disable-bias-linear
# is add_bias_linear's store_false, --norm-epsilon's dest is layernorm_epsilon, --num-experts'
# num_moe_experts).
MODEL_FLAG_TO_CONFIG = {
    "--hidden-size": ("hidden_size", int),
    "--ffn-hidden-size": ("ffn_hidden_size", int),
    "--num-attention-heads": ("num_attention_heads", int),
    "--num-query-groups": ("num_query_groups", int),
    "--kv-channels": ("kv_channels", int),
    "--normalization": ("normalization", str),
    "--swiglu": ("gated_linear_unit", None),
    "--disable-bias-linear": ("add_bias_linear", False),
    "--add-qkv-bias": ("add_qkv_bias", None),
    "--norm-epsilon": ("layernorm_epsilon", float),
    "--init-method-std": ("init_method_std", float),
    "--num-experts": ("num_moe_experts", int),
    "--moe-router-topk": ("moe_router_topk", int),
    "--moe-ffn-hidden-size": ("moe_ffn_hidden_size", int),
    "--moe-token-dispatcher-type": ("moe_token_dispatcher_type", str),
}


def hf_transformer_config(hf):
    """The TransformerConfig fields Megatron-Bridge's conversion of an HF config sets
    (megatron/bridge/models/*/..._bridge.py: hidden_size, intermediate_size -> ffn_hidden_size,
    num_key_value_heads -> num_query_groups, head_dim -> kv_channels, rms_norm_eps ->
    layernorm_epsilon, initializer_range -> init_method_std, RMSNorm and SwiGLU for the Llama
    family, no linear biases, Qwen2's q/k/v bias; num_local_experts / num_experts_per_tok for
    Mixtral, whose expert FFN is intermediate_size). megatron-bridge itself cannot install on
    this machine (it needs transformer-engine's CUDA build), so the mapping is restated here."""
    heads = hf["num_attention_heads"]
    out = {"num_layers": hf["num_hidden_layers"], "hidden_size": hf["hidden_size"], "num_attention_heads": heads,
           "num_query_groups": hf.get("num_key_value_heads", heads),
           "kv_channels": hf.get("head_dim", hf["hidden_size"] // heads),
           "ffn_hidden_size": hf["intermediate_size"], "normalization": "RMSNorm", "gated_linear_unit": True,
           "add_bias_linear": False, "add_qkv_bias": hf["model_type"] == "qwen2",
           "layernorm_epsilon": hf["rms_norm_eps"]}
    if "initializer_range" in hf:
        out["init_method_std"] = hf["initializer_range"]
    if "num_local_experts" in hf:
        out.update(num_moe_experts=hf["num_local_experts"], moe_router_topk=hf["num_experts_per_tok"],
                   moe_ffn_hidden_size=hf["intermediate_size"])
    return out


def hf_model_args(hf):
    """GPTModel's arguments from the HF config: the vocabulary (padded by Megatron to a
    multiple of --make-vocab-size-divisible-by x t), RoPE's base (HF's default 10,000 where
    the config has none), untied embeddings."""
    return {"--vocab-size": str(hf["vocab_size"]), "--position-embedding-type": "rope",
            "--rotary-base": "%.10g" % hf.get("rope_theta", 10000.0),
            "--untie-embeddings-and-output-weights": True if not hf.get("tie_word_embeddings", True) else None}


def config_from_flags(flags):
    """Megatron-Core's TransformerConfig from an export's flags alone (model flags included)."""
    kwargs = config_kwargs(flags, [MODEL_FLAG_TO_CONFIG, FLAG_TO_CONFIG], skip=GPT_MODEL_FLAGS)
    return TransformerConfig(use_cpu_initialization=True, **kwargs)


# (HF config, GPUs, global batch, pins): the models on 8 to 1024 GPUs; the pins force
# an uneven split (Qwen2-7B's 28 layers on 8 ranks) and an interleaved one.
HF_JOBS = {
    "llama-3-8b-8": ("llama-3-8b", 8, 64, []),
    "llama-3-70b-64": ("llama-3-70b", 64, 512, []),
    "llama-3-70b-1024": ("llama-3-70b", 1024, 2048, []),
    "mixtral-8x7b-64": ("mixtral-8x7b", 64, 256, []),
    "qwen2-7b-uneven": ("qwen2-7b", 16, 128, ["--pipeline-model-parallel-size", 8]),
    "llama-3-8b-interleaved": ("llama-3-8b", 32, 256, ["--pipeline-model-parallel-size", 4,
                                                       "--virtual-pipeline-size", 2]),
}


def plan_hf_job(tmp_path, name):
    model, gpus, batch, pins = HF_JOBS[name]
    hf_path = os.path.join(REPO, "profiles", "hf", model + ".json")
    out = tmp_path / "plan.json"
    run("plan", "--hf-config", hf_path, "--gpu", "h100-sxm", "--gpus", gpus, "--global-batch-size", batch,
        "--seq-length", 4096, *pins, "--out", out)
    with open(hf_path, encoding="utf-8") as f:
        hf = json.load(f)
    with open(out, encoding="utf-8") as f:
        layout = json.load(f)["layout"]
    return hf, layout, out


def layout_stages(layout, layers):
    """{model-order stage: (decoder layers, first decoder index)} of a plan's layout."""
    S = layout["p"] * layout["v"]
    per = layout.get("layers_per_chunk") or [layers // S] * S
    return {s: (per[s], sum(per[:s])) for s in range(S)}


@pytest.mark.parametrize("name", list(HF_JOBS))
def test_hf_job_exports_the_model_megatron_builds(name, tmp_path):
    # The export of a job planned from an HF config carries the model's own flags: Megatron-
    # Core's TransformerConfig built from the flags alone has every field Megatron-Bridge's
    # conversion would set from that config, Megatron builds the plan's decoder layers on each
    # (rank, virtual stage), and the header states pipescope's prediction.
    hf, layout, plan = plan_hf_job(tmp_path, name)
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    flags = exported["flags"]
    config = config_from_flags(flags)
    for field, value in hf_transformer_config(hf).items():
        assert getattr(config, field) == value, field
    for flag, value in hf_model_args(hf).items():
        assert flag_value(flags, flag) == value, flag
    assert (config.tensor_model_parallel_size, config.pipeline_model_parallel_size,
            config.virtual_pipeline_model_parallel_size or 1) == (layout["t"], layout["p"], layout["v"])
    assert megatron_stages(config, layout["p"], layout["v"]) == layout_stages(layout, hf["num_hidden_layers"])
    # Megatron-LM overlaps p2p in its interleaved schedule unless told not to: the plan
    # predicts the same, and the export leaves Megatron's default alone.
    assert flag_value(flags, "--no-overlap-p2p-communication") is None
    assert layout.get("overlap_p2p", False) == (layout["p"] > 1 and layout["v"] > 1)
    predicted = exported["predicted"]
    assert predicted["gpus"] == HF_JOBS[name][1] and len(predicted["ranks"]) == layout["p"]
    assert predicted["step_ns"] > 0
    text = run("export", "--plan", plan, "--to", "megatron")
    assert "# pipescope predicts (" in text and "rank 0: " in text
