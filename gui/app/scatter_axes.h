// The frame of the plans scatter (plans_view): light grid lines and tick
// labels at nice steps over each scale's range (from the first step at or above its
// start), the two axis titles, and the plot's grey border. Geometry is the scales'.
#pragma once

#include <QPainter>
#include <QRect>
#include <QString>

#include "gui/models/plot_scale.h"

namespace pipescope::gui {

// `left`: the margin left of the plot, where the y tick labels stand right-aligned.
void paint_scatter_axes(QPainter& p, const QColor& text, const QRect& plot, const LinearScale& x, const LinearScale& y,
                        int left, const QString& x_title, const QString& y_title);

}  // namespace pipescope::gui
