#include "planner/partition.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace pipescope {

static void check_counts(int layers, int stages) {
  if (stages < 1) throw InputError("stages: expected at least 1, got " + std::to_string(stages));
  if (stages > layers) {
    throw InputError("stages: cannot cut " + std::to_string(layers) + " layers into " +
                     std::to_string(stages) + " non-empty stages");
  }
}

LayerRanges uniform_partition(int layers, int stages) {
  check_counts(layers, stages);
  LayerRanges out;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    int size = layers / stages + (s < layers % stages ? 1 : 0);
    out.emplace_back(first, first + size);
    first += size;
  }
  return out;
}

LayerRanges balanced_partition(const Profile& profile, int stages, double b, bool recompute) {
  const int L = profile.num_layers();
  check_counts(L, stages);
  // The dynamic programme below takes about stages x L^2 / 2 steps; past a few
  // seconds' worth it is refused rather than left running for hours.
  constexpr double kMaxSteps = 4e9;
  if (static_cast<double>(stages) * L * L / 2 > kMaxSteps) {
    throw InputError("--partition balanced: cutting " + std::to_string(L) + " layers into " +
                     std::to_string(stages) + " stages is beyond the balanced partitioner's limit "
                     "(stages x layers^2 / 2 <= 4e9 steps); use --partition uniform");
  }
  std::vector<double> prefix(L + 1, 0.0);
  for (int l = 0; l < L; ++l) {
    double cost = profile.forward_ms(l, b) * (recompute ? 2.0 : 1.0) + profile.backward_ms(l, b);
    prefix[l + 1] = prefix[l] + cost;
  }
  // best[k][j]: smallest possible slowest-stage cost cutting layers [0, j) into k stages.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(L + 1, -1));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int j = k; j <= L - (stages - k); ++j) {
      for (int i = k - 1; i < j; ++i) {
        double v = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (v < best[k][j]) {
          best[k][j] = v;
          cut[k][j] = i;
        }
      }
    }
  }
  LayerRanges out(stages);
  int j = L;
  for (int k = stages; k >= 1; --k) {
    int i = cut[k][j];
    out[k - 1] = {i, j};
    j = i;
  }
  return out;
}

}  // namespace pipescope
