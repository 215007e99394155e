// Builds a Plan from the choices a user makes on the command line (or in the GUI):
// stages K, micro-batches M, micro-batch size, schedule, chunks, re-materialisation
// and a partitioner. Stage p runs on device p; interleaved plans have K*v stages.
//   Plan plan = make_plan(profile, {.stages = 4, .microbatches = 32});
#pragma once

#include <string>

#include "core/plan.h"
#include "core/profile.h"

namespace pipescope {

struct PlanChoice {
  int stages = 1;                 // K, devices in the pipeline
  int microbatches = 1;           // M
  double microbatch_size = 0;     // 0: the profile's first batch size
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int chunks = 1;
  bool recompute = false;
  std::string partition = "balanced";  // uniform | balanced
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  std::string profile_path;
};

Plan make_plan(const Profile& profile, const PlanChoice& choice);

}  // namespace pipescope
