// gui/app/scatter_axes.h: the grid, ticks and titles the plans scatter draws.
#include "gui/app/scatter_axes.h"

#include <algorithm>
#include <cmath>

namespace pipescope::gui {

void paint_scatter_axes(QPainter& p, const QColor& text, const QRect& plot, const LinearScale& x, const LinearScale& y,
                        int left, const QString& x_title, const QString& y_title) {
  const QColor grid(0, 0, 0, 25);
  const double xs = nice_tick_step(x.v1 - x.v0, std::max(2, plot.width() / 90));
  for (double v = std::ceil(x.v0 / xs) * xs; v <= x.v1; v += xs) {
    const int px = static_cast<int>(std::lround(x.px(v)));
    p.setPen(grid);
    p.drawLine(px, plot.top(), px, plot.bottom());
    p.setPen(text);
    p.drawText(QRect(px - 40, plot.bottom() + 4, 80, 16), Qt::AlignCenter, QString::number(v, 'g', 4));
  }
  const double ys = nice_tick_step(y.v1 - y.v0, std::max(2, plot.height() / 50));
  for (double v = std::ceil(y.v0 / ys) * ys; v <= y.v1; v += ys) {
    const int py = static_cast<int>(std::lround(y.px(v)));
    p.setPen(grid);
    p.drawLine(plot.left(), py, plot.right(), py);
    p.setPen(text);
    p.drawText(QRect(0, py - 8, left - 6, 16), Qt::AlignRight | Qt::AlignVCenter, QString::number(v, 'g', 5));
  }
  p.drawText(QRect(plot.left(), plot.bottom() + 20, plot.width(), 16), Qt::AlignCenter, x_title);
  p.save();
  p.translate(12, plot.center().y());
  p.rotate(-90);
  p.drawText(QRect(-100, -8, 200, 16), Qt::AlignCenter, y_title);
  p.restore();
  p.setPen(QColor(160, 160, 160));
  p.setBrush(Qt::NoBrush);
  p.drawRect(plot);
}

}  // namespace pipescope::gui
