// framework_refusal (llm/framework.h): what a framework refuses of a layout, whoever asks (a
// job's reader, the search, an export, the llm_plan reader). Invariant: each reason is the
// one statement of its rule; the exporters (interop/export_*.cpp) hold no copy, so a layout
// refused here is refused by every door with these words, and one accepted here is written
// by its framework's export. Each reason names the framework's code it restates.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "llm/framework.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

std::string int_text(int64_t v) { return std::to_string(v); }

template <typename T>
bool is_offered(const std::vector<T>& values, T value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// t, SP at t > 1, cp, ep: the dimensions the table offers.
std::string dimension_refusal(const FrameworkOffer& f, const ParallelLayout& l) {
  if (l.t > 1 && !f.tensor_parallel) return "--tensor-model-parallel-size: t = " + int_text(l.t) + ": " + f.name + " has no tensor parallelism";
  // SP off is plain tensor parallelism, which every framework with t runs (torch's search
  // offers SP on only, torchtitan's choice, but torch's parallelize_module runs either); SP on
  // needs Megatron-style sequence-parallel layers
  if (l.t > 1 && l.sequence_parallel && !is_offered(f.sequence_parallel, true)) {
    return "--sequence-parallel: " + f.name + " has no Megatron-style sequence parallelism (norms and dropouts split over "
           "the tensor-parallel group live in Megatron's layers; DeepSpeed-Ulysses is another scheme)";
  }
  if (l.cp > 1 && !f.context_parallel) {
    return "--context-parallel-size: cp = " + int_text(l.cp) + ": " + f.name + "'s pipeline engine has no context parallelism "
           "(its PipeModelDataParallelTopology has pipe, data and model axes only)";
  }
  if (l.ep > 1 && !f.expert_parallel) return "--expert-model-parallel-size: ep = " + int_text(l.ep) + ": " + f.name + " has no expert parallelism";
  return "";
}

// The sharding the framework runs with p ranks (the table's shardings_for).
std::string sharding_refusal(const FrameworkOffer& f, const ParallelLayout& l) {
  if (is_offered(f.shardings_for(l.p), l.sharding)) return "";
  const std::string s = "\"" + to_string(l.sharding) + "\"";
  switch (f.framework) {
    case Framework::Megatron:  // megatron/core/distributed: DDP or the distributed optimizer
      return "--sharding: Megatron-LM's data-parallel sharding is --use-distributed-optimizer (ZeRO-1: optimizer state / "
             "d); " + s + " is only Megatron-FSDP's --data-parallel-sharding-strategy " +
             (l.sharding == Sharding::Zero2 ? "optim_grads" : "optim_grads_params") +
             " (--use-megatron-fsdp), a different data-parallel wrapper pipescope neither times nor exports; plan with "
             "sharding none or distributed-optimizer";
    case Framework::Torch:  // torchtitan: DDP (dp_replicate) or FSDP2 (dp_shard)
      return "--sharding: " + s + " (ZeRO-1): torchtitan shards with FSDP2 only (gradients and optimizer state "
             "together, zero-2 / zero-3) or replicates with DDP (none); say none, zero-2 or zero-3";
    case Framework::DeepSpeed:  // deepspeed/runtime/pipe/engine.py
      return "--sharding: " + s + ": DeepSpeed's PipelineEngine asserts zero_optimization.stage < 2 (\"ZeRO-2 and "
             "ZeRO-3 are incompatible with pipeline parallelism\"); it offers stage 0 or 1 (distributed-optimizer), "
             "and ZeRO-2 / 3 only without a pipeline (p = 1)";
  }
  return "--sharding: " + s + " is not a sharding " + f.name + " runs";
}

std::string recompute_refusal(const FrameworkOffer& f, const ParallelLayout& l) {
  if (is_offered(f.recomputes, l.recompute)) return "";
  const std::string head = "--recompute-granularity: " + to_string(l.recompute) + ": ";
  if (f.framework == Framework::DeepSpeed) {  // deepspeed.checkpointing
    return head + "DeepSpeed checkpoints whole layers (PipelineModule's activation_checkpoint_interval); Megatron's "
                  "selective recompute of the attention core has no DeepSpeed setting; say none or full";
  }
  // torchtitan/distributed/activation_checkpoint.py (llm/framework.cpp's table)
  return head + "torch's checkpoint_wrapper recomputes whole modules and torchtitan's selective AC is per-op (every "
                "second matmul kept), another memory than Megatron's selective recompute of the attention core; say "
                "none or full";
}

std::string precision_refusal(const FrameworkOffer& f, const ParallelLayout& l) {
  const std::string head = "--precision: " + to_string(l.precision) + ": ";
  if (!is_offered(f.precisions, l.precision)) {
    if (f.framework == Framework::DeepSpeed) {
      return head + "ds_config offers bf16, fp16 and fp32; fp8 weights come from Transformer Engine layers, not from "
                    "DeepSpeed; say bf16-mixed or fp32";
    }
    return head + "fp8 weights need torchao's float8 training (FSDP2's fp8 all-gather, a converter in torchtitan's "
                  "model config), which pipescope neither times nor exports; say bf16-mixed or fp32";
  }
  // megatron/training/arguments.py: --fp8-param-gather needs the distributed optimizer (or FSDP)
  if (f.framework == Framework::Megatron && l.precision == PrecisionRecipe::Fp8Params &&
      l.sharding != Sharding::DistributedOptimizer) {
    return head + "Megatron-LM's --fp8-param-gather, which arguments.py allows only with --use-distributed-optimizer; "
                  "the layout's sharding is \"" + to_string(l.sharding) + "\"";
  }
  return "";
}

// An overlap the framework does not run (set_framework_overlap gives none where one was asked).
std::string overlap_refusal(const FrameworkOffer& f, const ParallelLayout& l) {
  ParallelLayout runs = l;
  set_framework_overlap(f.framework, l.overlap_grad_reduce, l.overlap_param_gather, runs, l.overlap_p2p);
  if (l.overlap_param_gather && !runs.overlap_param_gather) {
    const std::string why = param_gather_refusal(f.framework, l.sharding);
    return "--overlap-param-gather: " + (why.empty() ? f.name + " does not overlap it" : why);
  }
  if (l.overlap_p2p && !runs.overlap_p2p) {
    const std::string schedule = to_string(layout_schedule(l));
    return "--overlap-p2p-communication: overlap_p2p is true, but " +
           (f.framework == Framework::Megatron
                ? "Megatron-LM overlaps p2p only in its interleaved schedule (v > 1); its " + schedule +
                      " sends and receives blocking (batched, then waited on: schedules.py "
                      "forward_backward_pipelining_without_interleaving)"
                : f.name + " sends and receives blocking in " + schedule +
                      (f.framework == Framework::Torch ? " (torch.distributed.pipelining's _batch_p2p waits at once)"
                                                       : " (its pipe engine's p2p)")) +
           "; say false";
  }
  return "";
}

// The rank orders the framework lays ranks out in (its own rank generator or mesh).
std::string order_refusal(const FrameworkOffer& f, const ParallelLayout& l) {
  const std::string order = "--order: \"" + l.order + "\"";
  switch (f.framework) {
    case Framework::Megatron:  // megatron/training/initialize.py: --use-tp-pp-dp-mapping or not
      if (l.order == "tp-cp-ep-dp-pp") return "";
      if (l.order != "tp-cp-ep-pp-dp") {
        return order + ": Megatron-LM lays ranks out as tp-cp-ep-dp-pp (its default) or tp-cp-ep-pp-dp "
                       "(--use-tp-pp-dp-mapping), no other order";
      }
      // initialize_model_parallel asserts that the dense and the expert RankGenerator give the
      // same pipeline groups, strides t cp and t ep (etp = t): cp = ep when p > 1
      if (l.p < 2 || l.cp == l.ep) return "";
      return order + " (--use-tp-pp-dp-mapping) with cp = " + int_text(l.cp) + " and ep = " + int_text(l.ep) +
             ": Megatron-Core's initialize_model_parallel needs cp = ep there (its dense and expert pipeline groups, "
             "strides t cp and t ep, must be the same); use tp-cp-ep-dp-pp";
    case Framework::Torch:  // torchtitan/distributed/parallel_dims.py build_mesh
      if (l.ep == 1 || l.order == "tp-cp-ep-dp-pp") return "";
      return order + " with ep = " + int_text(l.ep) + ": torchtitan's ParallelDims unflattens the world as (pp, "
                     "dp_replicate, dp_shard, cp, tp) and (pp, dp_replicate, efsdp, ep), which is order tp-cp-ep-dp-pp";
    case Framework::DeepSpeed: {  // deepspeed/runtime/pipe/topology.py PipeModelDataParallelTopology
      std::vector<std::string> said;
      std::string name;
      for (std::size_t i = 0; i <= l.order.size(); ++i) {
        if (i < l.order.size() && l.order[i] != '-') {
          name += l.order[i];
          continue;
        }
        const int size = name == "tp" ? l.t : name == "dp" ? l.d : name == "pp" ? l.p : 1;
        if (size > 1) said.push_back(name);
        name.clear();
      }
      std::vector<std::string> deepspeeds;
      for (auto [g, size] : {std::pair{"tp", l.t}, {"dp", l.d}, {"pp", l.p}}) {
        if (size > 1) deepspeeds.emplace_back(g);
      }
      if (said == deepspeeds) return "";
      return order + ": DeepSpeed's PipeModelDataParallelTopology numbers ranks model (tp) fastest, then data, then "
                     "pipe (tp-dp-pp)";
    }
  }
  return "";
}

}  // namespace

std::string headroom_refusal(double headroom, double capacity) {
  if (std::isfinite(headroom) && headroom < capacity) return "";
  char line[160];
  std::snprintf(line, sizeof line, "--memory-headroom: expected less than the %.2f GB per GPU, got %.2f GB",
                capacity / 1e9, headroom / 1e9);
  return line;
}

std::string framework_refusal(const FrameworkOffer& offer, const ParallelLayout& l) {
  using Check = std::string (*)(const FrameworkOffer&, const ParallelLayout&);
  static constexpr Check kChecks[] = {
      [](const FrameworkOffer& f, const ParallelLayout& x) { return schedule_offer_refusal(f, layout_schedule(x)); },
      [](const FrameworkOffer&, const ParallelLayout& x) { return schedule_refusal(x); },
      dimension_refusal, sharding_refusal, recompute_refusal, precision_refusal, order_refusal, runtime_refusal,
      overlap_refusal};  // last: an overlap follows from the sharding and schedule checked before it
  for (Check check : kChecks) {
    if (std::string why = check(offer, l); !why.empty()) return why;
  }
  return "";
}

}  // namespace pipescope
