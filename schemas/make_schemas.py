"""Writes the JSON Schemas (draft 2020-12) in this folder, one per pipescope file format.

The schemas share pieces (a step report is a prediction or a measurement; the plan search
embeds a plan and sweep candidates), so they are built here and written as
`NAME.schema.json`; python/tests/test_schemas.py checks that the files are what this
script writes. Run after changing a format:  python3 schemas/make_schemas.py
"""

import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def text(schema):
    return json.dumps(schema, indent=2) + "\n"


def build():
    """{name: schema} for every format."""
    SCHEMAS.clear()
    _define()
    return dict(SCHEMAS)


DRAFT = "https://json-schema.org/draft/2020-12/schema"
MAXB = 2 ** 50  # the readers' bound on any byte count (core/profile.h: kMaxProfileBytes)


def head(fmt, title, desc):
    """The top of a schema: draft, id, title, description; every file is an object."""
    return {"$schema": DRAFT, "$id": f"urn:pipescope:schema:{fmt}:1", "title": title, "description": desc,
            "type": "object"}


def fmt_props(fmt):
    """The format header every file carries: "format" is a const naming this schema."""
    return {"format": {"const": f"pipescope.{fmt}", "description": "names this format (and this schema)"},
            "version": {"const": 1}}


def _bounded(kind, lo, hi, desc, lo_key="minimum"):
    d = {"type": kind}
    if lo is not None:
        d[lo_key] = lo
    if hi is not None:
        d["maximum"] = hi
    if desc:
        d["description"] = desc
    return d


def integer(lo=None, hi=None, desc=None):
    return _bounded("integer", lo, hi, desc)


def number(lo=None, hi=None, desc=None, exclusive_lo=False):
    return _bounded("number", lo, hi, desc, "exclusiveMinimum" if exclusive_lo else "minimum")


def string(desc=None):
    return {"type": "string", **({"description": desc} if desc else {})}


def array(items, desc=None, min_items=None, max_items=None):
    d = {"type": "array", "items": items}
    if min_items is not None:
        d["minItems"] = min_items
    if max_items is not None:
        d["maxItems"] = max_items
    if desc:
        d["description"] = desc
    return d


def pair(item, desc):
    """[a, b]: a layer range [first, end) or an edge [from, to]."""
    return {"type": "array", "prefixItems": [item, item], "minItems": 2, "maxItems": 2, "description": desc}


def obj(props, required, desc=None):
    d = {"type": "object", "properties": props, "required": required}
    if desc:
        d["description"] = desc
    return d


SCHEMAS = {}


def write(name, schema):
    SCHEMAS[name] = schema

WORKSPACE_KEYS = ("input", "forward", "forward_no_grad", "backward_input", "backward_weight", "held_for_weight")


def _gpu_section():
    """The "gpu" section of a GPU hardware file (profiles/gpus/*.json): interop/hf_profile.h and llm/gpu_model.h."""
    eff = lambda what: number(0.001, 1, what)
    gemm = obj({"sms": integer(1, 100000, "streaming multiprocessors (compute units)"),
                "tile": dict(array(integer(1, 4096), None, 2, 2), description="[m, n] output tile of the GEMM kernels"),
                "max_efficiency": eff("achieved / peak FLOP/s of a large, wave-aligned bf16 GEMM"),
                "k_half": number(0, 1e6, "optional: the inner dimension at which the k term halves the efficiency "
                                 "(efficiency x k / (k + k_half)); absent: no k term")},
               ["sms", "tile", "max_efficiency"],
               "optional (llm/gpu_model.h): the GEMM efficiency curve max_efficiency x waves(m, n) x k / (k + k_half); "
               "absent: a flat 0.45 of peak for GEMMs and of HBM bandwidth for memory-bound ops")
    g = obj({"peak_dense_tflops": {"type": "object", "additionalProperties": number(0.001, 1e7),
                                   "description": "dense TFLOP/s per dtype (fp32, tf32, bf16, fp16); llm/ reads bf16"},
             "hbm_gb_per_s": number(0.001, 1e9), "collective_gb_per_s": number(0.001, 1e9,
             "optional: what one GPU's ring collective reaches inside the node (absent: the link's bandwidth)"),
             "gemm": gemm,
             "memory_efficiency": eff("with gemm: achieved / peak HBM bandwidth of fused elementwise ops and the optimizer"),
             "collective_efficiency": eff("with gemm: NCCL bus bandwidth / link bandwidth"),
             "gemm_fp8": obj({"tensor_scaled": eff("per-tensor scaled fp8 GEMMs (TE delayed / current, torchao "
                                                   "tensorwise): achieved / peak_dense_tflops.fp8"),
                              "row_scaled": eff("per-row scaled fp8 GEMMs (torchao rowwise)"),
                              "mxfp8": eff("MX block-scaled fp8 GEMMs (Blackwell)")}, [],
                             "optional: max_efficiency of each fp8 GEMM class (the wave and k terms as bf16's); "
                             "needs peak_dense_tflops.fp8"),
             "attention": obj({"flash": obj({"forward_efficiency": eff("achieved / bf16 peak of the fused kernel's "
                                                                       "forward (the causal half's FLOPs)"),
                                             "backward_efficiency": eff("the same of its backward (2.5 x the "
                                                                        "forward's FLOPs)"),
                                             "seq_half": number(0, 1e7, "optional: the sequence at which the "
                                                                "efficiency halves (x s / (s + seq_half))")},
                                            ["forward_efficiency", "backward_efficiency"])}, ["flash"],
                              "optional: the fused attention kernel's curve; absent: gemm.max_efficiency"),
             "sources": {"type": "object", "additionalProperties": string(), "description": "where each figure comes from"}},
            ["peak_dense_tflops", "hbm_gb_per_s"], "optional: one GPU model's speed (GPU files)")
    g["dependentRequired"] = {"gemm": ["memory_efficiency", "collective_efficiency"]}
    return g


