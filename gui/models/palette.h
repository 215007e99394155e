// The colours every view uses, so a stage or an op kind looks the same everywhere:
// stages cycle through a qualitative palette; op categories (forward, backward, ...)
// have fixed colours listed with their legend labels in category order.
#pragma once

#include <QColor>
#include <QString>
#include <vector>

namespace pipescope::gui {

QColor stage_color(int stage);
// A sequential ramp (dark blue -> green -> yellow) for t in [0, 1]: stage s of K
// drawn in one overlaid chart takes ramp_color(s / (K - 1)).
QColor ramp_color(double t);
QColor category_color(const QString& category);  // forward, backward, ..., idle
struct LegendEntry {
  QString category;
  QString label;
};
const std::vector<LegendEntry>& category_legend();
inline QColor does_not_fit_color() { return QColor(214, 39, 40); }
// Memory held beyond the stash (received and sent tensors, workspace, held gradients).
inline QColor transient_color() { return QColor(55, 71, 79); }

}  // namespace pipescope::gui
