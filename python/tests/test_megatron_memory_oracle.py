"""Megatron-LM's own megatron/training/theoretical_memory_usage.py as the oracle for
`pipescope llm-memory` (docs/memory.md, At LLM scale).

The file is pure Python over an `args` namespace; it is not in the megatron-core wheel
(it lives in megatron/training/), so the test reads it from a git mirror of NVIDIA/
Megatron-LM ($PIPESCOPE_MEGATRON_MIRROR, default /work/.mirror/NVIDIA+Megatron-LM/repo,
`git show HEAD:...`) and skips with the reason when there is none. Nothing of it is
copied into the project; tests/llm/llm_megatron_test.cpp restates its formulas for CI.

Expectation, for the most loaded rank (rank 0) that the file reports, over t in
{1, 2, 4, 8}, SP on/off, the distributed optimizer, GQA + SwiGLU (Llama-3-70B), MoE
(Mixtral-8x7B), p = 1 and interleaving: equal bytes up to 1e-9, after the differences
pipescope states (tests/llm/llm_megatron_test.cpp's header):
- weights + optimizer: the file spreads the final norm over the p ranks; pipescope puts
  it on the last: rank 0 is (norm h / p) x bytes per parameter lower;
- activations without SP: the file multiplies by 1.05 and takes f = 4 h (24 / t):
  pipescope's rank 0 plus L s b h (16 - 4 f / h) / t x min(1, M / p), x 1.05, equals it;
- interleaved: the embedding's chunk holds min(M, 2 p) micro-batches, not p (1 + (p - 1) / (p v)).
"""

import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPESCOPE = os.environ.get("PIPESCOPE_BIN", os.path.join(REPO, "build", "bin", "pipescope"))
MIRROR = os.environ.get("PIPESCOPE_MEGATRON_MIRROR", "/work/.mirror/NVIDIA+Megatron-LM/repo")
PATH_IN_REPO = "megatron/training/theoretical_memory_usage.py"

pytestmark = pytest.mark.skipif(not os.path.exists(PIPESCOPE), reason=f"pipescope binary not built at {PIPESCOPE}")


