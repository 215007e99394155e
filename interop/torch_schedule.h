// PyTorch 2.13's pipeline schedule classes (torch/distributed/pipelining/schedules.py), one
// row per pipescope schedule that a class runs: what `export --to torch` writes as the class
// and `export --to torchtitan` as --parallelism.pipeline_parallel_schedule (get_schedule_class's
// name), and the checks both make. Invariant: a plan a row's check accepts places its stages
// where the class (and torchtitan's _get_pp_rank_to_stage_indices_mapping) puts them.
//   if (const TorchSchedule* row = torch_schedule(ScheduleKind::Interleaved)) check_torch_class(*row, shape);
#pragma once

#include "core/schedule_kinds.h"

namespace pipescope {

struct PlanShape;

struct TorchSchedule {
  ScheduleKind kind;        // the pipescope schedule the class runs
  const char* torch_class;  // schedules.<class>
  const char* short_name;   // get_schedule_class's key (torchtitan's pipeline_parallel_schedule)
  bool single_stage;        // PipelineScheduleSingle (one stage per rank) or PipelineScheduleMulti
  const char* placement;    // "loop" (stage s on rank s % K) or "v" (stages d and 2K-1-d on rank d)
  bool needs_m_ge_stages;   // the constructor refuses fewer micro-batches than stages
  bool needs_rounds = true;  // a "loop" class that refuses M not a multiple of max(1, M / K)
};

// The row of `kind`, nullptr when no class runs it (a schedule file, zb-h2, v-min, ...).
const TorchSchedule* torch_schedule(ScheduleKind kind);
// The rank stage `stage` of K ranks runs on under `placement` ("loop" or "v").
int torch_stage_rank(const char* placement, int stage, int K);
// Throws InputError naming the plan field when the class would place a stage elsewhere, or
// its constructor refuses the micro-batch count.
void check_torch_class(const TorchSchedule& row, const PlanShape& s);

}  // namespace pipescope
