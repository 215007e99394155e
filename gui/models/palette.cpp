#include "gui/models/palette.h"

#include <algorithm>

namespace pipescope::gui {

QColor stage_color(int stage) {
  // Tableau 10 without its red (red means "does not fit").
  static const QColor colors[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
                                  QColor(148, 103, 189), QColor(140, 86, 75), QColor(227, 119, 194),
                                  QColor(127, 127, 127), QColor(188, 189, 34), QColor(23, 190, 207)};
  const int n = static_cast<int>(sizeof colors / sizeof colors[0]);
  return colors[((stage % n) + n) % n];
}

QColor ramp_color(double t) {
  // Anchors of a viridis-like ramp; red is left out (it means "does not fit").
  static const QColor anchors[] = {QColor(68, 1, 84), QColor(59, 82, 139), QColor(33, 145, 140),
                                   QColor(94, 201, 98), QColor(253, 231, 37)};
  const double x = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(x));
  const double f = x - i;
  auto mix = [&](int a, int b) { return static_cast<int>(a + (b - a) * f + 0.5); };
  return QColor(mix(anchors[i].red(), anchors[i + 1].red()), mix(anchors[i].green(), anchors[i + 1].green()),
                mix(anchors[i].blue(), anchors[i + 1].blue()));
}

QColor schedule_color(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return QColor(31, 119, 180);
    case ScheduleKind::OneFOneB: return QColor(255, 127, 14);
    case ScheduleKind::Interleaved: return QColor(44, 160, 44);
    case ScheduleKind::ZeroBubbleH1: return QColor(148, 103, 189);
    case ScheduleKind::ZeroBubbleH2: return QColor(140, 86, 75);
    case ScheduleKind::ZeroBubbleV: return QColor(227, 119, 194);
    case ScheduleKind::DualPipeV: return QColor(127, 127, 127);
    case ScheduleKind::ZeroBubbleAuto: return QColor(188, 189, 34);
    case ScheduleKind::LoopedBFS: return QColor(152, 223, 138);
    case ScheduleKind::InterleavedZeroBubble: return QColor(90, 60, 160);
    case ScheduleKind::VMin: return QColor(247, 182, 210);
    case ScheduleKind::VHalf: return QColor(219, 219, 141);
    case ScheduleKind::VZeroBubble: return QColor(158, 218, 229);
    case ScheduleKind::PipeDream: return QColor(23, 190, 207);
    case ScheduleKind::PipeDream2BW: return QColor(0, 0, 139);
  }
  return QColor(200, 200, 200);
}

QColor category_color(const QString& c) {
  if (c == "forward") return QColor(66, 133, 244);
  if (c == "backward") return QColor(52, 168, 83);
  if (c == "backward_input") return QColor(52, 168, 83);
  if (c == "backward_weight") return QColor(251, 188, 5);
  if (c == "recompute") return QColor(171, 71, 188);
  if (c == "transfer") return QColor(120, 144, 156);
  if (c == "allreduce") return QColor(0, 150, 136);
  if (c == "runtime") return QColor(229, 115, 115);  // the runtime's own time (core/runtime_costs.h)
  if (c == "idle") return QColor(245, 245, 245);
  return QColor(200, 200, 200);
}

const std::vector<LegendEntry>& category_legend() {
  static const std::vector<LegendEntry> legend = {
      {"forward", "forward"},          {"backward", "backward (B / input grad)"},
      {"backward_weight", "weight grad (W)"}, {"recompute", "recompute"},
      {"transfer", "transfer"},        {"allreduce", "all-reduce"},
      {"runtime", "runtime (action, message, step)"},
      {"idle", "idle"}};
  return legend;
}

}  // namespace pipescope::gui
