"""Megatron-LM's own argument parser (megatron/training/arguments.py of core_v0.15.0, the
release whose flag names the exporter writes) as the oracle for `pipescope export --to
megatron` of a plan with a layout (docs/interop.md, A plan's layout).

arguments.py is not in the megatron-core wheel, so the test reads it from a git mirror of
NVIDIA/Megatron-LM ($PIPESCOPE_MEGATRON_MIRROR, default /work/.mirror/NVIDIA+Megatron-LM/repo,
`git show core_v0.15.0:...`) and skips with the reason when there is none; the CI-running
oracle of the same exports is test_oracle_megatron.py (Megatron-Core's configs and
RankGenerator), which stands alone. Nothing of arguments.py is copied into the project.

Expectation, for the layouts of test_oracle_megatron.py (Llama-3-405B-shaped t 8, p 16,
d 128 on 16,384 GPUs among them): the exported flags plus a model's own flags parse
(argparse refuses an unknown flag or a bad value), validate_args with WORLD_SIZE = the
export's world size accepts them and derives data-parallel size d and M = global batch /
(micro-batch x d), every size, switch and recompute setting lands in args as the layout
says, and core_transformer_config_from_args builds Megatron-Core's TransformerConfig.

Narrow stubs, and why: megatron.training.utils (print / warn helpers, the device's
architecture 9 = H100, update_use_dist_ckpt as Megatron-LM defines it) and
megatron.core.models.retro.utils (two path helpers arguments.py imports; the 0.16.1 wheel
dropped retro) are stood in for; CUDA_DEVICE_MAX_CONNECTIONS=1 is set as Megatron-LM's
launch scripts set it; --no-rope-fusion, because the fused RoPE needs Transformer Engine.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import types
import warnings

import pytest

from helpers import run_pipescope as run
from test_oracle_megatron import (HF_JOBS, LAYOUTS, OVERLAPS, PIPESCOPE, flag_value, hf_transformer_config,
                                  layout_stages, plan_hf_job, write_layout_plan)

MIRROR = os.environ.get("PIPESCOPE_MEGATRON_MIRROR", "/work/.mirror/NVIDIA+Megatron-LM/repo")
TAG = "core_v0.15.0"
PATH_IN_REPO = "megatron/training/arguments.py"


@pytest.fixture(scope="module")
def arguments(tmp_path_factory):
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no Megatron-LM mirror at {MIRROR} (set PIPESCOPE_MEGATRON_MIRROR)")
    shown = subprocess.run(["git", "--git-dir", MIRROR, "show", f"{TAG}:{PATH_IN_REPO}"], capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.skip(f"{MIRROR} has no {TAG}:{PATH_IN_REPO}: {shown.stderr.strip()}")
    path = tmp_path_factory.mktemp("megatron_lm") / "arguments.py"
    path.write_text(shown.stdout)
    stubs = {}
    training = types.ModuleType("megatron.training")
    training.__path__ = []
    utils = types.ModuleType("megatron.training.utils")
    utils.get_device_arch_version = lambda: 9
    utils.update_use_dist_ckpt = lambda args: setattr(args, "use_dist_ckpt", args.ckpt_format != "torch")
    utils.print_rank_0 = lambda *a, **k: None
    utils.warn_rank_0 = lambda *a, **k: None
    retro = types.ModuleType("megatron.core.models.retro")
    retro.__path__ = []
    retro_utils = types.ModuleType("megatron.core.models.retro.utils")
    retro_utils.get_config_path = retro_utils.get_gpt_data_dir = lambda *a: None
    for name, module in (("megatron.training", training), ("megatron.training.utils", utils),
                         ("megatron.core.models.retro", retro), ("megatron.core.models.retro.utils", retro_utils)):
        stubs[name] = sys.modules.get(name)
        sys.modules[name] = module
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = importlib.util.spec_from_file_location("megatron.training.arguments", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    yield module
    for name, old in stubs.items():
        if old is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = old


def model_flags(layout):
    t, sp, cp, ep, d, p, v, sharding, recompute, precision, order, b, M, decoders = layout
    flags = ["--hidden-size", "1024", "--num-attention-heads", "16", "--max-position-embeddings", "2048",
             "--vocab-size", "50257", "--tokenizer-type", "NullTokenizer", "--train-iters", "1", "--lr", "1e-4",
             "--mock-data", "--no-rope-fusion"]
    if ep > 1:
        flags += ["--num-experts", "8", "--moe-router-topk", "2", "--disable-bias-linear"]
    return flags


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_megatron_lm_parses_and_validates_the_layout_export(name, arguments, tmp_path, capsys):
    layout = LAYOUTS[name]
    t, sp, cp, ep, d, p, v, sharding, recompute, precision, order, b, M, decoders = layout
    plan = write_layout_plan(tmp_path, *layout, overlap=OVERLAPS.get(name, (False, False)))
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    flags = [x for f in exported["flags"] for x in f]
    parser = arguments.add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))
    args = parser.parse_args(flags + model_flags(layout))  # argparse exits on an unknown flag or a bad value
    args.rank, args.world_size = 0, exported["world_size"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arguments.validate_args(args)
        config = arguments.core_transformer_config_from_args(args)
    capsys.readouterr()  # validate_args prints every argument
    assert (args.tensor_model_parallel_size, args.context_parallel_size, args.expert_model_parallel_size,
            args.pipeline_model_parallel_size, args.data_parallel_size) == (t, cp, ep, p, d)
    assert args.sequence_parallel == (sp and t > 1)
    assert (args.virtual_pipeline_model_parallel_size or 1) == v
    assert args.use_distributed_optimizer == (sharding == "distributed-optimizer")
    assert (args.overlap_grad_reduce, args.overlap_param_gather) == OVERLAPS.get(name, (False, False))
    assert args.recompute_granularity == (None if recompute == "none" else recompute)
    assert args.use_tp_pp_dp_mapping == (order == "tp-cp-ep-pp-dp")
    assert args.bf16 == (precision != "fp32")
    assert (args.fp8, args.fp8_param_gather) == (("hybrid", True) if precision == "fp8-params" else (None, False))
    assert args.global_batch_size // (args.micro_batch_size * args.data_parallel_size) == M
    assert args.num_layers == decoders == config.num_layers
    assert config.tensor_model_parallel_size == t and config.pipeline_model_parallel_size == p
    assert flag_value(exported["flags"], "--pipeline-model-parallel-size") == str(p)


# What the export's header asks the user to add: the data and the tokenizer are the run's.
RUN_FLAGS = ["--tokenizer-type", "NullTokenizer", "--train-iters", "1", "--lr", "1e-4", "--mock-data", "--no-rope-fusion"]


@pytest.mark.parametrize("name", list(HF_JOBS))
def test_megatron_lm_launches_the_hf_job_export_with_only_data_and_tokenizer_added(name, arguments, tmp_path, capsys):
    # A job planned from an HF config exports every model flag: Megatron-LM's parser and
    # validate_args take the export plus the run's data and tokenizer flags alone, and the
    # TransformerConfig it builds has the fields Megatron-Bridge would set from the config,
    # the planned sizes, M, and Megatron's default overlapped p2p.
    hf, layout, plan = plan_hf_job(tmp_path, name)
    exported = json.loads(run("export", "--plan", plan, "--to", "megatron", "--json"))
    flags = [x for f in exported["flags"] for x in f]
    parser = arguments.add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))
    args = parser.parse_args(flags + RUN_FLAGS)
    args.rank, args.world_size = 0, exported["world_size"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arguments.validate_args(args)
        config = arguments.core_transformer_config_from_args(args)
    capsys.readouterr()
    for field, value in hf_transformer_config(hf).items():
        assert getattr(config, field) == value, field
    assert (args.tensor_model_parallel_size, args.context_parallel_size, args.pipeline_model_parallel_size,
            args.data_parallel_size) == (layout["t"], layout["cp"], layout["p"], layout["d"])
    assert (args.virtual_pipeline_model_parallel_size or 1) == layout["v"]
    assert args.global_batch_size // (args.micro_batch_size * args.data_parallel_size) == layout["microbatches"]
    assert args.overlap_p2p_comm == (layout["v"] > 1)  # validate_args turns it off without virtual stages
    assert args.rotary_base == hf.get("rope_theta", 10000)
    assert sum(n for n, _ in layout_stages(layout, hf["num_hidden_layers"]).values()) == config.num_layers
