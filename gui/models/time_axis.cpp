#include "gui/models/time_axis.h"

#include <algorithm>
#include <cmath>

namespace pipescope::gui {

int64_t TimeAxis::time_of(double x) const { return std::llround(view_start_ns + (x - left_px) * ns_per_px); }

void TimeAxis::fit(int64_t begin_ns, int64_t end_ns, double left, double width) {
  left_px = left;
  width_px = std::max(1.0, width);
  view_start_ns = static_cast<double>(begin_ns);
  const double span = static_cast<double>(std::max<int64_t>(1, end_ns - begin_ns));
  ns_per_px = std::max(kMinNsPerPx, span / width_px);
}

void TimeAxis::zoom(double factor, double anchor_x) {
  if (!(factor > 0)) return;
  const double anchor_time = view_start_ns + (anchor_x - left_px) * ns_per_px;
  ns_per_px = std::max(kMinNsPerPx, ns_per_px / factor);
  view_start_ns = anchor_time - (anchor_x - left_px) * ns_per_px;
}

void TimeAxis::pan(double dx) { view_start_ns += dx * ns_per_px; }

void TimeAxis::resize(double left, double width) {
  left_px = left;
  width_px = std::max(1.0, width);
}

double TimeAxis::tick_step_ns(double min_px) const {
  const double wanted = std::max(1.0, min_px * ns_per_px);
  double decade = std::pow(10.0, std::floor(std::log10(wanted)));
  for (;;) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * decade >= wanted) return m * decade;
    }
    decade *= 10;
  }
}

}  // namespace pipescope::gui
