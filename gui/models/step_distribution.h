// The distribution view's data: the current plan's step sampled under jitter
// (sim/distribution.h, the calls `simulate --samples` makes), binned into a histogram
// with p50 / p99 marks, and how often each stage was the critical path's bottleneck.
// Invariant: the counts sum to the samples, and every mark lies in [lo_ms, lo_ms + bins x bin_ms].
//   StepHistogram h = sample_plan(evaluation, hardware, {.samples = 1000, .cv = 0.05}, 40);
#pragma once

#include <cstdint>
#include <vector>

#include "core/hardware.h"
#include "gui/models/plan_evaluation.h"
#include "sim/distribution.h"

namespace pipescope::gui {

struct StepHistogram {
  int samples = 0;
  double lo_ms = 0, bin_ms = 0;      // bin i covers [lo + i bin, lo + (i + 1) bin)
  std::vector<int64_t> counts;
  double deterministic_ms = 0, mean_ms = 0, p50_ms = 0, p90_ms = 0, p99_ms = 0;
  std::vector<int64_t> bottleneck_counts;  // per stage (pipeline position)
  int64_t max_count() const;
  bool empty() const { return samples == 0; }
};

// Bins `d` into `bins` equal bins from its min to its max (one bin when they are equal).
StepHistogram make_histogram(const StepDistribution& d, int bins);

// Samples the evaluated plan; the sample count is cut so that no more than
// kMaxSampledOps ops are simulated (the view computes on the GUI thread).
inline constexpr int64_t kMaxSampledOps = 20'000'000;
StepHistogram sample_plan(const Evaluation& e, const Hardware& hardware, JitterSpec spec, int bins);

}  // namespace pipescope::gui
