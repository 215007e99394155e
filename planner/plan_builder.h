// Builds a Plan from the choices a user makes on the command line (or in the GUI):
// stages K, micro-batches M, micro-batch size, schedule, chunks, re-materialisation,
// replication r and a partitioner. Position p runs on devices [p r, (p + 1) r);
// interleaved plans have K*v stages.
//   Plan plan = make_plan(profile, {.stages = 4, .microbatches = 32});
#pragma once

#include <string>

#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "planner/partition.h"

namespace pipescope {

struct PlanChoice {
  int stages = 1;                 // K, pipeline positions
  int microbatches = 1;           // M
  double microbatch_size = 0;     // 0: the profile's first batch size
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::string schedule_file;      // a schedule file instead (K, M and v come from it)
  int chunks = 1;
  int max_inflight = 0;           // zb-auto's cap (0: K)
  int64_t activation_budget_bytes = 0;  // zb-auto's byte budget per position (0: the default)
  bool recompute = false;
  int replicas = 1;               // r devices per position
  std::string partition = "optimal";  // uniform | gpipe | optimal (balanced = optimal)
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  std::string profile_path;
  const Hardware* hardware = nullptr;  // for optimal: links, speeds, memory (null: ideal)
};

// The partitioner names the CLI accepts; throws InputError naming the flag otherwise.
std::string check_partition_name(const std::string& name);

// Cuts `profile` (layers in topological order) for `plan`: its K x v stages may be
// placeholders; their count, the schedule and the batch are what is read. Optimal falls back to the time-only optimum when no memory-
// feasible cut exists, so that the caller can still simulate and report the misfit.
LayerRanges partition_for(const Profile& profile, const Plan& plan, int replicas,
                          const std::string& partition, const Hardware& hardware);

Plan make_plan(const Profile& profile, const PlanChoice& choice);

// Gives the plan's stages their layer ranges and devices: stage s on the schedule's
// position stage_device[s], position p on hardware devices [p r, (p + 1) r).
void place_stages(Plan& plan, const Schedule& schedule, const LayerRanges& ranges, int replicas);

}  // namespace pipescope
