#include "gui/models/plot_scale.h"

#include <cmath>
#include <initializer_list>

namespace pipescope::gui {

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
