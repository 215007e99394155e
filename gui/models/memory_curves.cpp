#include "gui/models/memory_curves.h"

#include <algorithm>

namespace pipescope::gui {

int64_t MemoryCurves::max_bytes() const {
  int64_t m = capacity_bytes;
  for (const StageMemoryCurve& s : stages) m = std::max(m, s.peak_bytes);
  return m;
}

MemoryCurves memory_curves(const StepReport& report) {
  MemoryCurves out;
  out.capacity_bytes = report.memory_limit_bytes;
  out.end_ns = report.step_ns;
  for (const StageReport& st : report.stages) {
    StageMemoryCurve c;
    c.stage = st.index;
    c.static_bytes = st.static_bytes;
    c.peak_bytes = st.peak_memory_bytes;
    c.fits = st.fits;
    c.activation.push_back({0, 0});
    out.stages.push_back(std::move(c));
  }
  for (const MemorySample& m : report.timeline.memory) {
    if (m.device < 0 || m.device >= static_cast<int>(out.stages.size())) continue;
    auto& steps = out.stages[m.device].activation;
    if (steps.back().first == m.time_ns) {
      steps.back().second = m.activation_bytes;
    } else {
      steps.push_back({m.time_ns, m.activation_bytes});
    }
  }
  return out;
}

std::vector<int64_t> column_max(const StageMemoryCurve& curve, int64_t end_ns, int columns) {
  std::vector<int64_t> out(static_cast<std::size_t>(std::max(0, columns)), 0);
  if (columns <= 0 || end_ns <= 0 || curve.activation.empty()) return out;
  const double width = static_cast<double>(end_ns) / columns;
  int64_t holding = 0;
  int column = 0;
  for (const auto& [t, bytes] : curve.activation) {
    const int c = std::clamp(static_cast<int>(static_cast<double>(t) / width), 0, columns - 1);
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
