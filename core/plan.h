// A plan: how one training step of a profiled model is cut and run.
// Stages are model stages listed in model order; their layer ranges [first, end)
// tile [0, L) contiguously. Under interleaving (v chunks) there are K*v stages and
// stage s shares its devices with stage s % K. A stage with several devices is
// replicated (data parallel inside the stage). The micro-batch size is
// batch_size / microbatches, which must divide evenly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/schedule.h"

namespace pipescope {

struct PlanStage {
  int first_layer = 0;
  int end_layer = 0;
  std::vector<int> devices;
};

// Adam keeps two fp32-sized moments per parameter: 2 bytes of state per byte of
// parameters is the default.
inline constexpr double kDefaultOptimizerStateFactor = 2.0;

struct Plan {
  std::string profile;  // path of the profile, relative to the plan file's folder
  int64_t batch_size = 1;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int chunks = 1;
  bool recompute = false;
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  std::vector<PlanStage> stages;
  std::string source;

  int pipeline_devices() const { return static_cast<int>(stages.size()) / chunks; }
  double microbatch_size() const { return static_cast<double>(batch_size) / microbatches; }
  ScheduleSpec schedule_spec() const {
    return {schedule, pipeline_devices(), microbatches, chunks, recompute};
  }
  std::vector<std::pair<int, int>> layer_ranges() const;
};

Plan load_plan(const std::string& path);
Plan plan_from_json(const JsonReader& reader);
Json plan_to_json(const Plan& plan);
// Checks the plan against a profile with `layers` layers (ranges tile [0, layers)).
void check_plan_layers(const Plan& plan, int layers, const std::string& profile_source);

}  // namespace pipescope
