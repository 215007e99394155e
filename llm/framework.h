// What each training framework runs, in one table: the parallel dimensions, the pipeline
// schedules (as pipescope's ScheduleKind), the optimizer shardings with and without a
// pipeline, and the recompute granularities. `pipescope llm-plan --framework` searches
// only these; `pipescope plan --framework` keeps only these schedules. Invariant: every
// entry is something the framework's own code runs today; llm_schedules is the part of
// schedules that llm/step_time.h can time (1f1b and interleaved); framework.cpp says
// where each fact comes from.
//   const FrameworkOffer& f = framework_offer(Framework::DeepSpeed);
//   f.runs(ScheduleKind::Interleaved)  // false
#pragma once

#include <string>
#include <vector>

#include "core/schedule.h"
#include "llm/layout.h"
#include "llm/layout_check.h"

namespace pipescope {

struct FrameworkOffer {
  Framework framework = Framework::Megatron;
  std::string name;                      // "Megatron-LM", "torch (torchtitan)", "DeepSpeed"
  bool tensor_parallel = false;          // t > 1
  std::vector<bool> sequence_parallel;   // the SP settings it offers with t > 1
  bool context_parallel = false;         // cp > 1
  bool expert_parallel = false;          // ep > 1
  std::vector<ScheduleKind> schedules;   // pipeline schedules (p > 1)
  std::vector<ScheduleKind> llm_schedules;  // of them, what llm-plan times: 1f1b, interleaved (v > 1)
  std::vector<Sharding> shardings;       // with p = 1
  std::vector<Sharding> pipeline_shardings;  // with p > 1
  std::vector<Recompute> recomputes;
  std::string source;                    // where these facts come from

  bool runs(ScheduleKind kind) const;
  bool interleaved() const;  // v > 1: llm_schedules holds interleaved
  const std::vector<Sharding>& shardings_for(int p) const { return p > 1 ? pipeline_shardings : shardings; }
};

const FrameworkOffer& framework_offer(Framework framework);

}  // namespace pipescope
