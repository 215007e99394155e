// Histogram of sampled steps for the distribution view (gui/models/step_distribution.h).
#include "gui/models/step_distribution.h"

#include <algorithm>
#include <cmath>

#include "core/plan.h"

namespace pipescope::gui {

int64_t StepHistogram::max_count() const {
  return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
}

StepHistogram make_histogram(const StepDistribution& d, int bins) {
  StepHistogram h;
  h.samples = d.samples;
  if (d.samples == 0 || d.step_ns.empty()) return h;
  bins = std::max(1, bins);
  if (d.max_ns == d.min_ns) bins = 1;
  const double lo = static_cast<double>(d.min_ns) / 1e6, hi = static_cast<double>(d.max_ns) / 1e6;
  h.lo_ms = lo;
  h.bin_ms = hi > lo ? (hi - lo) / bins : 1e-6;
  h.counts.assign(bins, 0);
  for (int64_t x : d.step_ns) {
    const int i = static_cast<int>((static_cast<double>(x) / 1e6 - lo) / h.bin_ms);
    h.counts[std::clamp(i, 0, bins - 1)]++;
  }
  h.deterministic_ms = static_cast<double>(d.deterministic_ns) / 1e6;
  h.mean_ms = d.mean_ns / 1e6;
  h.p50_ms = static_cast<double>(d.p50_ns) / 1e6;
  h.p90_ms = static_cast<double>(d.p90_ns) / 1e6;
  h.p99_ms = static_cast<double>(d.p99_ns) / 1e6;
  h.bottleneck_counts = d.critical_counts;
  return h;
}

StepHistogram sample_plan(const Evaluation& e, const Hardware& hardware, JitterSpec spec, int bins) {
  const Schedule& schedule = e.schedule;
  const int64_t ops = std::max<int64_t>(1, static_cast<int64_t>(schedule.num_ops()));
  spec.samples = static_cast<int>(std::clamp<int64_t>(kMaxSampledOps / ops, 1, spec.samples));
  spec.p2p = e.p2p;  // as the evaluation was simulated (one step each: the sampler takes no optimizer step)
  spec.runtime = e.runtime.get();
  return make_histogram(sample_steps(schedule, e.costs, hardware, spec), bins);
}

}  // namespace pipescope::gui
