"""torchtitan 0.3.0 as the oracle for `pipescope export --to torchtitan` (docs/interop.md).

For version 3 plans that `pipescope plan --hf-config ... --framework torch -o` makes from
profiles/hf/llama-3-8b.json and llama-3-70b.json on 8 to 1024 H100s, pipelines of 1 to 16
positions, splits even (32 / 2, 80 / 8, ...) and uneven (32 / 3, 80 / 3, 80 / 6):

1. The command's arguments (the words after `-m torchtitan.train`, read from the script as
   bash reads it) are the export's --json "args", and torchtitan's own ConfigManager
   (`--module llama3 --config llama3_8b|llama3_70b`, its tyro CLI, Trainer.Config's and
   ParallelismConfig's __post_init__ validation) accepts them.
2. The config it builds holds the plan's layout: pipeline, tensor, context degrees, dp_replicate
   x dp_shard = d, micro-batch size b, n_microbatches = local_batch_size / b = M (as
   _build_pipeline_schedule computes it), no gradient accumulation (global / (local x dp) = 1,
   Trainer's rule, trainer.py: a pipeline's M micro-batches are one local batch; without a
   pipeline it is M), activation checkpointing none / full, sequence parallelism on with t > 1;
   ParallelDims.from_config accepts the degrees for the plan's GPU count.
3. The model torchtitan builds from that config is the Hugging Face config's: layers, hidden
   size, heads, KV heads, FFN width, vocabulary, untied head (export_torchtitan.cpp's table
   of llama3 configs is torchtitan's; its 405B row, checked apart, is refused).
4. torchtitan's own split gives exactly pipescope's stages: the Llama3Model built on the meta
   device, cut by pipeline_parallel.py's _split_module with the config's
   module_fqns_per_model_part, keeps in stage s exactly the plan's layers of stage s (the
   embedding on the first, norm + lm_head on the last), every parameter of the model in one
   stage; _get_pp_rank_to_stage_indices_mapping puts each stage on the plan's pipeline rank;
   _get_pipeline_metadata (which pipeline_llm runs whatever the split) accepts the schedule;
   and for even splits torchtitan's own helper, _generate_llm_fqn_per_model_part(stages, L,
   input_weight=0, output_weight=0), gives the same lists.
   torchtitan's _build_pipeline_schedule, given each rank's stages (stand-ins with what
   torch's constructors read), builds the named class with M micro-batches, or, for an
   export with --torch-csv, loads the script's CSV into a _PipelineScheduleRuntime that
   places every stage on the plan's rank.
5. What torchtitan's llama3 cannot run as planned exits 2 naming the field: Qwen2-7B
   (job.model.shape.qkv_bias: its q, k, v biases), Mixtral-8x7B (job.model.shape.experts) and
   Llama-3.1-405B's shape (from Megatron's model flags): torchtitan's llama3_405b config is
   float8 (torchao's converters) with compile and async TP in its model config, which the
   command line cannot undo; the test reads that from the config itself.

torchtitan is installed with --no-deps (scripts/install-deps.sh) with the small pure-Python
packages its config and pipeline modules import (tyro, docstring-parser, typeguard,
spmd_types, torchdata). Stubbed here, because they are heavy and never reached by the code
under test: tensorboard (the metrics writer), datasets (the Hugging Face dataloaders) and
torchtitan.distributed.minimal_async_ep.kernels (Triton kernels for MoE all-to-all). Skipped,
saying so, only where torchtitan is not importable.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
import types

import pytest

from helpers import PIPESCOPE, REPO

pytestmark = pytest.mark.skipif(not os.path.exists(PIPESCOPE),
                                reason=f"pipescope binary not built at {PIPESCOPE}")


class _Stub(types.ModuleType):
    """A module whose every attribute is another stub (a class, a decorator, a call)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        return self

    def __mro_entries__(self, bases):
        return (object,)


