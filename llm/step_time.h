// Iteration time of a (shape, layout, GPU cluster): the per-layer F / I / W times of
// llm/layer_time.h become a pipescope Profile at the layout's micro-batch (one layer per
// transformer layer, the embedding and the head + loss as layers of their own, t folded
// into the device), cut into p x v chunks as Megatron-LM cuts them (the embedding on
// the first chunk, the head on the last), and the exact pipeline simulation (sim/) runs
// the layout's schedule (llm/pipeline_schedule.h: 1F1B, or interleaved 1F1B with v
// chunks, by default; gpipe, looped-bfs, interleaved-zb, zb-v, dualpipev on request, the
// zero-bubble kinds with I and W as separate ops at layer_time's I / W times; a V puts
// chunk c >= p on rank 2p-1-c; dualpipev's F&B pairs run back to back, layer_time states
// no overlap), with p2p on the pp group's link, blocking, or overlapped where the layout says
// so (layout.overlap_p2p: Megatron's interleaved default). Each layer states its stash
// (llm/memory.h's activation bytes, and the weight-gradient bytes W keeps after I), so
// that `pipescope simulate` on an `llm-plan --out` profile shows the activation memory of
// llm_memory's non-Megatron walk; the simulated time does not read them (the hardware's
// memory is unbounded and nothing is offloaded). The
// data-parallel tail and the tied-embedding all-reduce follow the flush; the optimizer
// step (a sharded one under the distributed optimizer) ends the step; ZeRO-2 / 3's
// per-micro-batch traffic adds what compute does not hide (sharding_extra_ns). Invariant:
// step_ns = pipeline_ns + dp_exposed_ns + embedding_sync_ns + sharding_ns, the one step
// llm-time, llm-plan and `simulate --plan` of a job print (llm/job.h).
//   StepTime st = step_time(shape, layout, load_gpu_model("profiles/gpus/a100-80gb.json"));
//   st.step_ns, st.mfu
#pragma once

#include <cstdint>
#include <string>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "core/schedule.h"
#include "llm/gpu_model.h"
#include "llm/layer_time.h"
#include "llm/layout.h"

namespace pipescope {

// Where the data-parallel collectives meet compute. Megatron-LM: --overlap-grad-reduce
// overlaps the gradient reduce-scatter (all-reduce without the distributed optimizer)
// with the last micro-batch's backward; --overlap-param-gather the parameter all-gather
// with the next step's first forward. Off (Megatron's default, and Korthikanti et al.'s
// runs): both exposed after the flush.
struct StepOptions {
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool overlap_p2p = true;  // Megatron-LM's default; --no-overlap-p2p-communication: false
};
// The overlap a layout says it runs with (layout.overlap_*).
inline StepOptions step_options(const ParallelLayout& layout) {
  return {layout.overlap_grad_reduce, layout.overlap_param_gather, layout.overlap_p2p};
}

struct StepTime {
  LayerTime layer;         // one transformer layer, one micro-batch
  LayerTime embedding, head;
  int64_t pipeline_ns = 0;     // the simulated flushed pipeline, optimizer step included
  int64_t optimizer_ns = 0;    // the slowest pipeline rank's optimizer step
  int64_t dp_exposed_ns = 0;   // gradient reduce + parameter gather not hidden
  int64_t embedding_sync_ns = 0;  // tied embedding gradients between first and last stage
  int64_t sharding_ns = 0;     // ZeRO-2 / 3 traffic compute does not hide (sharding_extra_ns)
  int64_t step_ns = 0;
  double bubble = 0;           // the simulation's mean idle fraction
  double model_flops = 0;      // per step, all GPUs (Korthikanti et al. appendix A: no recompute)
  double mfu = 0;              // model FLOPs / (step x GPUs x peak)
  std::string schedule;        // the layout's schedule: "1f1b", "interleaved", "zb-v", ...
  int layers_per_chunk = 0;    // the first chunk's transformer layers
};

// Throws InputError when the layout does not cut the layers into p x v chunks, or its
// schedule refuses it (llm/pipeline_schedule.h's schedule_refusal: interleaved with M not
// a multiple of p, dualpipev with M < 2p, zb-v with v != 2, ...).
StepTime step_time(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                   const StepOptions& options = {});

// The Profile and Plan step_time simulates (for `pipescope simulate` and tests).
struct LlmPipeline {
  Profile profile;
  Plan plan;
};
LlmPipeline llm_pipeline(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu);
// That plan's stages, one per chunk in model order: chunk_layers' decoder layers, the
// embedding (profile layer 0) in the first, the head (the last) in the last, each on
// position chunk_rank. A version 3 plan's stages must be these (plan_job checks).
std::vector<PlanStage> llm_stages(const TransformerShape& shape, const ParallelLayout& layout);
// The one simulation step_time runs of that pipeline: its cost model on the pp group's link
// (pipeline_hardware), the plan's p2p; report.step_ns is StepTime::pipeline_ns. With
// `record_timeline` the report keeps the timeline (the GUI draws a job's pipeline from it);
// no time changes.
struct LlmPipelineRun {
  LlmPipeline pipeline;
  Hardware hardware;
  CostModel costs;
  Schedule schedule;
  StepReport report;
};
LlmPipelineRun run_llm_pipeline(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu,
                                bool record_timeline = false);

// The data-parallel tail of one pipeline rank holding `parameters` per GPU whose one
// micro-batch takes forward_ns and backward_ns: the fp32 gradient reduce-scatter (all-reduce
// without a sharded optimizer) and the bf16 parameter all-gather (none under ZeRO-3, whose
// parameters stay sharded until the next forward gathers them), less what the overlap
// options hide. 0 for d = 1. step_time takes the largest over the ranks.
int64_t dp_exposed_ns(const GpuModel& gpu, const ParallelLayout& layout, int64_t parameters, int64_t forward_ns,
                      int64_t backward_ns, const StepOptions& options);
// ZeRO-2 reduce-scatters the gradients after every micro-batch's backward (M - 1 more than
// the one after the flush dp_exposed_ns counts); ZeRO-3 / FSDP also all-gathers the
// parameters before each micro-batch's forward and again before its backward (2 M), all of
// it prefetched and overlapped with the rank's `busy` compute: only the excess shows, and
// at least what each of the rank's `layers` (FSDP's units, one transformer block each)
// cannot hide behind its own compute, one layer ahead (step_time.cpp says how;
// docs/llm-scale.md states the assumption). 0 for other shardings.
int64_t sharding_extra_ns(const GpuModel& gpu, const ParallelLayout& layout, int64_t parameters, int64_t busy,
                          int64_t forward_ns, int64_t backward_ns, const StepOptions& options, int layers = 1);
// The parameters of a rank's optimizer step: / (d cp) under a sharded optimizer (the
// gradient group, llm/collectives.h's gradient_group_link), all of them without.
int64_t sharded_parameters(int64_t parameters, const ParallelLayout& layout);
// The tied word-embedding gradients all-reduced between the first and the last stage (p > 1).
int64_t embedding_sync_ns(const TransformerShape& shape, const ParallelLayout& layout, const GpuModel& gpu);

// One optimizer step of Megatron's bf16 mixed precision on `parameters` parameters,
// memory-bound at 42 bytes each: the fp32 main gradient read for the norm (4), Adam
// reading gradient, master weight, m and v (16) and writing master, m and v (12), the
// master copied into the bf16 weights (4 + 2), the gradient buffer zeroed (4).
int64_t optimizer_step_ns(const GpuModel& gpu, int64_t parameters);

}  // namespace pipescope