def _define_llm_time():
    """What `pipescope llm-time --json` prints (cli/cmd_llm_time.cpp)."""
    ms = number(0, 1e15)
    layer = obj({k: ms for k in ("forward_ms", "backward_input_ms", "backward_weight_ms", "recompute_ms", "forward_gemm_ms",
                                 "forward_elementwise_ms", "forward_comm_ms", "backward_comm_exposed_ms")}
                | {"parameters": integer(0, desc="on one GPU")},
                ["forward_ms", "backward_input_ms", "backward_weight_ms", "parameters"],
                "one micro-batch on one GPU; backward_input_ms includes recompute_ms and the exposed backward communication")
    layout = obj({"t": integer(1), "sequence_parallel": {"type": "boolean"}, "cp": integer(1), "ep": integer(1),
                  "d": integer(1), "p": integer(1), "v": integer(1), "micro_batch": integer(1), "microbatches": integer(1),
                  "global_batch": integer(1), "recompute": {"enum": ["none", "selective", "full"]},
                  "sharding": string(), "order": string(), "gpus": integer(1),
                  "overlap_grad_reduce": {"type": "boolean"}, "overlap_param_gather": {"type": "boolean"},
                  "overlap_p2p": {"type": "boolean"}, "attention": {"enum": ["flash", "unfused"]},
                  "fp8": {"enum": ["none", "delayed", "tensorwise", "rowwise", "mxfp8"]},
                  "tp_comm_overlap": {"type": "boolean"}, "fused_elementwise": {"type": "boolean"}},
                 ["t", "sequence_parallel", "cp", "ep", "d", "p", "v", "micro_batch", "microbatches", "global_batch",
                  "recompute", "gpus"])
    s = head("llm_time", "pipescope llm_time v1",
             "What `pipescope llm-time --json` prints: a Megatron-LM job's iteration time (docs/llm-scale.md).")
    s["properties"] = dict(fmt_props("llm_time"), gpu=string("the --gpu given"), layout=layout,
        schedule={"enum": ["gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb", "zb-v", "dualpipev"]},
        layer=layer, embedding=layer, head=layer,
        pipeline_ms=dict(ms, description="the simulated flushed pipeline, optimizer step included"),
        optimizer_ms=ms, dp_exposed_ms=ms, embedding_sync_ms=ms,
        sharding_ms=dict(ms, description="ZeRO-2 / 3 traffic per micro-batch not hidden (llm-plan counts the same)"),
        step_ms=ms, step_ns=integer(0, None, "the step in integer nanoseconds (llm/job.h's evaluate_job)"),
        bubble_fraction=number(-1, 1),
        mfu=number(0, 1, "model FLOPs (no recompute) / (step x GPUs x peak bf16)"), model_tflop_per_step=number(0))
    s["required"] = ["format", "version", "layout", "schedule", "layer", "embedding", "head", "pipeline_ms", "step_ms", "mfu"]
    write("llm_time", s)
def llm_layout():
    """A v2 plan's "layout" (llm/layout.h, llm/plan_layout.cpp): Megatron-LM's parallel layout."""
    def degree(desc):
        return integer(1, 2**20, desc)
    return {"type": "object", "description": "Megatron-LM's parallel layout of the job (docs/memory.md, At LLM "
                                             "scale); absent keys take the defaults named",
            "properties": {
                "t": degree("--tensor-model-parallel-size (default 1)"),
                "sequence_parallel": {"type": "boolean", "description": "--sequence-parallel (default false)"},
                "cp": degree("--context-parallel-size (default 1)"),
                "ep": degree("--expert-model-parallel-size (default 1)"),
                "d": degree("data-parallel size (default 1)"),
                "p": degree("--pipeline-model-parallel-size (default 1)"),
                "v": degree("model chunks per pipeline rank (default 1)"),
                "sharding": {"enum": ["none", "distributed-optimizer", "zero-1", "zero-2", "zero-3", "fsdp"],
                             "description": "what the data-parallel group shards (default none); zero-1 = "
                                            "distributed-optimizer, fsdp = zero-3"},
                "recompute": {"enum": ["none", "selective", "full"],
                              "description": "--recompute-granularity (default none)"},
                "micro_batch": degree("--micro-batch-size (default 1)"),
                "microbatches": degree("micro-batches per pipeline per step (default 1)"),
                "precision": {"enum": ["bf16-mixed", "fp32", "fp8-params"],
                              "description": "bytes per parameter: 2 + 4 + 12 (default), 4 + 4 + 8, 1 + 4 + 12"},
                "order": string("Megatron's rank order (default tp-cp-ep-dp-pp)"),
                "layers_per_chunk": array(integer(1, 2**20), "p x v entries in model order (chunk c on rank "
                                                             "c mod p, or c < p ? c : 2p-1-c for zb-v and "
                                                             "dualpipev); absent: L / (p v) each", 1),
                "schedule": {"enum": ["gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb", "zb-v",
                                      "dualpipev"],
                             "description": "the pipeline schedule (pipescope's names, llm/pipeline_schedule.h); "
                                            "absent: 1f1b, or interleaved when v > 1 (Megatron-LM's)"},
                "overlap_grad_reduce": {"type": "boolean", "description": "the gradient reduce overlaps the last "
                                        "micro-batch's backward (--overlap-grad-reduce; torch always; default false)"},
                "overlap_param_gather": {"type": "boolean", "description": "the parameter gather overlaps the next "
                                         "forward (--overlap-param-gather; FSDP2 and ZeRO-3 always; default false)"},
                "overlap_p2p": {"type": "boolean", "description": "p2p posted ahead and waited on before the op "
                                "that needs it: Megatron-LM's interleaved schedule by default "
                                "(--overlap-p2p-communication); default false: blocking p2p"},
                "attention": {"enum": ["flash", "unfused"],
                              "description": "the attention kernel (--attention-backend): flash = fused (FlashAttention, "
                                             "cuDNN, TE, SDPA; default), unfused = Korthikanti's accounting"},
                "fp8": {"enum": ["none", "delayed", "tensorwise", "rowwise", "mxfp8"],
                        "description": "the linears' fp8 recipe (--fp8-recipe; default none: bf16 GEMMs)"},
                "tp_comm_overlap": {"type": "boolean", "description": "TP collectives overlapped with their GEMMs "
                                    "(--tp-comm-overlap, torchtitan's async TP; default false)"},
                "fused_elementwise": {"type": "boolean", "description": "elementwise ops fused (TE / Megatron kernels, "
                                      "torch.compile; default true) or eager PyTorch, one kernel per op"}}}


