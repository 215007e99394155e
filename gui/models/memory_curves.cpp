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

}  // namespace pipescope::gui
