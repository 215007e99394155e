#include "planner/plan_builder.h"

#include <cmath>

#include "core/error.h"
#include "planner/partition.h"

namespace pipescope {

Plan make_plan(const Profile& profile, const PlanChoice& c) {
  if (c.stages < 1 || c.stages > kMaxDevices) {
    throw InputError("--stages: expected 1 to " + std::to_string(kMaxDevices) + ", got " + std::to_string(c.stages));
  }
  if (c.microbatches < 1) throw InputError("--microbatches: expected at least 1, got " + std::to_string(c.microbatches));
  if (c.chunks < 1 || c.chunks > 64) throw InputError("--chunks: expected 1 to 64, got " + std::to_string(c.chunks));
  if (c.chunks > 1 && c.schedule != ScheduleKind::Interleaved) {
    throw InputError("--chunks: only the interleaved schedule takes more than 1 chunk");
  }
  Plan plan;
  plan.profile = c.profile_path;
  double b = c.microbatch_size > 0 ? c.microbatch_size : profile.batch_sizes.front();
  if (b != std::floor(b) || b > 1e9) {
    throw InputError("--microbatch-size: expected a whole number of samples, got " + std::to_string(b));
  }
  plan.microbatches = c.microbatches;
  plan.batch_size = static_cast<int64_t>(b) * c.microbatches;
  plan.schedule = c.schedule;
  plan.chunks = c.chunks;
  plan.recompute = c.recompute;
  plan.optimizer_state_factor = c.optimizer_state_factor;
  const int S = c.stages * c.chunks;
  LayerRanges ranges;
  if (c.partition == "uniform") {
    ranges = uniform_partition(profile.num_layers(), S);
  } else if (c.partition == "balanced") {
    ranges = balanced_partition(profile, S, b, c.recompute);
  } else {
    throw InputError("--partition: expected uniform or balanced, got \"" + c.partition + "\"");
  }
  for (int s = 0; s < S; ++s) {
    plan.stages.push_back({ranges[s].first, ranges[s].second, {s % c.stages}});
  }
  return plan;
}

}  // namespace pipescope