def llm_memory():
    """What `pipescope llm-memory --json` prints (cli/cmd_llm_memory.cpp)."""
    b = number(0, desc="bytes per GPU")
    stage = obj({"rank": integer(0), "layers": integer(0), "embedding": {"type": "boolean"},
                 "head": {"type": "boolean"}, "parameters": number(0, desc="per GPU"),
                 "expert_parameters": number(0), "in_flight": number(0, desc="micro-batches of its layers at the peak"),
                 "parameter_bytes": b, "gradient_bytes": b, "optimizer_bytes": b, "activation_bytes": b,
                 "total_bytes": b},
                ["rank", "layers", "parameter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes",
                 "total_bytes"])
    s = head("llm-memory", "pipescope llm-memory v1",
             "Memory per GPU of each pipeline rank of an LLM-scale job, as Megatron-LM keeps it (docs/memory.md).")
    s["properties"] = dict(fmt_props("llm-memory"), model=string(), layout=llm_layout(), gpus=integer(1),
                           framework={"enum": ["megatron", "torch", "deepspeed"]},
                           padded_vocabulary=integer(1), layer_activation_bytes=b,
                           stages=array(stage, "one per pipeline rank", 1), peak_bytes=b,
                           notes=array(string(), "what validate_layout changed, as Megatron changes it"))
    s["required"] = ["format", "version", "layout", "stages", "peak_bytes"]
    return s


def rank_memory():
    """One pipeline rank's memory per GPU by kind (llm/job.h's rank_memory_to_json)."""
    b = number(0, desc="bytes per GPU")
    return obj({"rank": integer(0), "parameter_bytes": b, "gradient_bytes": b, "optimizer_bytes": b,
                "activation_bytes": b, "total_bytes": b},
               ["rank", "parameter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes", "total_bytes"])


def llm_job():
    """A version 3 plan's "job" (llm/job.h): the LLM-scale job beside the plan's "layout"."""
    count = lambda desc: integer(0, 2**31 - 1, desc)
    shape = obj({"name": string(), "layers": integer(1), "hidden": integer(1), "heads": integer(1),
                 "kv_heads": count("--num-query-groups (0: heads)"), "ffn_hidden": count("--ffn-hidden-size"),
                 "swiglu": {"type": "boolean"}, "bias_linear": {"type": "boolean"},
                 "vocabulary": integer(1, None, "padded as Megatron pads it for the layout's t"),
                 "sequence": integer(1), "tied_embeddings": {"type": "boolean"}, "rms_norm": {"type": "boolean"},
                 "qkv_bias": {"type": "boolean"}, "output_bias": {"type": "boolean"}, "mlp_bias": {"type": "boolean"},
                 "learned_positions": {"type": "boolean"}, "embedding_dropout": {"type": "boolean"}, "kv_channels": count("head dimension (0: hidden / heads)"),
                 "experts": count("0: dense"), "moe_topk": count(None), "moe_ffn_hidden": count(None),
                 "moe_layer_frequency": integer(1), "shared_expert_ffn_hidden": count(None)},
                ["layers", "hidden", "heads", "kv_heads", "ffn_hidden", "swiglu", "bias_linear", "vocabulary",
                 "sequence", "tied_embeddings", "rms_norm", "qkv_bias", "kv_channels", "experts", "moe_topk",
                 "moe_ffn_hidden", "moe_layer_frequency", "shared_expert_ffn_hidden"],
                "the transformer (llm/layout.h's TransformerShape): every field that changes what is counted is "
                "required (0 where a field says so is Megatron's default); name, output_bias, mlp_bias, "
                "learned_positions (absent: false) and embedding_dropout (absent: true) may be left out")
    return obj({"model": obj({"source": string("the Hugging Face config.json it came from (\"\": Megatron's model "
                                               "flags); the shape is what is evaluated"), "shape": shape,
                              "vocab_size": integer(1, None, "the vocabulary before padding (--vocab-size): padded to "
                                                             "a multiple of make_vocab_size_divisible_by x t it is the "
                                                             "shape's vocabulary; a search of the job pads it per t"),
                              "make_vocab_size_divisible_by": integer(1, None, "Megatron's flag of that name")},
                             ["shape"]),
                "cluster": obj({"gpu": string("the GPU file: a name in profiles/gpus/ (or $PIPESCOPE_GPU_DIR), or a "
                                              "path relative to the plan file"),
                                "gpus_per_node": integer(1, None, "as the GPU file said when planned (checked)"),
                                "memory_headroom_bytes": number(0, desc="bytes per GPU kept free (plan "
                                                                        "--memory-headroom), less than the GPU "
                                                                        "file's memory; absent: the framework's "
                                                                        "launch reserve")},
                               ["gpu", "gpus_per_node"]),
                "framework": {"enum": ["megatron", "torch", "deepspeed"]}},
               ["model", "cluster", "framework"],
               "the LLM-scale job (llm/job.h): with the plan's layout, all `simulate --plan` needs")


def job_prediction():
    """What `pipescope simulate --plan V3 --json` prints (cli/simulate_job.cpp)."""
    ns = integer(0, None, "nanoseconds")
    s = head("job_prediction", "pipescope job_prediction v1",
             "A version 3 plan's job evaluated (llm/job.h's evaluate_job): the step in integer nanoseconds and its "
             "parts, and each pipeline rank's memory per GPU by kind, as llm-plan printed them.")
    s["properties"] = dict(fmt_props("job_prediction"), job=llm_job(), layout=llm_layout(),
                           schedule={"enum": ["gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb", "zb-v",
                                              "dualpipev"]},
                           step_ns=ns, pipeline_ns=ns, dp_exposed_ns=ns, embedding_sync_ns=ns, sharding_ns=ns,
                           optimizer_ns=ns, step_ms=number(0), bubble_fraction=number(-1, 1), mfu=number(0, 1),
                           ranks=array(rank_memory(), "one per pipeline rank", 1), peak_bytes=number(0),
                           gates={"type": "array", "description": "one entry per gate given (--require-fit, ...)"})
    s["required"] = ["format", "version", "job", "layout", "step_ns", "ranks", "peak_bytes"]
    return s


