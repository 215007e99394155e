// Maps simulated time (integer ns) to horizontal pixels and back, with zoom and pan.
// Invariant: x_of(time_of(x)) == x up to rounding to whole ns, and zoom(f, x) keeps
// the time under pixel x where it was. ns_per_px never drops below kMinNsPerPx, so a
// view can never zoom in past one pixel per nanosecond.
//   TimeAxis a; a.fit(0, step_ns, 120, 800);   // the whole step over 800 px from x=120
//   a.zoom(2.0, mouse_x); a.pan(-drag_dx);
#pragma once

#include <cstdint>

namespace pipescope::gui {

struct TimeAxis {
  static constexpr double kMinNsPerPx = 1.0;

  double view_start_ns = 0;  // time at the left edge of the plot area
  double ns_per_px = 1.0;
  double left_px = 0;        // x of the plot area's left edge
  double width_px = 1;

  double x_of(double time_ns) const { return left_px + (time_ns - view_start_ns) / ns_per_px; }
  int64_t time_of(double x) const;
  double view_end_ns() const { return view_start_ns + width_px * ns_per_px; }

  // Shows [begin, end) across `width` pixels starting at `left`.
  void fit(int64_t begin_ns, int64_t end_ns, double left, double width);
  // Magnifies by `factor` (> 1 zooms in) keeping the time under `anchor_x` fixed.
  void zoom(double factor, double anchor_x);
  // Moves the view by `dx` pixels (positive shows later times).
  void pan(double dx);
  // Keeps a width change from moving the left edge's time.
  void resize(double left, double width);
  // A tick spacing of 1, 2 or 5 x 10^k ns, the smallest at least `min_px` pixels wide.
  double tick_step_ns(double min_px) const;
};

}  // namespace pipescope::gui
