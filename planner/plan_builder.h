// Builds a Plan from the choices a user makes on the command line (or in the GUI):
// stages K, micro-batches M, micro-batch size, schedule, chunks, re-materialisation,
// replication r and a partitioner. Position p runs on devices [p r, (p + 1) r);
// interleaved plans have K*v stages. The cut is partitioner.h's, the one `plan` takes.
//   MadePlan made = make_plan(profile, {.stages = 4, .microbatches = 32});
//   simulate(schedule_for(made.plan), build_cost_model(made.profile, made.plan, h), h);
#pragma once

#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/runtime_costs.h"
#include "planner/partition.h"
#include "planner/partitioner.h"

namespace pipescope {

struct PlanChoice {
  int stages = 1;                 // K, pipeline positions
  int microbatches = 1;           // M
  double microbatch_size = 0;     // 0: the profile's first batch size
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::string schedule_file{};    // a schedule file instead (K, M and v come from it)
  int chunks = 1;
  int max_inflight = 0;           // zb-auto's cap (0: K)
  int64_t activation_budget_bytes = 0;  // zb-auto's byte budget per position (0: the default)
  Recompute recompute = Recompute::None;  // None or Full (core/recompute.h)
  int replicas = 1;               // r devices per position
  PartitionKind partition = PartitionKind::Optimal;  // parsed at the edges (parse_partition_kind)
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  std::string profile_path{};
  const Hardware* hardware = nullptr;  // for optimal: links, speeds, memory (null: ideal)
  const RuntimeCosts* runtime = nullptr;  // what its I frees, for the cut's memory (null: the profile's rules)
};

// A plan and the profile its layer ranges index: the given profile, or its layers
// permuted into `layer_order` when the optimal cut of a graph profile is contiguous
// only in another topological order (partitioner.h). Simulate and run the plan with
// `profile`, never with the one given to make_plan.
struct MadePlan {
  Plan plan;
  Profile profile;
  std::vector<int> layer_order;  // empty: the given order
};

// Checks the choice (InputError naming the flag), then cuts with cut_layers; with
// several stages per device the optimal cut is then evened out (balance_devices).
// Optimal falls back to the cut that needs the least memory when no cut fits, so
// that the caller can still simulate and report the misfit.
MadePlan make_plan(const Profile& profile, const PlanChoice& choice);

// The schedule fields a plan takes over from what was chosen (a PlanChoice, or a
// search's Candidate: the same member names): M, the kind, v, zb-auto's cap and
// re-materialisation. make_plan and the search both fill a plan through it.
template <typename Choice>
void set_schedule_fields(Plan& plan, const Choice& choice) {
  plan.microbatches = choice.microbatches;
  plan.schedule = choice.schedule;
  plan.chunks = choice.chunks;
  plan.max_inflight = choice.max_inflight;
  plan.recompute = choice.recompute;
}

// Gives the plan's stages their layer ranges and devices: stage s on the schedule's
// position stage_position[s], position p on hardware devices [p r, (p + 1) r).
void place_stages(Plan& plan, const Schedule& schedule, const LayerRanges& ranges, int replicas);

}  // namespace pipescope
