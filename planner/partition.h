// Partitioners cut a profile's layers (in topological order) into S contiguous,
// non-empty stages [first, end) that tile [0, L).
//   uniform:  equal layer counts; the remainder goes one extra layer to the first
//             stages, never piled on the last.
//   gpipe:    GPipe's heuristic: the cut that minimises the variance of the stages'
//             estimated cost (forward + backward [+ recompute] at the micro-batch
//             size); exact over all cuts (the total is fixed, so it minimises the sum
//             of squares).
//   optimal:  minimises the slowest stage's time subject to memory (stage_model.h),
//             via min_max_partition below: exact, never a heuristic.
//   balanced: the old name of optimal without hardware (time only, free links).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/profile.h"

namespace pipescope {

using LayerRanges = std::vector<std::pair<int, int>>;

inline constexpr int64_t kInfeasible = std::numeric_limits<int64_t>::max();

LayerRanges uniform_partition(int layers, int stages);
// `r_ops`: the schedule's R ops (Schedule::r_ops, a plan's recompute == Recompute::Full)
// run each forward twice.
LayerRanges gpipe_partition(const Profile& profile, int stages, double microbatch_size, bool r_ops);
// Time-only optimal partition with free communication and equal devices.
LayerRanges balanced_partition(const Profile& profile, int stages, double microbatch_size,
                               bool r_ops);

// A profile whose last layer is its loss (spec {"type": "loss"}: `pipescope_torch profile
// --loss`) runs it as the last stage's loss_fn, not as a module, so a last stage of the loss
// alone has nothing to run (pipescope_torch run refuses it). Moves the cuts before it one
// layer earlier, down to the first stage that keeps a layer of its own; leaves `ranges`
// as they are when no such move exists (fewer model layers than stages) or the profile has
// no loss layer. `ranges` index `profile`'s layers in order, one per model stage.
void keep_loss_with_producer(const Profile& profile, LayerRanges& ranges);

// Throws InputError unless 1 <= stages <= layers.
void check_stage_count(int layers, int stages);

struct MinMaxResult {
  int64_t value = kInfeasible;  // the smallest possible largest stage cost
  LayerRanges ranges;           // empty when no partition is feasible
};

namespace min_max_detail {

// The dynamic programme's first cap on stage costs: the larger of the average and the
// largest single-layer bound, with a little slack; -1 when some layer fits no stage.
template <class Bound>
int64_t starting_cap(int L, int S, const Bound& bound) {
  int64_t total = 0, largest = 0;
  for (int l = 0; l < L; ++l) {
    int64_t cheapest = kInfeasible;
    for (int s = std::max(0, l - (L - S)); s <= std::min(l, S - 1); ++s) cheapest = std::min(cheapest, bound(s, l, l + 1));
    if (cheapest == kInfeasible) return -1;
    total = (total > kInfeasible - cheapest) ? kInfeasible : total + cheapest;
    largest = std::max(largest, cheapest);
  }
  const int64_t cap = std::max(total / S, largest);
  return cap > kInfeasible / 2 ? kInfeasible : cap + cap / 16 + 1;
}

// The stages' layer ranges, read back from the last stage's end: arg[s * (L + 1) + j]
// is where stage s starts when it ends at layer j.
inline LayerRanges trace_cuts(int L, int S, const std::vector<int>& arg) {
  const std::size_t W = static_cast<std::size_t>(L) + 1;
  LayerRanges ranges(static_cast<std::size_t>(S));
  int j = L;
  for (int s = S - 1; s >= 0; --s) {
    const int i = arg[static_cast<std::size_t>(s) * W + static_cast<std::size_t>(j)];
    ranges[static_cast<std::size_t>(s)] = {i, j};
    j = i;
  }
  return ranges;
}

}  // namespace min_max_detail

// Exact minimum over all contiguous partitions of [0, L) into S stages of the largest
// cost(s, i, j) (stage s holds layers [i, j); kInfeasible = the stage is not allowed).
// `bound(s, i, j)` must be <= cost(s, i, j) and must not decrease as i decreases (a
// longer stage ending at j is never cheaper by this bound); it lets the dynamic
// programme stop scanning i early. The programme runs under a cap on stage costs and
// doubles it until the answer is at most the cap (or the cap never cut anything), so
// the result equals the brute-force optimum. Ties go to the latest cut (largest i).
template <class Cost, class Bound>
MinMaxResult min_max_partition(int L, int S, const Cost& cost, const Bound& bound) {
  check_stage_count(L, S);
  int64_t cap = min_max_detail::starting_cap(L, S, bound);
  if (cap < 0) return {};
  const std::size_t W = static_cast<std::size_t>(L) + 1;
  std::vector<int64_t> best(static_cast<std::size_t>(S) * W, kInfeasible);
  std::vector<int> arg(static_cast<std::size_t>(S) * W, -1);
  for (;;) {
    bool capped = false;
    std::fill(best.begin(), best.end(), kInfeasible);
    // Finite entries of the previous row lie in [prev_lo, prev_hi]; the scan stays in it.
    int prev_lo = 0, prev_hi = 0;
    for (int s = 0; s < S && prev_lo <= prev_hi; ++s) {
      int64_t* row = &best[static_cast<std::size_t>(s) * W];
      const int64_t* prev_row = s > 0 ? &best[static_cast<std::size_t>(s - 1) * W] : nullptr;
      int* arg_row = &arg[static_cast<std::size_t>(s) * W];
      int lo = L + 1, hi = -1;
      for (int j = std::max(s + 1, prev_lo + 1); j <= L - (S - 1 - s); ++j) {
        // Past the previous row's last finite entry, a stage from there that the bound
        // already rules out rules out every later j too (the bound grows with j).
        if (j > prev_hi + 1) {
          const int64_t reach = bound(s, prev_hi, j);
          if (reach > cap && reach != kInfeasible) capped = true;
          if (reach > cap) break;
        }
        int64_t cur = kInfeasible;
        int at = -1;
        const int lowest = s == 0 ? 0 : std::max(s, prev_lo);
        const int highest = s == 0 ? 0 : std::min(j - 1, prev_hi);
        for (int i = highest; i >= lowest; --i) {
          const int64_t b = bound(s, i, j);
          if (b >= cur) break;  // longer stages only get dearer by the bound
          if (b > cap) {
            capped = true;
            break;
          }
          const int64_t before = prev_row ? prev_row[i] : 0;
          if (before >= cur) continue;
          const int64_t c = cost(s, i, j);
          const int64_t v = std::max(before, c);
          if (v < cur && v <= cap) {
            cur = v;
            at = i;
          } else if (v > cap && c != kInfeasible && v != kInfeasible) {
            capped = true;
          }
        }
        row[j] = cur;
        arg_row[j] = at;
        if (cur != kInfeasible) {
          lo = std::min(lo, j);
          hi = std::max(hi, j);
        }
      }
      prev_lo = lo;
      prev_hi = hi;
    }
    const int64_t answer = best[static_cast<std::size_t>(S - 1) * W + L];
    if (answer != kInfeasible || !capped || cap == kInfeasible) {
      if (answer == kInfeasible) return {};
      return {answer, min_max_detail::trace_cuts(L, S, arg)};
    }
    cap = cap > kInfeasible / 2 ? kInfeasible : cap + cap / 4 + 1;
  }
}

}  // namespace pipescope
