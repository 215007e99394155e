// The colours every view uses, so a stage or an op kind looks the same everywhere:
// stages cycle through a qualitative palette; op categories (forward, backward, ...)
// have fixed colours listed with their legend labels in category order; every
// schedule has its own colour (one table, schedule_color).
#pragma once

#include <QColor>
#include <QString>
#include <vector>

#include "core/schedule.h"

namespace pipescope::gui {

QColor stage_color(int stage);
// A sequential ramp (dark blue -> green -> yellow) for t in [0, 1]: stage s of K
// drawn in one overlaid chart takes ramp_color(s / (K - 1)).
QColor ramp_color(double t);
QColor category_color(const QString& category);  // forward, backward, ..., idle
// The plans chart's colour of each built-in schedule: all distinct (at least 60 apart in
// RGB) and none the does-not-fit red; a new ScheduleKind does not compile (-Wswitch,
// -Werror) until it has one here.
QColor schedule_color(ScheduleKind kind);
struct LegendEntry {
  QString category;
  QString label;
};
const std::vector<LegendEntry>& category_legend();
inline QColor does_not_fit_color() { return QColor(214, 39, 40); }
// Memory held beyond the stash (received and sent tensors, workspace, held gradients).
inline QColor transient_color() { return QColor(55, 71, 79); }

}  // namespace pipescope::gui