@pytest.fixture(scope="module")
def tmu(tmp_path_factory):
    """theoretical_memory_usage as a module, its `.utils` import stubbed (print only)."""
    if not os.path.isdir(MIRROR):
        pytest.skip(f"no Megatron-LM mirror at {MIRROR} (set PIPESCOPE_MEGATRON_MIRROR)")
    shown = subprocess.run(["git", "--git-dir", MIRROR, "show", f"HEAD:{PATH_IN_REPO}"],
                           capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.skip(f"{MIRROR} has no {PATH_IN_REPO}: {shown.stderr.strip()}")
    path = tmp_path_factory.mktemp("megatron") / "theoretical_memory_usage.py"
    path.write_text(shown.stdout)
    package = types.ModuleType("megatron_oracle")
    package.__path__ = []
    utils = types.ModuleType("megatron_oracle.utils")
    utils.is_hybrid_model = lambda args: False
    utils.print_rank_0 = lambda *a, **k: None
    sys.modules["megatron_oracle"], sys.modules["megatron_oracle.utils"] = package, utils
    spec = importlib.util.spec_from_file_location("megatron_oracle.theoretical_memory_usage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def padded(vocab, t):
    multiple = 128 * t
    return (vocab + multiple - 1) // multiple * multiple


def case(name, L, h, a, s, V, t=1, p=1, d=1, sp=False, dist=False, v=None, M=8, kv=None, ffn=None,
         swiglu=False, rms=False, untie=False, experts=None, topk=None, ep=1):
    return dict(name=name, L=L, h=h, a=a, s=s, V=V, t=t, p=p, d=d, sp=sp, dist=dist, v=v, M=M, kv=kv, ffn=ffn,
                swiglu=swiglu, rms=rms, untie=untie, experts=experts, topk=topk, ep=ep)


CASES = [case(f"gpt t{t}{' sp' if sp else ''}{' dist-opt' if dist else ''}", 16, 4096, 32, 2048, 51200,
              t=t, p=4, d=2, sp=sp, dist=dist)
         for t in (1, 2, 4, 8) for sp in (False, True) for dist in (False, True)]
LLAMA70 = dict(L=80, h=8192, a=64, s=8192, V=128256, kv=8, ffn=28672, swiglu=True, rms=True, untie=True)
CASES += [case("llama-3-70b t8 p8 sp dist-opt", t=8, p=8, sp=True, dist=True, M=16, **LLAMA70),
          case("llama-3-70b t8 p8", t=8, p=8, M=16, **LLAMA70)]
MIXTRAL = dict(L=32, h=4096, a=32, s=4096, V=32000, kv=8, ffn=14336, swiglu=True, rms=True, untie=True,
               experts=8, topk=2)
CASES += [case("mixtral t2 ep4 d4 p2 sp dist-opt", t=2, p=2, d=4, sp=True, dist=True, ep=4, **MIXTRAL),
          case("llama-3-8b t4 p1 sp dist-opt", 32, 4096, 32, 8192, 128256, t=4, p=1, d=16, sp=True, dist=True,
               kv=8, ffn=14336, swiglu=True, rms=True, untie=True),
          case("gpt interleaved v2", 32, 4096, 32, 2048, 51200, t=4, p=4, sp=True, v=2, M=16)]


def megatron_args(c):
    V = padded(c["V"], c["t"])
    return types.SimpleNamespace(
        num_layers=c["L"], hidden_size=c["h"], num_attention_heads=c["a"], kv_channels=c["h"] // c["a"],
        group_query_attention=c["kv"] is not None, num_query_groups=c["kv"], num_experts=c["experts"],
        swiglu=c["swiglu"], moe_shared_expert_intermediate_size=None, moe_layer_freq=1,
        moe_ffn_hidden_size=c["ffn"] if c["experts"] else None, moe_router_topk=c["topk"], moe_latent_size=None,
        mtp_num_layers=None, normalization="RMSNorm" if c["rms"] else "LayerNorm", multi_latent_attention=False,
        padded_vocab_size=V, untie_embeddings_and_output_weights=c["untie"],
        ffn_hidden_size=c["ffn"] or 4 * c["h"], add_bias_linear=False, expert_tensor_parallel_size=c["t"],
        expert_model_parallel_size=c["ep"], pipeline_model_parallel_size=c["p"], tensor_model_parallel_size=c["t"],
        world_size=c["t"] * c["d"] * c["p"], data_parallel_size=c["d"], use_distributed_optimizer=c["dist"],
        seq_length=c["s"], micro_batch_size=1, virtual_pipeline_model_parallel_size=c["v"],
        sequence_parallel=c["sp"] and c["t"] > 1, recompute_granularity="selective")


def pipescope_flags(c):
    flags = ["llm-memory", "--json", "--disable-bias-linear", "--recompute-granularity", "selective",
             "--num-layers", c["L"], "--hidden-size", c["h"], "--num-attention-heads", c["a"],
             "--seq-length", c["s"], "--vocab-size", c["V"], "--gpus", c["t"] * c["d"] * c["p"],
             "--tensor-model-parallel-size", c["t"], "--pipeline-model-parallel-size", c["p"],
             "--global-batch-size", c["M"] * c["d"], "--expert-model-parallel-size", c["ep"]]
    optional = [("--num-query-groups", c["kv"]), ("--ffn-hidden-size", c["ffn"]), ("--num-experts", c["experts"]),
                ("--moe-router-topk", c["topk"])]
    flags += [x for flag, value in optional if value for x in (flag, value)]
    flags += ["--normalization", "RMSNorm" if c["rms"] else "LayerNorm"]
    flags += [f for f, on in (("--swiglu", c["swiglu"]), ("--untie-embeddings-and-output-weights", c["untie"]),
                              ("--sequence-parallel", c["sp"]), ("--use-distributed-optimizer", c["dist"])) if on]
    if c["v"]:
        flags += ["--num-layers-per-virtual-pipeline-stage", c["L"] // (c["p"] * c["v"])]
    return [str(f) for f in flags]


@pytest.mark.parametrize("c", CASES, ids=[c["name"] for c in CASES])
def test_rank0_bytes_equal_theoretical_memory_usage(tmu, c):
    run = subprocess.run([PIPESCOPE, *pipescope_flags(c)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    rank0 = json.loads(run.stdout)["stages"][0]
    args = megatron_args(c)
    t, p, h, s, M = c["t"], c["p"], c["h"], c["s"], c["M"]
    per_param = 6 + 12 / c["d"] if c["dist"] else 18
    final_norm_share = (1 if c["rms"] else 2) * h / p * per_param if p > 1 else 0
    weights = tmu.compute_weight_and_optimizer_memory(args)
    ours = rank0["parameter_bytes"] + rank0["gradient_bytes"] + rank0["optimizer_bytes"]
    assert ours + final_norm_share == pytest.approx(weights, rel=1e-9)
    sp_path = args.sequence_parallel and args.recompute_granularity == "selective"
    if sp_path:
        theirs = tmu.compute_activation_memory(args, num_microbatches=M)
        if c["v"]:
            factor = 1 + (p - 1) / (p * c["v"])
            embedding = (8 * s + s * h) / t
            assert rank0["activation_bytes"] - theirs == pytest.approx((min(M, 2 * p) - factor * p) * embedding,
                                                                       rel=1e-9)
        else:
            assert rank0["activation_bytes"] == pytest.approx(theirs, rel=1e-9)
    elif p > 1:
        theirs = tmu.compute_activation_memory_without_sp(args, num_microbatches=M)
        f = c["ffn"] or 4 * h
        ffn_term = c["L"] * s * h * (16 - 4 * f / h) / t * min(1, M / p)
        assert (rank0["activation_bytes"] + ffn_term) * 1.05 == pytest.approx(theirs, rel=1e-9)