STUBBED = ["tensorboard", "torch.utils.tensorboard", "datasets", "datasets.distributed",
           "torchtitan.distributed.minimal_async_ep.kernels"]


def _import_torchtitan():
    for name in STUBBED:
        sys.modules.setdefault(name, _Stub(name))
    try:
        import torchtitan  # noqa: F401
        import torchtitan.models.llama3.config_registry  # noqa: F401
        from torchtitan.config.manager import ConfigManager
        from torchtitan.distributed import ParallelDims
        from torchtitan.distributed import pipeline_parallel as pp
    except ImportError as e:
        pytest.skip(f"torchtitan 0.3.0 is not importable here ({e}); scripts/install-deps.sh installs it")
    return ConfigManager, ParallelDims, pp


@pytest.fixture(scope="module")
def titan():
    return _import_torchtitan()


HF = os.path.join(REPO, "profiles", "hf")
# Llama-3.1-405B (Meta's config.json values), given to `plan` as Megatron's model flags: a
# shape torchtitan has a config of, refused because that config is float8.
LLAMA_405B = {"num_hidden_layers": 126, "hidden_size": 16384, "num_attention_heads": 128,
              "num_key_value_heads": 8, "intermediate_size": 53248, "vocab_size": 128256,
              "tie_word_embeddings": False}
CONFIGS = {"llama-3-8b": "llama3_8b", "llama-3-70b": "llama3_70b", "llama-3-405b": "llama3_405b"}


def _hf(config):
    if config == "llama-3-405b":
        return LLAMA_405B
    with open(os.path.join(HF, config + ".json"), encoding="utf-8") as f:
        return json.load(f)


def _model_flags(config):
    if config != "llama-3-405b":
        return ["--hf-config", os.path.join(HF, config + ".json")]
    m = LLAMA_405B
    return ["--num-layers", m["num_hidden_layers"], "--hidden-size", m["hidden_size"],
            "--num-attention-heads", m["num_attention_heads"], "--num-query-groups", m["num_key_value_heads"],
            "--ffn-hidden-size", m["intermediate_size"], "--vocab-size", m["vocab_size"], "--swiglu",
            "--disable-bias-linear", "--normalization", "RMSNorm", "--untie-embeddings-and-output-weights"]

# (name, config, GPUs, global batch, pins): the planner chooses the rest (t, cp, d, v,
# schedule, b, M, sharding, recompute) among what torch / torchtitan runs.
PLANS = [
    ("8b-8gpu-p2", "llama-3-8b", 8, 64, ["--pipeline-model-parallel-size", "2"]),
    ("8b-8gpu-p1", "llama-3-8b", 8, 64, ["--pipeline-model-parallel-size", "1"]),
    ("8b-16gpu", "llama-3-8b", 16, 128, []),
    ("8b-24gpu-p3-uneven", "llama-3-8b", 24, 96, ["--pipeline-model-parallel-size", "3"]),
    ("8b-48gpu-p6-v2-uneven", "llama-3-8b", 48, 192, ["--pipeline-model-parallel-size", "6"]),
    ("8b-64gpu-p4-1f1b", "llama-3-8b", 64, 256,
     ["--pipeline-model-parallel-size", "4", "--schedule", "1f1b", "--tensor-model-parallel-size", "2"]),
    # --torch-csv: pipescope's op order in the script's here-document, loaded by torchtitan.
    ("8b-16gpu-p4-interleaved-csv", "llama-3-8b", 16, 128,
     ["--pipeline-model-parallel-size", "4", "--schedule", "interleaved", "--virtual-pipeline-size", "2",
      "--context-parallel-size", "1"], ["--torch-csv"]),
    ("70b-64gpu-p4", "llama-3-70b", 64, 256,
     ["--pipeline-model-parallel-size", "4", "--tensor-model-parallel-size", "8"]),
    ("70b-96gpu-p3-uneven", "llama-3-70b", 96, 384,
     ["--pipeline-model-parallel-size", "3", "--tensor-model-parallel-size", "8"]),
    # cp searched: torch's offer takes cp > 1 only sharded (torchtitan shards over dp_shard x
    # cp; llm/framework.cpp runtime_refusal), so whatever the planner picks torchtitan runs.
    ("70b-192gpu-p6-uneven", "llama-3-70b", 192, 768,
     ["--pipeline-model-parallel-size", "6", "--tensor-model-parallel-size", "8", "--virtual-pipeline-size", "1"]),
    ("70b-256gpu-p8-zbv", "llama-3-70b", 256, 1024,
     ["--pipeline-model-parallel-size", "8", "--tensor-model-parallel-size", "8", "--schedule", "zb-v"]),
    # Full recompute: the model form's search has no pin for it, so the planned layout is
    # edited (layout.recompute "full", the plan's "recompute" true; the export re-predicts).
    ("70b-128gpu-p4-full-recompute", "llama-3-70b", 128, 256,
     ["--pipeline-model-parallel-size", "4", "--tensor-model-parallel-size", "8"]),
    ("70b-1024gpu-p16", "llama-3-70b", 1024, 2048,
     ["--pipeline-model-parallel-size", "16", "--tensor-model-parallel-size", "8"]),
]


