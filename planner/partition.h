// Partitioners cut a profile's layers into S contiguous stages [first, end).
//   uniform:  equal layer counts; the remainder goes one extra layer to the first
//             stages, never piled on the last.
//   balanced: minimises the slowest stage's forward + backward time at the
//             micro-batch size (exact dynamic programme over cut points).
#pragma once

#include <utility>
#include <vector>

#include "core/profile.h"

namespace pipescope {

using LayerRanges = std::vector<std::pair<int, int>>;

LayerRanges uniform_partition(int layers, int stages);
LayerRanges balanced_partition(const Profile& profile, int stages, double microbatch_size,
                               bool recompute);

}  // namespace pipescope
