#include "gui/models/plot_scale.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace pipescope::gui {

MemoryAxis memory_axis(int64_t largest_peak_bytes, int64_t capacity_bytes) {
  MemoryAxis a;
  const double capacity = static_cast<double>(capacity_bytes);
  if (largest_peak_bytes <= 0) {  // no points: the capacity, if any
    a.top = capacity > 0 ? 1.02 * capacity : 1;
    a.capacity_inside = capacity > 0;
    return a;
  }
  a.top = 1.1 * static_cast<double>(largest_peak_bytes);
  if (capacity <= 0) return a;
  if (capacity <= 1.25 * a.top) {
    a.top = std::max(a.top, 1.02 * capacity);
    a.capacity_inside = true;
  } else {
    a.capacity_beyond = true;
  }
  return a;
}

double nice_tick_step(double range, int max_ticks) {
  if (!(range > 0) || max_ticks < 1) return 1;
  const double raw = range / max_ticks;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * decade >= raw * (1 - 1e-12)) return m * decade;
  }
  return 10 * decade;
}

}  // namespace pipescope::gui