def _run(*args, ok=True):
    r = subprocess.run([PIPESCOPE, *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok:
        assert r.returncode == 0, f"pipescope {' '.join(map(str, args))}: {r.stderr}"
    return r


def _plan(tmp, config, gpus, batch, pins, full_recompute=False):
    out = os.path.join(tmp, "plan.json")
    _run("plan", *_model_flags(config), "--gpu", "h100-sxm", "--gpus", gpus,
         "--global-batch-size", batch, "--seq-length", 4096, "--framework", "torch", "--top", 1, "-o", out, *pins)
    with open(out, encoding="utf-8") as f:
        plan = json.load(f)
    if full_recompute:
        plan["layout"]["recompute"] = "full"
        plan["recompute"] = True
        with open(out, "w", encoding="utf-8") as f:
            json.dump(plan, f)
    return out, plan


def _command_args(script):
    """The words after `-m torchtitan.train`, as bash splits the script's last command."""
    command = script[script.index("torchrun "):].replace("\\\n", " ")
    words = shlex.split(command)
    return words[words.index("torchtitan.train") + 1:]


def _plan_stages(plan):
    """Per stage, the modules torchtitan names for the plan's layers (profile layer 0 the
    embedding, 1..L the decoder layers, L + 1 the head), and its pipeline rank."""
    layers = plan["job"]["model"]["shape"]["layers"]
    stages = plan["stages"]
    positions = plan["layout"]["p"]
    names, ranks = [], []
    for st in stages:
        first, end = st["layers"]
        mods = []
        for i in range(first, end):
            if i == 0:
                mods.append("tok_embeddings")
            elif i <= layers:
                mods.append(f"layers.{i - 1}")
            else:
                mods += ["norm", "lm_head"]
        names.append(mods)
        ranks.append(next(k for k in range(positions) if stages[k]["devices"] == st["devices"]))
    return names, ranks


class FakeStage:
    """What torch's schedule constructors read from a stage (no process group)."""

    def __init__(self, stage_index, num_stages, group_size, group_rank):
        self.stage_index, self.num_stages = stage_index, num_stages
        self.group_size, self.group_rank = group_size, group_rank
        self.is_first, self.is_last = stage_index == 0, stage_index == num_stages - 1
        self.submod = None
        self.has_backward = True


@pytest.mark.parametrize("case", PLANS, ids=[p[0] for p in PLANS])
def test_torchtitan_parses_the_export_and_splits_the_model_into_pipescopes_stages(titan, case, tmp_path,
                                                                                   monkeypatch):
    ConfigManager, ParallelDims, pp = titan
    import torch

    _, config, gpus, batch, pins = case[:5]
    export_flags = case[5] if len(case) > 5 else []
    plan_path, plan = _plan(str(tmp_path), config, gpus, batch, pins, full_recompute="full-recompute" in case[0])
    script = _run("export", "--plan", plan_path, "--to", "torchtitan", *export_flags).stdout
    exported = json.loads(_run("export", "--plan", plan_path, "--to", "torchtitan", "--json", *export_flags).stdout)
    layout = plan["layout"]
    p, t, cp, d, v = layout["p"], layout["t"], layout["cp"], layout["d"], layout["v"]
    b, M = layout["micro_batch"], layout["microbatches"]
    assert t * cp * d * p == gpus

    # 1. The script's arguments are the JSON's, and torchtitan's config code accepts them.
    args = _command_args(script)
    assert args == exported["args"]
    assert args[:4] == ["--module", "llama3", "--config", CONFIGS[config]]
    cfg = ConfigManager().parse_args(args)

    # 2. The layout, as torchtitan holds it.
    par, tr = cfg.parallelism, cfg.training
    assert (par.pipeline_parallel_degree, par.tensor_parallel_degree, par.context_parallel_degree) == (p, t, cp)
    assert par.data_parallel_replicate_degree * par.data_parallel_shard_degree == d
    sharded = layout["sharding"] in ("zero-2", "zero-3")
    assert par.data_parallel_shard_degree == (d if sharded else 1)
    assert par.enable_sequence_parallel == (t > 1)
    assert tr.seq_len == 4096
    dp = par.data_parallel_replicate_degree * par.data_parallel_shard_degree
    if p > 1:
        assert par.pipeline_parallel_microbatch_size == b
        assert tr.local_batch_size // par.pipeline_parallel_microbatch_size == M
        assert tr.global_batch_size // (tr.local_batch_size * dp) == 1  # no gradient accumulation
    else:
        assert tr.local_batch_size == b
        assert tr.global_batch_size // (tr.local_batch_size * dp) == M  # M accumulation steps
    assert tr.global_batch_size == batch
    ac = cfg.activation_checkpoint
    if layout["recompute"] == "full":
        assert type(ac).__qualname__ == "FullAC.Config", ac
    else:
        assert ac is None, ac
    ParallelDims.from_config(par, gpus)  # its _validate: the degrees multiply to the GPUs

    # 3. The model is the Hugging Face config's.
    hf = _hf(config)
    model_cfg = cfg.model_spec.model
    block = model_cfg.layers[0]
    assert len(model_cfg.layers) == hf["num_hidden_layers"]
    assert model_cfg.dim == hf["hidden_size"] and model_cfg.vocab_size == hf["vocab_size"]
    assert block.attention.n_heads == hf["num_attention_heads"]
    assert block.attention.n_kv_heads == hf["num_key_value_heads"]
    assert block.feed_forward.w1.out_features == hf["intermediate_size"]
    assert model_cfg.enable_weight_tying == hf["tie_word_embeddings"]

    if p == 1:
        assert par.module_fqns_per_model_part is None
        return

    # 4. torchtitan's split of the model is pipescope's stages, on the plan's ranks.
    fqns, ranks = _plan_stages(plan)
    assert par.module_fqns_per_model_part == fqns
    assert len(fqns) == p * v
    for rank in range(p):
        mine = pp._get_pp_rank_to_stage_indices_mapping(rank, p, par.pipeline_parallel_schedule, len(fqns))
        assert list(mine) == [s for s in range(len(fqns)) if ranks[s] == rank]
    pp._get_pipeline_metadata(ParallelDims.from_config(par, gpus), par, model_cfg)
    # torchtitan's own schedule builder, on every rank's stages: M micro-batches of b, the
    # class get_schedule_class names (its constructor's checks of M), or the script's CSV
    # loaded by _PipelineScheduleRuntime (the here-document written where the script runs).
    if "<<'CSV'\n" in script:
        csv_text = script.split("<<'CSV'\n", 1)[1].split("\nCSV\n", 1)[0] + "\n"
        (tmp_path / par.pipeline_parallel_schedule_csv).write_text(csv_text)
        assert [row.split(",") for row in csv_text.split()] == exported["schedule_csv"]
    monkeypatch.chdir(tmp_path)
    from torch.distributed.pipelining import schedules as S
    for rank in range(p):
        mine = pp._get_pp_rank_to_stage_indices_mapping(rank, p, par.pipeline_parallel_schedule, len(fqns))
        stages = [FakeStage(s, len(fqns), p, rank) for s in mine]
        schedule = pp._build_pipeline_schedule(parallelism=par, local_batch_size=tr.local_batch_size,
                                               stages=stages, loss_fn=lambda *a, **k: (None, None))
        assert schedule._n_microbatches == M
        if par.pipeline_parallel_schedule_csv:
            assert type(schedule) is S._PipelineScheduleRuntime
            assert [schedule.stage_index_to_group_rank[s] for s in range(len(fqns))] == ranks
        else:
            assert type(schedule) is S.get_schedule_class(par.pipeline_parallel_schedule)
    layers = hf["num_hidden_layers"]
    # An even split is torchtitan's own default (its layer-split helper, no stage with fewer
    # layers); a balanced one (llm/balanced_split.h: the head's rank gives up layers) is
    # installed through module_fqns_per_model_part, checked above.
    chunks = layout.get("layers_per_chunk")
    if layers % len(fqns) == 0 and (not chunks or len(set(chunks)) == 1):
        assert pp._generate_llm_fqn_per_model_part(len(fqns), layers, 0, 0) == fqns
    with torch.device("meta"):
        model = model_cfg.build()
    whole = {name: prm.numel() for name, prm in model.named_parameters()}
    seen = {}
    for s, names in enumerate(fqns):
        part = pp._split_module(model, names)
        kept = {name: prm.numel() for name, prm in part.named_parameters()}
        modules = {n.split(".")[0] if not n.startswith("layers.") else ".".join(n.split(".")[:2]) for n in kept}
        assert modules == set(names), f"stage {s}"
        for name, n in kept.items():
            seen[(name, s)] = n
    assert sum(seen.values()) == sum(whole.values())


@pytest.mark.parametrize("config,gpus,field", [("qwen2-7b", 16, "job.model.shape.qkv_bias"),
                                               ("mixtral-8x7b", 64, "job.model.shape.experts"),
                                               ("llama-3-405b", 1024, "job.model.shape.hidden")])
def test_models_torchtitans_llama3_cannot_run_as_planned_exit_two_naming_the_field(config, gpus, field):
    with tempfile.TemporaryDirectory() as tmp:
        plan_path, _ = _plan(tmp, config, gpus, 4 * gpus, ["--pipeline-model-parallel-size", "2" if gpus < 1024 else "16"])
        r = _run("export", "--plan", plan_path, "--to", "torchtitan", ok=False)
    assert r.returncode == 2, r.stderr
    assert field in r.stderr, r.stderr


def test_llama3_405b_config_is_float8_as_the_export_says(titan):
    """Why 405B is refused: torchtitan's own llama3_405b config converts its linears to
    float8 (torchao), so building it fails here without torchao, or, with torchao, holds
    Float8 converters; either way not the bf16 model pipescope planned. Its shape is the one
    export_torchtitan.cpp's table states (126 layers, 16384, 128 heads, 8 KV heads, 53248)."""
    from torchtitan.models.llama3 import llama3_configs
    m = llama3_configs["405B"](attn_backend="flex")
    block = m.layers[0]
    assert (len(m.layers), m.dim, block.attention.n_heads, block.attention.n_kv_heads,
            block.feed_forward.w1.out_features, m.vocab_size) == (126, 16384, 128, 8, 53248, 128256)
    import torchtitan.models.llama3.config_registry as registry
    try:
        cfg = registry.llama3_405b()
    except ImportError as e:
        assert "torchao" in str(e)
    else:
        assert cfg.compile.enable and cfg.compile.enable_async_tensor_parallel