def llm_plan():
    """What `pipescope llm-plan --json` prints (llm/llm_plan_json.cpp, llm/layout_search.h)."""
    ms = number(0, 1e15)
    count = integer(0)
    candidate = obj({"layout": llm_layout(), "step_ms": dict(ms, description="exact: the simulated step"),
                     "bound_ms": dict(ms, description="the lower bound the search ranked by"),
                     "pipeline_ms": ms, "dp_exposed_ms": ms,
                     "sharding_ms": dict(ms, description="ZeRO-2 / 3 traffic per micro-batch not hidden"),
                     "bubble_fraction": number(-1, 1), "mfu": number(0, 1), "peak_bytes": number(0),
                     "schedule": {"enum": ["gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb", "zb-v",
                                           "dualpipev"]}, "padded_vocabulary": integer(1),
                     "step_ns": integer(0, None, "exact step in nanoseconds (with ranks: files before them have neither)"),
                     "ranks": array(rank_memory(), "per pipeline rank: memory per GPU by kind (llm/job.h's evaluate_job)"),
                     "binding_rank": integer(0, None, "with ranks: the pipeline rank that binds memory first"),
                     "margin_bytes": number(None, None, "with ranks: what the binding rank leaves of capacity_bytes "
                                                        "- headroom_bytes")},
                    ["layout", "step_ms", "bound_ms", "pipeline_ms", "dp_exposed_ms", "sharding_ms", "bubble_fraction",
                     "mfu", "peak_bytes", "schedule", "padded_vocabulary"])
    s = head("llm_plan", "pipescope llm_plan v1",
             "What `pipescope llm-plan --json` prints: the fastest parallel layouts that fit, and why "
             "(docs/llm-scale.md).")
    s["properties"] = dict(fmt_props("llm_plan"), model=string(), gpu=string("the --gpu given"), gpus=integer(1),
                           global_batch=integer(1), framework={"enum": ["megatron", "torch", "deepspeed"]},
                           capacity_bytes=number(0, desc="the GPU's memory"),
                           headroom_bytes=number(0, desc="kept free of it (--memory-headroom, else the framework's "
                                                         "reserve); a layout fits under capacity - headroom. Absent in "
                                                         "files before it: 0"),
                           search=obj({k: count for k in ("factorizations", "enumerated", "valid", "fitting",
                                                          "simulated")},
                                      ["factorizations", "enumerated", "valid", "fitting", "simulated"]),
                           best=array(candidate, "exact, fastest first", 1),
                           why=array(string(), "per dimension: the chosen value and each other value's reason"),
                           runner_ups=array(string(), "why best[i + 1] lost"))
    # Every key the command writes: llm/llm_plan_json.h's reader (validate, pipescope-gui --llm-plan) requires them.
    s["required"] = ["format", "version", "model", "gpu", "gpus", "global_batch", "framework", "capacity_bytes",
                     "search", "best", "why", "runner_ups"]
    return s


def export():
    """What `pipescope export --json` prints (interop/export_*.cpp): the export's facts as one
    object, per target; a version 3 plan's export adds "predicted" and every layout "groups"."""
    b = number(None, None, "bytes per GPU")
    predicted = obj({"step_ns": integer(0, None, "nanoseconds"),
                     "framework": {"enum": ["megatron", "torch", "deepspeed"],
                                   "description": "the framework the prediction is for (the export's)"},
                     "planned_for": {"enum": ["megatron", "torch", "deepspeed"],
                                     "description": "the job's framework in the plan file: another one was re-checked "
                                                    "and re-predicted for the export's"},
                     "gpu": string("the job's GPU file"), "gpus": integer(1), "global_batch": integer(1),
                     "ranks": array(rank_memory(), "per pipeline rank: memory per GPU by kind", 1),
                     "binding_rank": integer(0, None, "the pipeline rank that binds memory first"),
                     "headroom_bytes": number(0, desc="kept free per GPU (the framework's launch reserve, or the job's)"),
                     "margin_bytes": b},
                    ["step_ns", "framework", "planned_for", "gpu", "gpus", "global_batch", "ranks", "binding_rank",
                     "headroom_bytes", "margin_bytes"],
                    "pipescope's prediction of a version 3 plan's job, as the header states it")
    group = obj({"size": integer(1), "stride": integer(1), "ranks_per_node": integer(1),
                 "crosses_nodes": {"type": "boolean"}, "first_group": array(integer(0))},
                ["size", "stride", "ranks_per_node", "crosses_nodes", "first_group"])
    groups = obj({g: group for g in ("tp", "cp", "ep", "dp", "pp")}, ["tp", "cp", "ep", "dp", "pp"],
                 "each parallel group's ranks under the layout's order, for --gpus-per-node")
    ints = array(integer(0))
    per_target = {
        "megatron": ({"flags": array(array(string(), min_items=1, max_items=2), "pretrain_gpt.py's arguments: [flag] "
                                                                                "or [flag, value]"),
                      "world_size": integer(1), "data_parallel_size": integer(1), "cut": string(),
                      "p2p": {"enum": ["overlapped", "blocking", "batched"]}, "notes": array(string()),
                      "order": string(), "gpus_per_node": integer(1)},
                     ["flags", "world_size", "data_parallel_size", "cut", "p2p", "notes"]),
        "torch": ({"schedule_class": string(), "split_points": array(string()), "stage_ranks": ints,
                   "n_microbatches": integer(1), "pipeline_size": integer(1), "data_parallel_size": integer(1),
                   "recompute": {"type": "boolean"}, "schedule_csv": string(), "tensor_parallel_size": integer(1),
                   "sequence_parallel": {"type": "boolean"}, "context_parallel_size": integer(1),
                   "mesh_dim_names": array(string()), "mesh_shape": ints, "data_parallel_sharding": string(),
                   "activation_checkpoint": string(), "expert_parallel_size": integer(1),
                   "parallel_dims": {"type": "object"}, "expert_mesh_dim_names": array(string()),
                   "expert_mesh_shape": ints},
                  ["schedule_class", "split_points", "stage_ranks", "n_microbatches", "pipeline_size",
                   "data_parallel_size", "recompute"]),
        "deepspeed": ({"parts": ints, "partition_method": {"enum": ["uniform", "pipescope"]},
                       "activation_checkpoint_interval": integer(0), "config": {"type": "object"},
                       "num_stages": integer(1), "data_parallel_size": integer(1), "zero_stage": integer(0, 3)},
                      ["parts", "partition_method", "activation_checkpoint_interval", "config", "num_stages",
                       "data_parallel_size"]),
        "torchtitan": ({"module": string(), "config": string(), "flavor": string(), "nnodes": integer(1),
                        "nproc_per_node": integer(1), "args": array(string()), "module_fqns_per_model_part": array(array(string())),
                        "stage_ranks": ints, "pipeline_parallel_degree": integer(1),
                        "pipeline_parallel_microbatch_size": integer(1), "pipeline_parallel_schedule": string(),
                        "schedule_csv": string(), "tensor_parallel_degree": integer(1),
                        "context_parallel_degree": integer(1), "data_parallel_replicate_degree": integer(1),
                        "data_parallel_shard_degree": integer(-1), "local_batch_size": integer(1),
                        "global_batch_size": integer(1), "activation_checkpoint": string()},
                       ["module", "config", "nnodes", "nproc_per_node", "args", "predicted"]),
    }
    s = head("export", "pipescope export v1",
             "What `pipescope export --json` prints: the facts of the file it writes for Megatron-LM, "
             "torch.distributed.pipelining, DeepSpeed or torchtitan (docs/interop.md).")
    s["properties"] = dict(fmt_props("export"), target={"enum": list(per_target)},
                           target_version=string("the framework's release the export was written for"),
                           predicted=predicted, groups=groups)
    s["required"] = ["format", "version", "target", "target_version"]
    s["allOf"] = [{"if": {"properties": {"target": {"const": t}}},
                   "then": {"properties": props, "required": required}}
                  for t, (props, required) in per_target.items()]
    return s


