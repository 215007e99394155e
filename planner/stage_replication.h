// Different replication per stage (r_s devices for position s, as DAPPLE and PipeDream
// plan): starting from a plan with r on every position, alternately (1) re-allocate the
// devices, each time giving the next allowed replica count to the stage that is slowest
// now (optimal for the min-max allocation of a fixed partition, since each stage's time
// only falls as it gains replicas), and (2) re-partition exactly for those counts
// (min_max_partition with each stage costed by StageModel at its own r), until neither
// step changes anything. Replica counts divide the samples per micro-batch, and
// sum r_s <= D (PipeDream's "fewer machines" when the divisors do not add up to D).
// Invariant: the result is never slower by the partitioner's model than the start.
//   StageReplication r = replicate_per_stage(profile, hw, schedule, spec, 64, 64, ranges);
#pragma once

#include <cstdint>
#include <vector>

#include "core/hardware.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "planner/partition.h"
#include "planner/stage_model.h"

namespace pipescope {

struct StageReplication {
  std::vector<int> replicas;  // per position (one stage per position)
  LayerRanges ranges;
  int64_t bottleneck_ns = kInfeasible;  // slowest stage by the partitioner's model
};

// `schedule` has one stage per position (no interleaving); `spec.replicas` is the
// starting r on every position and `start` its partition; `samples` = samples per
// micro-batch (N / M), which every r_s must divide.
StageReplication replicate_per_stage(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                                     const StageModelSpec& spec, int devices, int64_t samples,
                                     const LayerRanges& start);

}  // namespace pipescope
