#include "gui/app/memory_view.h"

#include <QCheckBox>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

#include "core/report.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

namespace {
constexpr int kHeader = 24;   // title of the whole view
constexpr int kLegend = 22;
constexpr int kAxisLeft = 84;
constexpr int kGap = 14;
constexpr int kChartTitle = 18;
const QColor kStatic(176, 190, 197);
}  // namespace

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(140);
  zoom_ = new QCheckBox("zoom to usage", this);
  connect(zoom_, &QCheckBox::toggled, this, qOverload<>(&QWidget::update));
}

void MemoryView::set_scale_to_capacity(bool on) { zoom_->setChecked(!on); }

void MemoryView::resizeEvent(QResizeEvent*) {
  zoom_->adjustSize();
  zoom_->move(width() - zoom_->width() - 12, 2);
}

void MemoryView::set_curves(const MemoryCurves& curves) {
  curves_ = curves;
  update();
}

QRect MemoryView::stage_rect(int s) const {
  const int n = std::max<int>(1, static_cast<int>(curves_.stages.size()));
  const int cols = n <= 4 ? n : n <= 16 ? 4 : 8;
  const int rows = (n + cols - 1) / cols;
  const int w = (width() - kAxisLeft - 10) / cols;
  const int h = (height() - kHeader - kLegend) / rows;
  const int r = s / cols, c = s % cols;
  return QRect(kAxisLeft + c * w, kHeader + r * h + kChartTitle, std::max(4, w - kGap), std::max(4, h - kChartTitle - 16));
}

QColor MemoryView::stage_fill(int s) const {
  const bool fits = s < static_cast<int>(curves_.stages.size()) ? curves_.stages[s].fits : true;
  return fits ? stage_color(s) : does_not_fit_color();
}

void MemoryView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  p.setRenderHint(QPainter::Antialiasing, false);
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  QString head = "Memory per stage over the step";
  if (curves_.capacity_bytes > 0) {
    head += "   (capacity " + QString::fromStdString(format_bytes(static_cast<double>(curves_.capacity_bytes))) + ")";
  }
  p.drawText(QRect(8, 2, width() - 16, kHeader - 4), Qt::AlignLeft | Qt::AlignVCenter, head);
  p.setFont(font());
  if (curves_.stages.empty()) {
    p.drawText(rect(), Qt::AlignCenter, "no plan");
    return;
  }
  int64_t top = curves_.max_bytes();
  if (zoom_->isChecked()) {
    top = 0;
    for (const StageMemoryCurve& s : curves_.stages) top = std::max(top, s.peak_bytes);
  }
  const double ymax = std::max<double>(1.0, 1.08 * static_cast<double>(top));
  const double tend = std::max<double>(1.0, static_cast<double>(curves_.end_ns));
  for (int s = 0; s < static_cast<int>(curves_.stages.size()); ++s) {
    const StageMemoryCurve& c = curves_.stages[s];
    const QRect r = stage_rect(s);
    auto X = [&](double t) { return r.left() + t / tend * r.width(); };
    auto Y = [&](double b) { return r.bottom() - b / ymax * r.height(); };
    const QColor fill = stage_fill(s);
    // Static bytes: a band from 0 to static for the whole step.
    p.fillRect(QRectF(QPointF(X(0), Y(static_cast<double>(c.static_bytes))), QPointF(X(tend), Y(0))), kStatic);
    // Activations stacked on top: a step function.
    QPainterPath path;
    path.moveTo(X(0), Y(static_cast<double>(c.static_bytes)));
    double last = 0;
    for (const auto& [t, bytes] : c.activation) {
      path.lineTo(X(static_cast<double>(t)), Y(static_cast<double>(c.static_bytes) + last));
      path.lineTo(X(static_cast<double>(t)), Y(static_cast<double>(c.static_bytes + bytes)));
      last = static_cast<double>(bytes);
    }
    path.lineTo(X(tend), Y(static_cast<double>(c.static_bytes) + last));
    path.lineTo(X(tend), Y(static_cast<double>(c.static_bytes)));
    path.closeSubpath();
    QColor area = fill;
    area.setAlpha(c.fits ? 200 : 230);
    p.fillPath(path, area);
    // Capacity line.
    if (curves_.capacity_bytes > 0 && curves_.capacity_bytes <= ymax) {
      QPen pen(QColor(40, 40, 40), 1.5, Qt::DashLine);
      p.setPen(pen);
      const double y = Y(static_cast<double>(curves_.capacity_bytes));
      p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
    }
    p.setPen(QPen(c.fits ? QColor(150, 150, 150) : does_not_fit_color(), c.fits ? 1 : 3));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r);
    p.setPen(c.fits ? palette().color(QPalette::Text) : does_not_fit_color());
    const QString peak = QString::fromStdString(format_bytes(static_cast<double>(c.peak_bytes)));
    const QString title = c.fits ? QString("stage %1: peak %2").arg(c.stage).arg(peak)
                                 : QString("stage %1: %2, OOM").arg(c.stage).arg(peak);
    p.setFont(c.fits ? font() : bold);
    p.drawText(QRect(r.left(), r.top() - kChartTitle, r.width(), kChartTitle), Qt::AlignLeft | Qt::AlignVCenter, title);
    p.setFont(font());
    // Y labels on the first chart of each row.
    if (r.left() == kAxisLeft) {
      p.setPen(palette().color(QPalette::Text));
      for (int i = 0; i <= 2; ++i) {
        const double b = static_cast<double>(top) * i / 2;  // the top label is the capacity (or the peak)
        p.drawText(QRect(0, static_cast<int>(Y(b)) - 8, kAxisLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                   QString::fromStdString(format_bytes(b)));
      }
    }
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(r.left(), r.bottom() + 1, r.width(), 14), Qt::AlignRight | Qt::AlignTop,
               QString::number(tend / 1e6, 'f', 1) + " ms");
  }
  // Legend.
  int x = kAxisLeft;
  const int y = height() - kLegend + 3;
  auto swatch = [&](const QColor& c, const QString& label, bool dashed = false) {
    if (dashed) {
      p.setPen(QPen(QColor(40, 40, 40), 1.5, Qt::DashLine));
      p.drawLine(x, y + 8, x + 18, y + 8);
    } else {
      p.fillRect(x, y + 1, 14, 14, c);
    }
    p.setPen(palette().color(QPalette::Text));
    const int w = p.fontMetrics().horizontalAdvance(label);
    p.drawText(x + 22, y, w + 4, 16, Qt::AlignVCenter, label);
    x += 22 + w + 20;
  };
  swatch(kStatic, "weights + gradients + optimizer");
  swatch(stage_color(0), "activations (stage colour)");
  swatch(does_not_fit_color(), "does not fit");
  if (curves_.capacity_bytes > 0) swatch({}, "device capacity", true);
}

}  // namespace pipescope::gui
