// Invariant of every partitioner here: the returned ranges are S non-empty,
// contiguous [first, end) pairs tiling [0, L) in order.
#include "planner/partition.h"

#include <cmath>

#include "core/cost_model.h"
#include "core/error.h"

namespace pipescope {

void check_stage_count(int layers, int stages) {
  if (stages < 1) throw InputError("stages: expected at least 1, got " + std::to_string(stages));
  if (stages > layers) {
    throw InputError("stages: cannot cut " + std::to_string(layers) + " layers into " +
                     std::to_string(stages) + " non-empty stages");
  }
}

void keep_loss_with_producer(const Profile& profile, LayerRanges& ranges) {
  if (profile.layers.empty() || ranges.size() < 2) return;
  if (!is_loss_layer(profile.layers.back())) return;
  const int loss = profile.num_layers() - 1;
  if (ranges.back() != std::make_pair(loss, loss + 1)) return;
  LayerRanges moved = ranges;
  for (std::size_t s = moved.size() - 1; s >= 1; --s) {  // stage s takes stage s - 1's last layer
    --moved[s].first;
    --moved[s - 1].second;
    if (moved[s - 1].first < moved[s - 1].second) {
      ranges = std::move(moved);
      return;
    }
  }
}

LayerRanges uniform_partition(int layers, int stages) {
  check_stage_count(layers, stages);
  LayerRanges out;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    int size = layers / stages + (s < layers % stages ? 1 : 0);
    out.emplace_back(first, first + size);
    first += size;
  }
  return out;
}

namespace {

std::vector<double> layer_cost_prefix(const Profile& profile, double b, bool r_ops) {
  const int L = profile.num_layers();
  std::vector<double> prefix(static_cast<std::size_t>(L) + 1, 0.0);
  for (int l = 0; l < L; ++l) {
    const double f = profile.forward_ms(l, b);
    prefix[l + 1] = prefix[l] + f * (r_ops ? 2.0 : 1.0) + profile.backward_ms(l, b);
  }
  return prefix;
}

}  // namespace

LayerRanges gpipe_partition(const Profile& profile, int stages, double b, bool r_ops) {
  const int L = profile.num_layers();
  check_stage_count(L, stages);
  // The dynamic programme below takes about stages x L^2 / 2 steps; past a few
  // seconds' worth it is refused rather than left running for hours.
  constexpr double kMaxSteps = 4e9;
  if (static_cast<double>(stages) * L * L / 2 > kMaxSteps) {
    throw InputError("--partition gpipe: cutting " + std::to_string(L) + " layers into " +
                     std::to_string(stages) + " stages is beyond the gpipe partitioner's limit "
                     "(stages x layers^2 / 2 <= 4e9 steps); use --partition optimal or uniform");
  }
  const std::vector<double> prefix = layer_cost_prefix(profile, b, r_ops);
  // best[k][j]: least sum of squared stage costs cutting [0, j) into k stages.
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t W = static_cast<std::size_t>(L) + 1;
  std::vector<double> best((static_cast<std::size_t>(stages) + 1) * W, inf);
  std::vector<int> cut((static_cast<std::size_t>(stages) + 1) * W, -1);
  best[0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int j = k; j <= L - (stages - k); ++j) {
      for (int i = k - 1; i < j; ++i) {
        const double before = best[(k - 1) * W + i];
        if (before == inf) continue;
        const double c = prefix[j] - prefix[i];
        const double v = before + c * c;
        if (v < best[k * W + j]) {
          best[k * W + j] = v;
          cut[k * W + j] = i;
        }
      }
    }
  }
  LayerRanges out(static_cast<std::size_t>(stages));
  int j = L;
  for (int k = stages; k >= 1; --k) {
    const int i = cut[k * W + j];
    out[k - 1] = {i, j};
    j = i;
  }
  return out;
}

LayerRanges balanced_partition(const Profile& profile, int stages, double b, bool r_ops) {
  const int L = profile.num_layers();
  check_stage_count(L, stages);
  std::vector<int64_t> prefix(static_cast<std::size_t>(L) + 1, 0);
  for (int l = 0; l < L; ++l) {
    const double f = profile.forward_ms(l, b);
    prefix[l + 1] = prefix[l] + ms_to_ns(f * (r_ops ? 2.0 : 1.0) + profile.backward_ms(l, b));
  }
  auto time = [&](int, int i, int j) { return prefix[j] - prefix[i]; };
  return min_max_partition(L, stages, time, time).ranges;
}

}  // namespace pipescope
