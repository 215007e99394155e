// GPipe's Table 2 regenerated from a profile: throughput of a GPipe-scheduled step for
// K in {2, 4, 8} stages and M in {1, 4, 32} micro-batches of a fixed mini-batch,
// normalised to K = 2, M = 1, on ideal hardware (free links, unbounded memory: the
// paper adjusted batch sizes to fit, so only the trends are comparable).
//   SpeedupTable t = gpipe_table2(load_profile("profiles/toy-uniform.json"), "uniform");
#pragma once

#include <string>
#include <vector>

#include "core/profile.h"

namespace pipescope {

struct SpeedupTable {
  std::vector<int> stages = {2, 4, 8};
  std::vector<int> microbatches = {1, 4, 32};
  std::vector<std::vector<double>> speedup;  // [m][k], 1.0 at K = 2, M = 1
  double at(int M, int K) const;
};

SpeedupTable gpipe_table2(const Profile& profile, const std::string& partition, int64_t batch = 32);

// "| M | K = 2 | K = 4 | K = 8 |" rows, each cell "ours (paper)" when paper values are given.
std::string speedup_markdown(const SpeedupTable& ours, const std::vector<std::vector<double>>& paper);

}  // namespace pipescope
