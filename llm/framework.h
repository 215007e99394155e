// What each training framework runs, in one table: the parallel dimensions, the pipeline
// schedules (as pipescope's ScheduleKind), the optimizer shardings with and without a
// pipeline, and the recompute granularities. `pipescope llm-plan --framework` searches
// only these; `pipescope plan --framework` keeps only these schedules. Invariant: every
// entry is something the framework's own code runs today; llm_schedules is the part of
// schedules that llm/step_time.h can time (llm/pipeline_schedule.h's timed_schedules: all
// of torch's; Megatron's 1f1b and interleaved; DeepSpeed's 1f1b); framework.cpp says
// where each fact comes from.
//   const FrameworkOffer& f = framework_offer(Framework::DeepSpeed);
//   f.runs(ScheduleKind::Interleaved)  // false
#pragma once

#include <string>
#include <vector>

#include "core/schedule.h"
#include "llm/layout.h"
#include "llm/layout_check.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

// What a launch holds on each GPU beside the model's own bytes (llm/memory.h's weights,
// gradients, optimizer state and activations), which the layout search keeps free: the
// CUDA context with its library handles and workspaces, NCCL's buffers over the job's
// communicators, buffers the framework keeps outside that count, and the caching
// allocator's fragmentation as a share of the GPU's memory. framework.cpp gives each
// default's source; `--memory-headroom GB` replaces the total.
struct MemoryReserve {
  double context_bytes = 0;
  double nccl_bytes = 0;
  double framework_bytes = 0;
  double fragmentation = 0;  // of the GPU's memory
  double bytes(double capacity) const {
    return context_bytes + nccl_bytes + framework_bytes + fragmentation * capacity;
  }
};

// Why `headroom` bytes kept free of each GPU's `capacity` leave nothing for the model ("" when
// they leave some): "--memory-headroom: expected less than the 80.00 GB per GPU, got 90.00 GB"
// (GB = 1e9 bytes). The search's request and every job on its cluster (validate_job) ask it.
std::string headroom_refusal(double headroom, double capacity);

struct FrameworkOffer {
  Framework framework = Framework::Megatron;
  std::string name;                      // "Megatron-LM", "torch (torchtitan)", "DeepSpeed"
  bool tensor_parallel = false;          // t > 1
  std::vector<bool> sequence_parallel;   // the SP settings it offers with t > 1
  bool context_parallel = false;         // cp > 1
  bool expert_parallel = false;          // ep > 1
  std::vector<ScheduleKind> schedules;   // pipeline schedules (p > 1)
  std::vector<ScheduleKind> llm_schedules;  // of them, what llm-plan searches and times
  std::vector<Sharding> shardings;       // with p = 1
  std::vector<Sharding> pipeline_shardings;  // with p > 1
  std::vector<Recompute> recomputes;
  std::vector<Fp8Recipe> fp8_recipes;    // the fp8 recipes it trains with (Fp8Recipe::None, bf16, always)
  bool tp_comm_overlap = false;          // TP collectives overlapped with GEMMs (t > 1 with SP)
  std::string source;                    // where these facts come from
  MemoryReserve reserve;                 // kept free on each GPU (the layout search's headroom)
  std::vector<PrecisionRecipe> precisions;  // the recipes it runs (and pipescope exports)

  bool runs(ScheduleKind kind) const;
  const std::vector<Sharding>& shardings_for(int p) const { return p > 1 ? pipeline_shardings : shardings; }
};

const FrameworkOffer& framework_offer(Framework framework);

// The data-parallel overlap `framework` runs `layout` with, given what was asked
// (--overlap-grad-reduce / --overlap-param-gather), written into layout.overlap_*:
//   Megatron-LM  what is asked; the parameter gather only under the distributed optimizer
//                (Megatron-LM's arguments.py asserts --use-distributed-optimizer for it;
//                without a sharded optimizer there is no gather to overlap)
//   torch        both, asked or not: DDP all-reduces gradient buckets as backward makes
//                them, FSDP2 reduce-scatters in its post-backward hooks and prefetches the
//                next all-gather during forward
//   DeepSpeed    the gradient reduce when asked (zero_optimization.overlap_comm); under
//                ZeRO-3 both, asked or not (overlap_comm defaults to true there, DeepSpeedZeroConfig's
//                overlap_comm_valid, and parameters are prefetched); ZeRO-1 / 2 gather the
//                updated parameters after the step, so never the gather
// and layout.overlap_p2p: Megatron-LM's --overlap-p2p-communication as asked (`p2p`; on by
// default) when its interleaved schedule runs (v > 1), else off: Megatron's 1f1b, torch's
// pipelining (its _batch_p2p waits at once) and DeepSpeed's pipe engine send and receive blocking.
void set_framework_overlap(Framework framework, bool grad_reduce, bool param_gather, ParallelLayout& layout,
                           bool p2p = true);
