// Device spans from a report's timeline (see stage_span.h): only op events on device
// tracks 0..K-1 count; transfers and all-reduces live on other tracks.
#include "sim/stage_span.h"

#include <algorithm>
#include <limits>

namespace pipescope {

std::vector<int64_t> device_spans(const StepReport& report) {
  const int K = report.num_positions;
  std::vector<int64_t> first(K, std::numeric_limits<int64_t>::max()), last(K, 0);
  for (const TimelineEvent& e : report.timeline.events) {
    if (e.track < 0 || e.track >= K || e.category == "transfer" || e.category == "allreduce") continue;
    first[e.track] = std::min(first[e.track], e.start_ns);
    last[e.track] = std::max(last[e.track], e.start_ns + e.duration_ns);
  }
  std::vector<int64_t> spans(K, 0);
  for (int d = 0; d < K; ++d) {
    if (first[d] != std::numeric_limits<int64_t>::max()) spans[d] = last[d] - first[d];
  }
  return spans;
}

int64_t longest_span(const StepReport& report) {
  const std::vector<int64_t> spans = device_spans(report);
  return spans.empty() ? 0 : *std::max_element(spans.begin(), spans.end());
}

}  // namespace pipescope
