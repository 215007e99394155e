#include "gui/models/memory_curves.h"

#include <algorithm>

namespace pipescope::gui {

int64_t StageMemoryCurve::peak_transient_bytes() const {
  int64_t m = 0;
  for (const MemoryStep& s : steps) m = std::max(m, s.transient_bytes);
  return m;
}

int64_t MemoryCurves::max_bytes() const {
  int64_t m = capacity_bytes;
  for (const StageMemoryCurve& s : stages) m = std::max(m, s.peak_bytes);
  return m;
}

bool MemoryCurves::has_transients() const {
  return std::any_of(stages.begin(), stages.end(), [](const StageMemoryCurve& s) { return s.peak_transient_bytes() > 0; });
}

bool MemoryCurves::has_weight_versions() const {
  return std::any_of(stages.begin(), stages.end(), [](const StageMemoryCurve& s) {
    return std::any_of(s.steps.begin(), s.steps.end(), [](const MemoryStep& m) { return m.weight_version_bytes > 0; });
  });
}

MemoryCurves memory_curves(const StepReport& report) {
  MemoryCurves out;
  out.capacity_bytes = report.memory_limit_bytes;
  out.end_ns = report.timeline_end_ns();  // every step when several were simulated
  for (const PositionReport& st : report.positions) {
    StageMemoryCurve c;
    c.stage = st.index;
    c.static_bytes = st.static_bytes;
    c.peak_bytes = st.peak_memory_bytes;
    c.transient_bytes = st.transient_bytes;
    c.fits = st.fits;
    c.steps.push_back({});
    out.stages.push_back(std::move(c));
  }
  for (const MemorySample& m : report.timeline.memory) {
    if (m.position < 0 || m.position >= static_cast<int>(out.stages.size())) continue;
    auto& steps = out.stages[m.position].steps;
    const MemoryStep step{m.time_ns, m.activation_bytes, m.transient_bytes, m.weight_version_bytes};
    if (steps.back().time_ns == m.time_ns) {
      steps.back() = step;
    } else {
      steps.push_back(step);
    }
  }
  return out;
}

std::vector<int64_t> column_max(const StageMemoryCurve& curve, int64_t end_ns, int columns) {
  std::vector<int64_t> out(static_cast<std::size_t>(std::max(0, columns)), 0);
  if (columns <= 0 || end_ns <= 0 || curve.steps.empty()) return out;
  const double width = static_cast<double>(end_ns) / columns;
  int64_t holding = 0;
  int column = 0;
  for (const MemoryStep& step : curve.steps) {
    const int64_t bytes = step.above_static();
    const int c = std::clamp(static_cast<int>(static_cast<double>(step.time_ns) / width), 0, columns - 1);
    for (; column < c; ++column) {  // slices the previous value held through
      out[static_cast<std::size_t>(column + 1)] = std::max(out[static_cast<std::size_t>(column + 1)], holding);
    }
    out[static_cast<std::size_t>(c)] = std::max(out[static_cast<std::size_t>(c)], bytes);
    holding = bytes;
  }
  for (; column + 1 < columns; ++column) out[static_cast<std::size_t>(column + 1)] = holding;
  return out;
}

}  // namespace pipescope::gui