def runtime():
    """pipescope.runtime (core/runtime_costs.h): what a runtime spends around the ops."""
    kinds = {k: number(0, 3.6e9) for k in ("F", "B", "I", "W", "R")}
    op_kinds = {k: number(-3.6e9, 3.6e9) for k in ("F", "B", "I", "W", "R")}
    us = lambda desc: number(0, 3.6e9, desc)
    s = head("runtime", "pipescope runtime v1",
             "A runtime's own costs per action, message and step (core/runtime_costs.h); `pipescope calibrate` "
             "writes one, simulate/plan/run take it with --runtime. Times in microseconds.")
    s["properties"] = dict(
        fmt_props("runtime"), framework=string("what ran"), schedule_class=string("the framework's schedule class"),
        action_us=dict(obj(kinds, [], "the runtime's code between ops, before the op's input is waited for"),
                       additionalProperties=False),
        op_us=dict(obj(op_kinds, [], "added to each op once its input is there (the measured op less the profiled)"),
                   additionalProperties=False),
        loss_us=us("the loss after each forward of the last stage"),
        message=dict(obj({"send_issue_us": us(None), "send_issue_us_per_mib": us(None), "recv_issue_us": us(None),
                          "recv_issue_us_per_mib": us(None)}, [], "issuing a send or a receive, on its own end"),
                     additionalProperties=False),
        p2p={"enum": ["overlapped", "blocking", "batched"]},
        step=dict(obj({"prologue_us": us("before a device's first op"), "epilogue_us": us("after its last op"),
                       "last_stage_epilogue_us": us("more on the last stage's device"),
                       "optimizer_us": number(-3.6e9, 3.6e9, "added to each device's optimizer step"),
                       "optimizer_us_per_mib": us("the optimizer step per MiB of parameters (replaces the profile's)")},
                      []), additionalProperties=False),
        split_backward=dict(obj({"first_stage": {"enum": ["as_profiled", "weight_pass_runs_all"]}}, []),
                            additionalProperties=False),
        memory=dict(obj({"input_pass_frees": {"type": "boolean", "description": "false: I frees nothing, the stash "
                                              "lives until W"},
                         "local_hop_shares_tensor": {"type": "boolean", "description": "true: a hop between stages on "
                                                     "one device passes the tensor itself, held once"}}, []),
                    additionalProperties=False),
        sources={"type": "object", "additionalProperties": string(), "description": "where each number comes from"},
        fit={"type": "object", "description": "what pipescope calibrate reports of its fit"})
    s["required"] = ["format", "version"]
    s["additionalProperties"] = False
    return s


def calibration():
    """What `pipescope calibrate --json` prints."""
    term = obj({"name": string(), "value_us": number(), "samples": integer(0), "residual_us": number(0)},
               ["name", "value_us", "samples", "residual_us"])
    rt = runtime()
    for k in ["$schema", "$id", "title"]:
        rt.pop(k)
    s = head("calibration", "pipescope calibration v1", "What `pipescope calibrate --json` prints: the fitted terms, "
             "their residuals and the measured plan predicted with and without them.")
    s["properties"] = dict(fmt_props("calibration"), trace=string(), runtime_file=string(), terms=array(term),
                           step_ms=array(number(0)), step_cv=number(0), measured_step_ms=number(0),
                           predicted_step_ms=obj({"ops_alone": number(0), "calibrated": number(0)},
                                                 ["ops_alone", "calibrated"]),
                           runtime=rt, notes=array(string()))
    s["required"] = ["format", "version", "trace", "runtime_file", "terms", "step_ms", "step_cv", "measured_step_ms",
                     "predicted_step_ms", "runtime", "notes"]
    return s


