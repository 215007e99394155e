// A linear map from data values to pixels and back, for the charts that are not
// timelines (the plans scatter, the overlaid memory chart). Invariant:
// value(px(v)) == v up to rounding; p0 < p1 or p0 > p1 (y grows downwards) both work.
//   LinearScale x{0, 141e9, 80, 980};  double left = x.px(bytes);
#pragma once

namespace pipescope::gui {

struct LinearScale {
  double v0 = 0, v1 = 1;  // data range
  double p0 = 0, p1 = 1;  // pixel range

  double px(double v) const { return p0 + (v - v0) / (v1 - v0 == 0 ? 1 : v1 - v0) * (p1 - p0); }
  double value(double p) const { return v0 + (p - p0) / (p1 - p0 == 0 ? 1 : p1 - p0) * (v1 - v0); }
};

// A tick spacing of 1, 2 or 5 x 10^k, the smallest giving at most `max_ticks` ticks over `range`.
double nice_tick_step(double range, int max_ticks);

}  // namespace pipescope::gui
