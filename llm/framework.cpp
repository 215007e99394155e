// The table of llm/framework.h. Each entry names the code or documentation it restates;
// an entry changes only when that framework's code does.
#include "llm/framework.h"

#include <algorithm>

#include "llm/collectives.h"

namespace pipescope {

namespace {

using K = ScheduleKind;
using S = Sharding;
using R = Recompute;
using F = Fp8Recipe;
using P = PrecisionRecipe;

// What every CUDA launch keeps beside the model: the CUDA context with cuBLAS / cuDNN handles
// and workspaces, 0.5 GB (PyTorch issue #34323 measured 781 MB before any tensor, before
// CUDA 11.7's lazy module loading shrank it); NCCL's buffers, 1.5 GB (NCCL_BUFFSIZE, 4 MiB
// by default, per channel, per peer and direction, up to 32 channels on NVLink, over the
// tensor-, context-, data- and pipeline-parallel communicators a rank joins); the caching
// allocator's fragmentation, 5 % of the GPU (an assumption, not a measured constant:
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which Megatron-LM's and torchtitan's
// examples set, keeps it low). At 80 GB: 6.0 GB, 74.0 GB usable.
constexpr MemoryReserve kLaunchReserve{0.5e9, 1.5e9, 0, 0.05};
// DeepSpeed's too, and its gradient-reduction bucket beside the model: reduce_bucket_size,
// 5e8 elements by default (deepspeed/runtime/zero/config.py), in bf16 = 1.0 GB.
constexpr MemoryReserve kDeepSpeedReserve{0.5e9, 1.5e9, 1.0e9, 0.05};

std::vector<FrameworkOffer> make_table() {
  std::vector<FrameworkOffer> out;
  // Megatron-LM (megatron/core/pipeline_parallel/schedules.py get_forward_backward_func:
  // forward_backward_pipelining_without_interleaving = 1F1B, ..._with_interleaving when
  // --num-layers-per-virtual-pipeline-stage is set); --tensor-model-parallel-size with or
  // without --sequence-parallel, --context-parallel-size (Transformer Engine's p2p ring),
  // --expert-model-parallel-size; --use-distributed-optimizer (ZeRO-1,
  // megatron/core/optimizer/distrib_optimizer.py; ZeRO-2 / 3 only through Megatron-FSDP,
  // not searched); --recompute-granularity full | selective.
  out.push_back({Framework::Megatron, "Megatron-LM", true, {true, false}, true, true,
                 {K::OneFOneB, K::Interleaved}, {K::OneFOneB, K::Interleaved},
                 {S::None, S::DistributedOptimizer}, {S::None, S::DistributedOptimizer},
                 {R::None, R::Selective, R::Full},
                 // --fp8-recipe delayed | tensorwise | mxfp8 (megatron/core/fp8_utils.py, with Transformer Engine)
                 {F::None, F::Delayed, F::Tensorwise, F::Mxfp8},
                 true,  // --tp-comm-overlap (Transformer Engine userbuffers; arguments.py: needs SP)
                 "megatron/core/pipeline_parallel/schedules.py, megatron/training/arguments.py",
                 kLaunchReserve,  // its DDP gradient buffers are llm/memory.h's gradients
                 // --bf16, fp32, --fp8-format hybrid --fp8-param-gather (Transformer Engine)
                 {P::Bf16Mixed, P::Fp32, P::Fp8Params}});
  // torch / torchtitan: torch.distributed.pipelining.schedules (ScheduleGPipe,
  // Schedule1F1B, ScheduleInterleaved1F1B, ScheduleLoopedBFS, ScheduleInterleavedZeroBubble,
  // ScheduleZBVZeroBubble, ScheduleDualPipeV); TP through parallelize_module, whose norms
  // torchtitan always shards with SequenceParallel (so SP is on whenever t > 1); context
  // parallel (torch.distributed.tensor.experimental.context_parallel, ring attention);
  // expert parallel for its MoE models (torchtitan/distributed/parallel_dims.py; t = 1 only,
  // runtime_refusal); FSDP2 fully_shard = ZeRO-3 (reshard_after_forward = False keeps the
  // parameters gathered: ZeRO-2), DDP (dp_replicate) = none; activation checkpointing none
  // or full (torchtitan/distributed/activation_checkpoint.py FullAC: checkpoint_wrapper on
  // every transformer block) or selective: torchtitan's per-op SelectiveAC (it saves the
  // outputs of SDPA, of every other mm and of the collectives, and recomputes the rest), not
  // Megatron's; llm/layout.h's SelectivePolicy::EveryOtherMatmul, which validate_job sets
  // for torch and llm/ times and counts.
  out.push_back({Framework::Torch, "torch (torchtitan)", true, {true}, true, true,
                 {K::GPipe, K::OneFOneB, K::Interleaved, K::LoopedBFS, K::InterleavedZeroBubble, K::ZeroBubbleV,
                  K::DualPipeV},
                 {K::GPipe, K::OneFOneB, K::Interleaved, K::LoopedBFS, K::InterleavedZeroBubble, K::ZeroBubbleV,
                  K::DualPipeV},
                 {S::None, S::Zero2, S::Zero3}, {S::None, S::Zero2, S::Zero3},
                 {R::None, R::Selective, R::Full},
                 // torchao's Float8 recipes through torchtitan's float8 converter (--float8.recipe_name
                 // tensorwise | rowwise) and its MX converter (mxfp8, Blackwell); Transformer Engine's
                 // delayed scaling in a PyTorch loop (te.fp8_autocast: Composer / llm-foundry's amp_fp8)
                 {F::None, F::Delayed, F::Tensorwise, F::Rowwise, F::Mxfp8},
                 true,  // async TP (torchtitan --parallelism.enable_async_tensor_parallel, with compile)
                 "torch/distributed/pipelining/schedules.py, torchtitan/models/llama3/infra/parallelize.py, "
                 "torchtitan/distributed/activation_checkpoint.py, torchtitan/distributed/parallel_dims.py",
                 kLaunchReserve,
                 // MixedPrecisionPolicy(bf16) or fp32; fp8 weights are torchao's float8 training, a
                 // converter in torchtitan's model config that pipescope neither times nor exports
                 {P::Bf16Mixed, P::Fp32}});
  // DeepSpeed: deepspeed/runtime/pipe/schedule.py TrainSchedule (1F1B-style, one chunk
  // per stage: no interleaving); deepspeed/runtime/pipe/engine.py refuses ZeRO-2 / 3 with
  // a pipeline; ZeRO stages 1..3 without one (deepspeed/runtime/zero); tensor parallel as
  // Megatron-DeepSpeed's (its Megatron mpu) without Megatron's SP, no ring context
  // parallelism (DeepSpeed-Ulysses is an all-to-all scheme pipescope does not time);
  // expert parallel through AutoEP (ds_config "expert_parallel": autoep_size; deepspeed/
  // module_inject/auto_ep*.py; t = 1 only, runtime_refusal), with every ZeRO stage;
  // activation checkpointing of whole layers (deepspeed.checkpointing) = full recompute.
  out.push_back({Framework::DeepSpeed, "DeepSpeed", true, {false}, false, true,
                 {K::OneFOneB}, {K::OneFOneB},
                 {S::None, S::DistributedOptimizer, S::Zero2, S::Zero3}, {S::None, S::DistributedOptimizer},
                 {R::None, R::Full},
                 {F::None},  // ds_config has no fp8 (bf16, fp16, fp32); fp8 comes only from TE layers in the model
                 false,      // no TP / GEMM overlap in DeepSpeed's tensor parallelism
                 "deepspeed/runtime/pipe/schedule.py, deepspeed/runtime/pipe/engine.py, deepspeed/runtime/zero",
                 kDeepSpeedReserve,
                 {P::Bf16Mixed, P::Fp32}});  // ds_config's bf16 or fp32 (fp8 weights are Transformer Engine's layers)
  return out;
}

}  // namespace

bool FrameworkOffer::runs(ScheduleKind kind) const {
  return std::find(schedules.begin(), schedules.end(), kind) != schedules.end();
}

std::string activation_offload_refusal(Framework framework) {
  switch (framework) {
    case Framework::Megatron:
      return "Megatron-LM's --cpu-offloading moves whole layers' activations (--cpu-offloading-num-layers) on "
             "Transformer Engine's schedule, not a fraction of each stash between its forward and backward";
    case Framework::Torch:
      return "torch.distributed.pipelining has no activation offload (torch.autograd.graph.save_on_cpu moves every "
             "saved tensor, not a fraction of each stash)";
    case Framework::DeepSpeed:
      return "DeepSpeed offloads only activation checkpoints (activation_checkpointing.cpu_checkpointing, under full "
             "recompute), not a fraction of each stash";
  }
  return "";
}

std::string schedule_offer_refusal(const FrameworkOffer& offer, ScheduleKind kind) {
  auto names = [](const std::vector<ScheduleKind>& kinds) {
    std::string out;
    for (ScheduleKind k : kinds) out += (out.empty() ? "" : ", ") + to_string(k);
    return out;
  };
  if (!offer.runs(kind)) {
    return "--schedule: " + to_string(kind) + " is not a schedule " + offer.name + " runs (it runs " +
           names(offer.schedules) + ")";
  }
  if (std::find(offer.llm_schedules.begin(), offer.llm_schedules.end(), kind) == offer.llm_schedules.end()) {
    return "--schedule: llm/ times " + names(offer.llm_schedules) + " for " + offer.name + ", not " + to_string(kind);
  }
  return "";
}

// Expert parallelism as torch (torchtitan) and DeepSpeed (AutoEP) run it: each rank keeps
// ep-th of the experts whole (no expert tensor parallelism), while llm/ splits them t ways
// as Megatron's --expert-tensor-parallel-size default (etp = t) does; so both are offered
// with t = 1 only.
//   torchtitan/distributed/parallel_dims.py ParallelDims._validate: "expert_parallel_degree
//   must divide dp_shard * cp * tp"; build_mesh's sparse mesh (pp, dp_replicate, efsdp, ep)
//   spans tp. dp_shard is d under FSDP2 (zero-2 / zero-3), 1 under DDP (none).
//   deepspeed/runtime/engine.py _configure_expert_parallel: "AutoEP does not currently
//   support tensor model parallelism from mpu"; auto_ep_folding.py validate_folding_global:
//   expert_tensor_parallel_size must be 1.
std::string expert_parallel_refusal(const FrameworkOffer& offer, const ParallelLayout& l) {
  if (l.ep == 1 || offer.framework == Framework::Megatron) return "";
  const std::string ep = "ep = " + std::to_string(l.ep);
  if (l.t > 1) {
    return ep + " with t = " + std::to_string(l.t) + ": " + offer.name +
           " keeps each expert whole on its rank (" +
           (offer.framework == Framework::Torch ? "torchtitan's expert mesh spans tp"
                                                : "AutoEP refuses tensor parallelism from mpu") +
           "), llm/ splits experts t ways as Megatron does; plan with t = 1";
  }
  if (offer.framework == Framework::Torch) {
    const bool fsdp = l.sharding == Sharding::Zero2 || l.sharding == Sharding::Zero3;
    const int dp_shard = fsdp ? l.d : 1;
    if ((static_cast<int64_t>(dp_shard) * l.cp) % l.ep != 0) {
      return ep + " does not divide torchtitan's dp_shard * cp * tp = " + std::to_string(dp_shard) + " * " +
             std::to_string(l.cp) + " * 1" +
             (fsdp ? "" : " (sharding none is DDP: dp_shard = 1, the experts spread over the cp ranks only)");
    }
  }
  return "";
}

// torch/distributed/pipelining/schedules.py Schedule1F1B.__init__: "Number of microbatches
// (M) must be greater than or equal to the number of stages (p)."
std::string runtime_refusal(const FrameworkOffer& offer, const ParallelLayout& l) {
  if (offer.framework == Framework::Torch && l.p > 1 && layout_schedule(l) == ScheduleKind::OneFOneB &&
      l.microbatches < l.p) {
    return "--global-batch-size: torch's Schedule1F1B needs at least p = " + std::to_string(l.p) +
           " micro-batches per pipeline (one per stage), got " + std::to_string(l.microbatches);
  }
  if (offer.framework == Framework::Torch && l.cp > 1 && l.sharding == Sharding::None) {
    // torchtitan/distributed/parallel_dims.py: with cp > 1 its fsdp mesh is dp_shard x cp and
    // fully_shard always applies (the cp ranks hold the same weights), so nothing is replicated
    return "--sharding: none with --context-parallel-size " + std::to_string(l.cp) +
           ": torchtitan shards the weights over the context-parallel ranks (FSDP2 on its dp_shard x cp mesh), so "
           "cp > 1 runs as zero-2 or zero-3";
  }
  if (l.tp_comm_overlap && !offer.tp_comm_overlap) {
    return "--tp-comm-overlap: " + offer.name + " does not overlap tensor-parallel collectives with its GEMMs";
  }
  if (offer.framework == Framework::Torch && l.tp_comm_overlap && !l.fused_elementwise) {
    // torchtitan/config/configs.py CompileConfig: "Async TP requires 'model' in --compile.components and --compile.enable"
    return "--tp-comm-overlap: torchtitan's async TP needs torch.compile (--compile.enable); drop --eager";
  }
  if (std::find(offer.fp8_recipes.begin(), offer.fp8_recipes.end(), l.fp8) == offer.fp8_recipes.end()) {
    std::string runs;
    for (Fp8Recipe r : offer.fp8_recipes) runs += (runs.empty() ? "" : ", ") + to_string(r);
    return "--fp8-recipe: " + offer.name + " does not train with fp8 " + to_string(l.fp8) + " (it runs " + runs + ")";
  }
  const std::string experts = expert_parallel_refusal(offer, l);
  return experts.empty() ? "" : "--expert-model-parallel-size: " + experts;
}

std::string tp_overlap_refusal(const ParallelLayout& l, int gpus_per_node) {
  if (!l.tp_comm_overlap || gpus_per_node < 1) return "";
  if (!group_placement(l, Group::Tp, gpus_per_node).crosses_nodes) return "";
  return "--tp-comm-overlap: the tensor-parallel group of t = " + std::to_string(l.t) + " spans nodes of " +
         std::to_string(gpus_per_node) + " GPUs; Transformer Engine's userbuffers and torch's async TP overlap over "
         "NVLink, inside one node";
}

void set_framework_overlap(Framework framework, bool grad_reduce, bool param_gather, ParallelLayout& layout,
                           bool p2p) {
  const Sharding s = layout.sharding;
  layout.overlap_p2p = framework == Framework::Megatron && p2p && layout.p > 1 && layout.v > 1 &&
                       layout_schedule(layout) == ScheduleKind::Interleaved;
  switch (framework) {
    case Framework::Megatron:
      layout.overlap_grad_reduce = grad_reduce;
      layout.overlap_param_gather = param_gather && s == Sharding::DistributedOptimizer;
      return;
    case Framework::Torch:
      layout.overlap_grad_reduce = true;
      layout.overlap_param_gather = s == Sharding::Zero2 || s == Sharding::Zero3;
      return;
    case Framework::DeepSpeed:
      layout.overlap_grad_reduce = grad_reduce || s == Sharding::Zero3;
      layout.overlap_param_gather = s == Sharding::Zero3;
      return;
  }
}

std::string param_gather_refusal(Framework framework, Sharding sharding) {
  if (sharding == Sharding::None) {
    return framework == Framework::Megatron
               ? "Megatron-LM asserts --use-distributed-optimizer for it (without a sharded "
                 "optimizer there is no parameter all-gather to overlap)"
               : "sharding none has no parameter all-gather to overlap";
  }
  if (framework == Framework::DeepSpeed && sharding != Sharding::Zero3) {
    return "DeepSpeed's ZeRO stage " + std::string(sharding == Sharding::Zero2 ? "2" : "1") +
           " all-gathers the updated parameters after the optimizer step, not overlapped (only ZeRO-3 prefetches them)";
  }
  return "";
}

const FrameworkOffer& framework_offer(Framework framework) {
  static const std::vector<FrameworkOffer> table = make_table();
  for (const FrameworkOffer& f : table) {
    if (f.framework == framework) return f;
  }
  return table.front();
}

}  // namespace pipescope