def _define():
    NOTE = (" Keys not named here are allowed and ignored by pipescope's readers. The readers check more "
            "than a schema can say (strictly increasing batch_sizes, contiguous stages, ...): a file this "
            "schema rejects is rejected by `pipescope validate`, not always the other way round.")

    # ---- profile
    per_batch_ms = array(number(0, 1e9), "one value per batch_sizes entry, milliseconds")
    per_batch_b = array(number(0, MAXB), "one value per batch_sizes entry, bytes")
    layer = obj({"name": string(),
                 "forward_ms": per_batch_ms, "backward_ms": per_batch_ms,
                 "activation_bytes": dict(per_batch_b, description="kept for backward per micro-batch, bytes, one per batch size"),
                 "output_bytes": dict(per_batch_b, description="handed to the next layer, bytes, one per batch size"),
                 "weight_grad_bytes": dict(per_batch_b, description="optional: the part of activation_bytes the "
                                           "weight gradient W still needs after the input gradient I (I frees the "
                                           "rest under split backward), bytes, one per batch size, at most "
                                           "activation_bytes; absent: I frees nothing"),
                 "shared_with_next_bytes": dict(per_batch_b, description="optional (a chain's layers but the last): "
                                                "of activation_bytes, the tensor this layer saves of its output that "
                                                "the next layer saves again as its input; a stage holding both counts "
                                                "it once. At most activation_bytes"),
                 "held_for_weight_bytes": dict(per_batch_b, description="optional (pipescope_torch): the gradients "
                                               "torch's input pass keeps for the weight pass; informational, the "
                                               "simulator does not read it"),
                 "parameter_bytes": integer(0, MAXB),
                 "optimizer_ms": dict(number(0, 1e9), description="optional: one optimizer step (Adam) over the "
                                      "layer's parameters, ms (measured by profile --model and pipescope_torch, "
                                      "analytic in profile synth); present on every layer, predictions end the "
                                      "step with it"),
                 "backward_input_ms": per_batch_ms, "backward_weight_ms": per_batch_ms,
                 "workspace_bytes": obj({k: per_batch_b for k in WORKSPACE_KEYS}, list(WORKSPACE_KEYS),
                                        "optional: bytes each op holds above its start besides weights and stash "
                                        "(docs/memory.md)"),
                 "fb_overlap_ms": dict(per_batch_ms, description="optional (dualpipev): how much shorter an overlapped "
                                       "forward-and-backward pair runs when this layer's forward is its F, ms, one per "
                                       "batch size, at most min(forward_ms, backward_ms); absent: pairs run back to back"),
                 "spec": {"type": "object", "description": "a layer the executor can build (see pipescope.model)"}},
                ["name", "forward_ms", "backward_ms", "activation_bytes", "output_bytes", "parameter_bytes"])
    layer["dependentRequired"] = {"backward_input_ms": ["backward_weight_ms"], "backward_weight_ms": ["backward_input_ms"]}
    s = head("profile", "pipescope profile v1",
             "Per-layer forward/backward time and memory of a model at several micro-batch sizes." + NOTE)
    s["properties"] = dict(fmt_props("profile"),
        model=string("model name"),
        device=obj({"name": string(), "memory_bytes": integer(1)}, [],
                   "optional; default {\"name\": \"unspecified\"} with unknown memory (the hardware file sets the limit)"),
        backend=string("optional, default \"unspecified\" (\"analytic\", \"cpu\", \"cuda\", ...)"),
        dtype=string("optional, default \"fp32\""),
        batch_sizes=array(number(0, 1e9, exclusive_lo=True), "micro-batch sizes measured, strictly increasing", 1),
        layers=array(layer, None, 1, 1000000),
        edges=array(pair(integer(0), "[from, to] layer indices, from < to"),
                    "optional: a non-sequential model (layers in topological order)"),
        notes=array(string(), "optional: what the writer did not measure (read by people, not by pipescope)"))
    s["required"] = ["format", "version", "model", "batch_sizes", "layers"]
    write("profile", s)

    # ---- hardware
    link = obj({"bandwidth_gb_per_s": number(1e-6, 1e9), "latency_us": number(0, 1e9)}, ["bandwidth_gb_per_s", "latency_us"])
    s = head("hardware", "pipescope hardware v1", "Devices, their memory and the links between them." + NOTE)
    s["properties"] = dict(fmt_props("hardware"), name=string(), devices=integer(1, 2**20),
        memory_bytes=integer(1, MAXB, "per device"), link=dict(link, description="joins devices of one node"),
        nodes=obj({"devices_per_node": integer(1), "link": link}, ["devices_per_node", "link"], "optional: links between nodes"),
        speed=array(number(1e-6), "optional: one compute speed factor per device (2.0 = twice as fast)"),
        p2p={"enum": ["overlapped", "blocking", "batched"],
             "description": "optional: how the runtime's point-to-point transfers meet compute (blocking: Megatron-LM's "
                            "batched isend/irecv waited on; absent: a plan's p2p, else overlapped)"},
        host_link=obj({"to_host": dict(link, description="device -> host (an offload)"),
                       "to_device": dict(link, description="host -> device (a reload)"),
                       "memory_bytes": integer(1, MAXB, "optional: host memory for each device's offloaded "
                                                        "activations (simulate and run exit 2 over it)"),
                       "node_memory_bytes": integer(1, MAXB, "optional: host memory of a node, shared by its "
                                                             "devices' offloaded activations")},
                      ["to_host", "to_device"],
                      "optional: each device's own link to host memory, one per direction (activation offload: "
                      "PCIe, NVLink-C2C)"),
        gpu=_gpu_section())
    s["required"] = ["format", "version", "name", "devices", "memory_bytes", "link"]
    write("hardware", s)
    _define_llm_time()

    # ---- model
    spec = obj({"type": string("linear {in, out}, gelu {features}, layernorm {features}, mlp_block {hidden, ffn}, "
                               "attention_block {hidden, heads}; each with an optional sequence (rows per sample, "
                               "default 1). The layer's own fields are checked when the executor builds it.")}, ["type"])
    s = head("model", "pipescope model v1", "Layers the executor can build and `pipescope profile --model` measures." + NOTE)
    s["properties"] = dict(fmt_props("model"), name=string(),
        layers=array(obj({"name": string(), "spec": spec}, ["name", "spec"]), None, 1))
    s["required"] = ["format", "version", "name", "layers"]
    write("model", s)

    # ---- plan
    plan_props = dict(fmt_props("plan"),
        profile=string("profile path, relative to the plan file"),
        batch_size=integer(1, 2**40), microbatches=integer(1, 2**30, "must divide batch_size"),
        schedule=obj({"kind": string("gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, dualpipev, zb-auto, looped-bfs, "
                                          "interleaved-zb, v-min, v-half, v-zb, pipedream, 2bw"), "chunks": integer(1, 64),
                      "max_inflight": integer(1, 2**20, "zb-auto: micro-batches alive per position"),
                      "activation_budget_bytes": integer(1, 2**62, "zb-auto: stash bytes each position may hold at "
                                                         "once (absent: what the device memory leaves)")}, ["kind"]),
        recompute={"type": "boolean"},
        optimizer_step={"enum": ["synchronized", "post-validation"],
                        "description": "optional, default synchronized: where a flushed step ends (post-validation: "
                                       "each position steps after its own last W or B and runs on)"},
        p2p={"enum": ["overlapped", "blocking", "batched"],
             "description": "optional: how point-to-point transfers meet compute (absent: the hardware file's, else "
                            "overlapped); --p2p overrides it"},
        runtime={"type": "string", "minLength": 1,
                 "description": "optional: the runtime costs the plan was made with, a pipescope.runtime file "
                                "relative to the plan file or a bundled name (absent: the ops alone); --runtime "
                                "overrides it"},
        offload=obj({"policy": {"enum": ["none", "all", "selective"]},
                     "fraction": {"oneOf": [number(0, 1), array(number(0, 1), None, 1)],
                                  "description": "optional, default 1: the share of each stash offloaded, one value "
                                                 "or one per stage"}}, ["policy"],
                    "optional: activation offload to host memory (needs the hardware's host_link); --offload "
                    "overrides it"),
        optimizer=obj({"state_bytes_per_parameter_byte": number(0, 64)}, ["state_bytes_per_parameter_byte"]),
        stages=array(obj({"layers": pair(integer(0, 2**30), "[first, end) layer range"),
                          "devices": array(integer(0), "hardware device ids (0..devices-1 of the hardware file), one per replica; more than one: replicated. Not pipeline positions: a stage's position is its index in stages (mod K)", 1)},
                         ["layers", "devices"]), None, 1))
    s = head("plan", "pipescope plan v1 / v2 / v3", "A pipeline plan: stages, micro-batches, schedule, "
             "re-materialisation; version 2 adds an optional \"layout\" (the LLM-scale parallel layout, read by "
             "llm/plan_layout.h); version 3 an optional \"job\" (model, cluster, framework: with the layout the whole "
             "job, read by llm/job.h; `simulate --plan` evaluates it alone)." + NOTE)
    s["properties"] = plan_props
    s["required"] = ["format", "version", "profile", "batch_size", "microbatches", "schedule", "stages"]
    plan_schema = copy.deepcopy(s)
    v2 = copy.deepcopy(s)
    v2["properties"]["version"] = {"enum": [1, 2, 3], "description": "2 when the plan carries a layout, 3 when "
                                                                      "it carries a job too"}
    v2["properties"]["layout"] = llm_layout()
    v2["properties"]["job"] = llm_job()
    v2["dependentSchemas"] = {"layout": {"properties": {"version": {"enum": [2, 3]}}},
                              "job": {"properties": {"version": {"const": 3}}, "required": ["layout"]}}
    write("plan", v2)

    # ---- schedule
    op = obj({"kind": {"enum": ["F", "B", "I", "W", "R"],
                       "description": "forward, whole backward, input gradient, weight gradient, recompute"},
              "stage": integer(0), "microbatch": integer(0)}, ["kind", "stage", "microbatch"])
    s = head("schedule", "pipescope schedule v1 and v2",
             "A pipeline schedule as data: the stage -> position map and every pipeline position's ordered "
             "op list. Version 2 (what pipescope writes) names them positions, stage_position and "
             "position_ops; version 1 (still read) called the same keys devices, stage_device and device_ops "
             "(a position is not a hardware device: docs/architecture.md, Glossary)." + NOTE)
    s["properties"] = dict(fmt_props("schedule"), name=string(), microbatches=integer(1),
        recompute={"type": "boolean"},
        weight_update={"enum": ["flush", "stash", "double-buffer"],
                       "description": "flush (default): synchronous; stash: PipeDream's weight stashing; "
                                      "double-buffer: PipeDream-2BW (docs/pipedream.md)"},
        steps=integer(1, desc="training steps the op lists hold without a flush (asynchronous only; default 1)"))
    s["properties"]["version"] = {"enum": [1, 2], "description": "2: the keys below say positions; 1: they said devices"}
    s["required"] = ["format", "version", "microbatches"]
    v2 = {"positions": integer(1, desc="K, the pipeline depth"),
          "stage_position": array(integer(0), "stage s runs on position stage_position[s]", 1),
          "position_ops": array(array(op), "one ordered op list per pipeline position", 1)}
    v1 = {"devices": integer(1, desc="version 1's name for positions"),
          "stage_device": array(integer(0), "version 1's name for stage_position", 1),
          "device_ops": array(array(op), "version 1's name for position_ops", 1)}
    s["if"] = {"properties": {"version": {"const": 1}}}
    s["then"] = {"properties": v1, "required": list(v1)}
    renamed = {"devices": "positions", "stage_device": "stage_position", "device_ops": "position_ops"}
    s["else"] = {"properties": dict(v2, **{k: {"not": {}, "description": f"version 1's key; version 2 calls it {n}"}
                                             for k, n in renamed.items()}), "required": list(v2)}
    write("schedule", s)

    # ---- gates (shared by outputs)
    gates = array(obj({"gate": string("the flag, e.g. --max-bubble"), "limit": number(),
                       "value": {"type": ["number", "null"], "description": "null: infinite (a relative error against 0)"},
                       "passed": {"type": "boolean"}, "message": string()},
                      ["gate", "limit", "value", "passed", "message"]),
                  "present when gates were given: one entry per gate")

    # ---- comparison
    comparison = head("comparison", "pipescope comparison v1", "Predicted vs measured, value by value (written by compare and run --compare).")
    comparison["properties"] = dict(fmt_props("comparison"),
        values=array(obj({"name": string(), "predicted": number(), "measured": number(),
                          "relative_error": {"type": ["number", "null"], "description": "(measured - predicted) / predicted; null when predicted is 0"}},
                         ["name", "predicted", "measured", "relative_error"])),
        warnings=array(string()), gates=gates)
    comparison["required"] = ["format", "version", "values", "warnings"]
    write("comparison", comparison)

    # ---- prediction / measurement
    def step_report(kind, desc):
        stage = obj({"index": integer(0, 4096), "layers": {"description": "[first, end) over all chunks"},
                     "chunk_layers": array(pair(integer(0, 2**30), "[first, end)"), "one range per model chunk (interleaved)"),
                     "hardware_devices": array(integer(0)), "busy_ms": number(0, 1e12), "bubble_fraction": number(-1, 1),
                     "static_bytes": integer(0), "peak_activation_bytes": integer(0), "peak_memory_bytes": integer(0),
                     "weight_versions": integer(1, desc="asynchronous schedules: most weight versions held at once"),
                     "weight_version_bytes": integer(0, desc="asynchronous schedules: the extra versions' bytes"),
                     "offloaded_bytes": integer(0, desc="offload: stash bytes sent to the host over the step"),
                     "host_peak_bytes": integer(0, desc="offload: the most held on the host at once"),
                     "offload_delay_ms": number(0, 1e12, "offload: how long late reloads held up the ops that needed them"),
                     "fits": {"type": "boolean"}},
                    ["index", "busy_ms", "bubble_fraction", "peak_activation_bytes", "peak_memory_bytes"])
        # The reader takes chunk_layers when present, else layers.
        stage["if"] = {"required": ["chunk_layers"]}
        stage["else"] = {"properties": {"layers": pair(integer(0, 2**30), "[first, end)")}, "required": ["layers"]}
        s = head(kind, f"pipescope {kind} v1", desc + NOTE)
        s["properties"] = dict(fmt_props(kind), model=string(), schedule=string(), devices=integer(1, 4096),
            chunks=integer(1, 64), microbatches=integer(1, 2**30), microbatch_size=number(0), batch_size=integer(1),
            recompute={"type": "boolean"}, memory_limit_bytes=integer(0, desc="0: unbounded"),
            step_time_ms=number(0, 1e12), throughput_samples_per_s=number(0), bubble_fraction=number(-1, 1),
            simulated_ops=integer(0),
            weight_update=string("asynchronous schedules: stash (pipedream) or double-buffer (2bw); absent: flush"),
            offload={"enum": ["all", "selective"], "description": "activation offload policy; absent: none"},
            host_memory_limit_bytes=integer(1, desc="offload: the hardware's host memory per device; absent: unbounded"),
            host_node_memory_limit_bytes=integer(1, desc="offload: the hardware's host memory per node; absent: unbounded"),
            optimizer_step={"enum": ["post-validation"],
                            "description": "a flushed schedule simulated with post-validation; absent: synchronized"},
            steps=integer(2, desc="several steps (simulate --steps N, or an asynchronous run): the keys below come with it"),
            total_time_ms=number(0, 1e12), step_end_ms=array(number(0, 1e12)),
            steady_state_step_time_ms=number(0, 1e12), steady_state_throughput_samples_per_s=number(0),
            startup_ms=number(-1e12, 1e12),
            peak_memory_bytes={"description": "largest over stages (integer bytes; written, derived again when read)"},
            fits={"description": "whether every stage fits (boolean; written, derived again when read)"},
            stages=array(stage), notes=array(string()), gates=gates)
        s["required"] = ["format", "version", "schedule", "devices", "microbatches", "microbatch_size", "batch_size",
                         "step_time_ms", "throughput_samples_per_s", "bubble_fraction", "stages"]
        return s
    write("prediction", step_report("prediction", "One training step of a plan as the simulator predicts it (simulate -o / --json)."))
    m = step_report("measurement", "One training step of a plan as the executor measured it (run -o / --json).")
    cmp_inner = copy.deepcopy(comparison)
    for k in ["$schema", "$id", "title"]: cmp_inner.pop(k)
    cmp_inner["description"] = "run --compare: the prediction of the same plan against this measurement"
    m["properties"]["comparison"] = cmp_inner
    m["properties"]["gradient_check"] = obj({"max_relative_error": number(), "limit": number(),
        "replicas_identical": {"type": "boolean"}, "passed": {"type": "boolean"}},
        ["max_relative_error", "limit", "replicas_identical", "passed"], "run --check-gradients")
    write("measurement", m)

    # ---- candidates (sweep, plan --json)
    candidate = obj({"index": integer(0), "label": string(), "stages": integer(1), "replicas": integer(1),
        "microbatches": integer(1), "microbatch_size": number(0), "schedule": string(), "chunks": integer(1),
        "recompute": {"type": "boolean"}, "step_ms": number(0), "throughput_samples_per_s": number(0),
        "bubble_fraction": number(-1, 1), "slowest_stage_ms": number(0), "peak_memory_bytes": integer(0),
        "fits": {"type": "boolean"}, "pareto": {"type": "boolean"}, "rank": integer(0, desc="1 = winner; 0 = does not fit"),
        "offload": {"enum": ["selective", "all"], "description": "the activation offload the search took because the "
                    "candidate did not fit without it (absent: none, or the request's --offload)"},
        "positions": array(obj({"layers": array(pair(integer(0), "[first, end)")), "devices": array(integer(0)),
                                "peak_memory_bytes": integer(0),
                                "host_peak_bytes": integer(0, desc="activation offload: the most held on the host "
                                                                   "at once (over host_link.memory_bytes: not fitting)")},
                               ["layers", "devices", "peak_memory_bytes"]))},
        ["index", "label", "stages", "replicas", "microbatches", "microbatch_size", "schedule", "chunks", "recompute",
         "step_ms", "throughput_samples_per_s", "bubble_fraction", "peak_memory_bytes", "fits", "pareto", "rank", "positions"])
    s = head("sweep", "pipescope sweep v1", "Every candidate plan of `pipescope sweep` (PREFIX.json), Pareto front marked.")
    s["properties"] = dict(fmt_props("sweep"), model=string(), profile=string(), hardware=string(), devices=integer(1),
        batch_size=integer(1), schedules=array(string()), partition=string(), memory_limit_bytes=integer(0),
        fitting=integer(0), candidates=array(candidate))
    s["required"] = ["format", "version", "model", "devices", "batch_size", "memory_limit_bytes", "fitting", "candidates"]
    write("sweep", s)

    plan_inner = copy.deepcopy(plan_schema)
    for k in ["$schema", "$id", "title"]: plan_inner.pop(k)
    plan_inner["description"] = "the winner as a plan file"
    s = head("plan_search", "pipescope plan_search v1", "What `pipescope plan --json` prints: the best plans and why.")
    s["properties"] = dict(fmt_props("plan_search"), candidates=integer(0, desc="candidates simulated"),
        fitting=integer(0), memory_limit_bytes=integer(0), top=array(candidate), why=array(string()),
        plan=plan_inner, gates=gates)
    s["required"] = ["format", "version", "candidates", "fitting", "memory_limit_bytes", "top", "why", "plan"]
    write("plan_search", s)
    write("llm-memory", llm_memory())
    write("llm_plan", llm_plan())
    write("job_prediction", job_prediction())
    write("export", export())
    write("runtime", runtime())
    write("calibration", calibration())


if __name__ == "__main__":
    for name, schema in build().items():
        with open(os.path.join(HERE, f"{name}.schema.json"), "w", encoding="utf-8") as f:
            f.write(text(schema))
    sys.stdout.write(f"wrote {len(SCHEMAS)} schemas to {HERE}\n")