// Why --overlap-param-gather cannot apply to a layout of `sharding` under `framework` ("" when
// it can; the reason without the flag's name): no sharded parameters to gather (sharding none; Megatron-LM's arguments.py asserts
// --use-distributed-optimizer), or DeepSpeed's ZeRO-1 / 2, which gather after the step.
std::string param_gather_refusal(Framework framework, Sharding sharding);

// Why `framework` cannot run pipescope's activation offload (core/offload.h: a fraction of
// each stash sent to host between its forward and the op that needs it back, PipeOffload's
// policy), "" when it can. None of the three runs it today: Megatron-LM's --cpu-offloading
// (--cpu-offloading-num-layers N) moves whole layers' activations on Transformer Engine's
// own schedule; torch.distributed.pipelining has no offload (torch.autograd.graph.save_on_cpu
// moves every saved tensor, not a fraction in the gap); DeepSpeed offloads only activation
// checkpoints (activation_checkpointing.cpu_checkpointing, under full recompute).
std::string activation_offload_refusal(Framework framework);

// Why a job on `offer`'s framework cannot run `kind` ("" when it can): not a schedule the
// framework runs, or one llm/ does not time for it. Names --schedule, the framework and
// what it runs ("--schedule: zb-v is not a schedule Megatron-LM runs (it runs 1f1b, interleaved)").
std::string schedule_offer_refusal(const FrameworkOffer& offer, ScheduleKind kind);
// Why the framework's own runtime refuses the layout ("" when it takes it), beyond the
// generators' rules (llm/pipeline_schedule.h's schedule_refusal) and validate_layout's:
// torch 2.13's Schedule1F1B raises for fewer micro-batches than stages (M < p); torch
// (torchtitan) and DeepSpeed (AutoEP) keep experts whole, so ep > 1 needs t = 1 there, and
// torchtitan's ep must divide dp_shard * cp (dp_shard = d under zero-2 / zero-3, 1 under
// none); torchtitan shards over the context-parallel ranks, so cp > 1 needs zero-2 / zero-3
// there. Depends on M and the sharding, so the search asks it per candidate.
std::string runtime_refusal(const FrameworkOffer& offer, const ParallelLayout& layout);
// Why the TP overlap cannot run on nodes of `gpus_per_node` GPUs ("" when it can): Transformer
// Engine's userbuffers and torch's symmetric memory (async TP) overlap over NVLink, inside one
// node, so a TP group that spans nodes is refused (0: the node size is not known, nothing refused).
std::string tp_overlap_refusal(const ParallelLayout& layout, int gpus_per_node);
// Of those, the expert-parallel part, without the flag ("ep = 2 with t = 2: ...").
std::string expert_parallel_refusal(const FrameworkOffer& offer, const ParallelLayout& layout);

// Everything `offer`'s framework refuses of a layout without looking at the model, "" when
// it runs it: the schedule (schedule_offer_refusal, the layout's or Megatron's default by v),
// the generators' rules on M (schedule_refusal), the parallel dimensions it offers (t, SP on
// at t > 1, cp, ep), the sharding for p, the recompute granularity, the precision recipe (and
// Megatron-LM's fp8-params only under the distributed optimizer), the rank order it lays ranks
// out in, runtime_refusal, and last an overlap it does not run (set_framework_overlap gives
// none: overlap_p2p outside Megatron-LM's interleaved schedule, a parameter gather
// param_gather_refusal refuses). Each reason opens with the flag that sets the field ("--sharding: ...",
// which llm/plan_layout.h's plan_field_of_check maps to the plan's "layout.sharding").
// validate_job (llm/job.h) calls it for every job; the layout search for every candidate; an
// export of a plan without a job (v2) for its target's framework; the llm_plan reader for
// each layout it lists.
std::string framework_refusal(const FrameworkOffer& offer, const ParallelLayout& layout);

}  // namespace pipescope
