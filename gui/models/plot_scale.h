// A linear map from data values to pixels and back, for the charts that are not
// timelines (the plans scatter, the overlaid memory chart). Invariant:
// value(px(v)) == v up to rounding; p0 < p1 or p0 > p1 (y grows downwards) both work.
//   LinearScale x{0, 141e9, 80, 980};  double left = x.px(bytes);
#pragma once

#include <cstdint>

namespace pipescope::gui {

struct LinearScale {
  double v0 = 0, v1 = 1;  // data range
  double p0 = 0, p1 = 1;  // pixel range

  double px(double v) const { return p0 + (v - v0) / (v1 - v0 == 0 ? 1 : v1 - v0) * (p1 - p0); }
  double value(double p) const { return v0 + (p - p0) / (p1 - p0 == 0 ? 1 : p1 - p0) * (v1 - v0); }
};

// The plans chart's memory axis: zoomed to the points, 0 to 1.1 x the largest peak, and
// stretched to 1.02 x the device memory when that is at most 1.25 x further (the
// capacity line then drawn where it is); a capacity further out is marked at the right
// edge instead, so the points never crowd into a fifth of the chart.
//   MemoryAxis a = memory_axis(20 << 30, 141LL << 30);  // top 22 GiB, capacity beyond
struct MemoryAxis {
  double top = 1;                // the axis end, bytes
  bool capacity_inside = false;  // capacity > 0 and drawn at its value
  bool capacity_beyond = false;  // capacity > top: marked at the right edge
};
MemoryAxis memory_axis(int64_t largest_peak_bytes, int64_t capacity_bytes);

// A tick spacing of 1, 2 or 5 x 10^k, the smallest giving at most `max_ticks` ticks over `range`.
double nice_tick_step(double range, int max_ticks);

}  // namespace pipescope::gui
