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
const QColor kVersions(120, 138, 150);  // extra weight versions: a darker shade of the static band
const QColor kHost(30, 90, 200);     // what is on the host under offload: a dotted line

// The area between two step functions of a curve, lo(step) <= hi(step), from t = 0 to
// tend: the upper edge left to right, then the lower edge back. An edge gets points only
// where its value changes (a constant one is a straight line), so a band costs what its
// changes cost.
template <class ToX, class ToY, class Lo, class Hi>
QPainterPath step_band(const std::vector<MemoryStep>& steps, double tend, ToX X, ToY Y, Lo lo, Hi hi) {
  QPainterPath path;
  if (steps.empty()) return path;
  auto edge = [&](auto value, bool forward) {
    const int n = static_cast<int>(steps.size());
    for (int k = 0; k < n; ++k) {
      const int i = forward ? k : n - 1 - k;
      const double t = static_cast<double>(steps[i].time_ns);
      const double before = static_cast<double>(value(steps[i > 0 ? i - 1 : 0]));
      const double at = static_cast<double>(value(steps[i]));
      if (before == at) continue;
      if (forward) {
        path.lineTo(X(t), Y(before));
        path.lineTo(X(t), Y(at));
      } else {
        path.lineTo(X(t), Y(at));
        path.lineTo(X(t), Y(before));
      }
    }
  };
  path.moveTo(X(0), Y(static_cast<double>(hi(steps.front()))));
  edge(hi, true);
  path.lineTo(X(tend), Y(static_cast<double>(hi(steps.back()))));
  path.lineTo(X(tend), Y(static_cast<double>(lo(steps.back()))));
  edge(lo, false);
  path.lineTo(X(0), Y(static_cast<double>(lo(steps.front()))));
  path.closeSubpath();
  return path;
}
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
  if (overlaid()) {
    return QRect(kAxisLeft, kHeader + kChartTitle, std::max(4, width() - kAxisLeft - 24),
                 std::max(4, height() - kHeader - kChartTitle - kLegend - 20));
  }
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
  paint_header(p);
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
  if (overlaid()) {
    paint_overlay(p, top, ymax, tend);
    paint_legend(p);
    return;
  }
  for (int s = 0; s < static_cast<int>(curves_.stages.size()); ++s) {
    paint_stage_bands(p, s, ymax, tend);
    paint_stage_labels(p, s, top, ymax, tend);
  }
  paint_legend(p);
}

// The view's title, with the device capacity; leaves the normal font set.
void MemoryView::paint_header(QPainter& p) {
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
}

// Stage s's chart: static band, weight versions, activations, transients, capacity line.
void MemoryView::paint_stage_bands(QPainter& p, int s, double ymax, double tend) {
  const StageMemoryCurve& c = curves_.stages[s];
  const QRect r = stage_rect(s);
  auto X = [&](double t) { return r.left() + t / tend * r.width(); };
  auto Y = [&](double b) { return r.bottom() - b / ymax * r.height(); };
  const QColor fill = stage_fill(s);
  // Static bytes: a band from 0 to static for the whole step.
  p.fillRect(QRectF(QPointF(X(0), Y(static_cast<double>(c.static_bytes))), QPointF(X(tend), Y(0))), kStatic);
  // Extra weight versions (pipedream, 2bw) on the static band, activations on them,
  // transients on the activations: step functions.
  auto base = [&](const MemoryStep& m) { return c.static_bytes + m.weight_version_bytes; };
  if (curves_.has_weight_versions()) {
    p.fillPath(step_band(c.steps, tend, X, Y, [&](const MemoryStep&) { return c.static_bytes; }, base), kVersions);
  }
  QColor area = fill;
  area.setAlpha(c.fits ? 200 : 230);
  p.fillPath(step_band(c.steps, tend, X, Y, base, [&](const MemoryStep& m) { return base(m) + m.activation_bytes; }),
             area);
  if (c.peak_transient_bytes() > 0) {
    p.fillPath(step_band(c.steps, tend, X, Y, [&](const MemoryStep& m) { return base(m) + m.activation_bytes; },
                         [&](const MemoryStep& m) { return c.static_bytes + m.above_static(); }),
               transient_color());
  }
  // What is on the host (offload): a dotted step line from the chart's floor.
  if (c.host.size() > 1) {
    QPolygonF line;
    for (std::size_t i = 0; i < c.host.size(); ++i) {
      const double y = Y(static_cast<double>(c.host[i].host_bytes));
      if (i > 0) line << QPointF(X(static_cast<double>(c.host[i].time_ns)), line.back().y());
      line << QPointF(X(static_cast<double>(c.host[i].time_ns)), y);
    }
    line << QPointF(X(tend), line.back().y());
    p.setPen(QPen(kHost, 1.5, Qt::DotLine));
    p.drawPolyline(line);
  }
  // Capacity line.
  if (curves_.capacity_bytes > 0 && curves_.capacity_bytes <= ymax) {
    QPen pen(QColor(40, 40, 40), 1.5, Qt::DashLine);
    p.setPen(pen);
    const double y = Y(static_cast<double>(curves_.capacity_bytes));
    p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
  }
}

// Stage s's frame (red when it does not fit), title with its peak, y labels on the
// first chart of each row, and the step's end time.
void MemoryView::paint_stage_labels(QPainter& p, int s, int64_t top, double ymax, double tend) {
  const StageMemoryCurve& c = curves_.stages[s];
  const QRect r = stage_rect(s);
  auto Y = [&](double b) { return r.bottom() - b / ymax * r.height(); };
  QFont bold = font();
  bold.setBold(true);
  p.setPen(QPen(c.fits ? QColor(150, 150, 150) : does_not_fit_color(), c.fits ? 1 : 3));
  p.setBrush(Qt::NoBrush);
  p.drawRect(r);
  p.setPen(c.fits ? palette().color(QPalette::Text) : does_not_fit_color());
  const QString peak = QString::fromStdString(format_bytes(static_cast<double>(c.peak_bytes)));
  QString title = c.fits ? QString("stage %1: peak %2").arg(c.stage).arg(peak)
                         : QString("stage %1: %2, OOM").arg(c.stage).arg(peak);
  if (c.transient_bytes > 0) {
    title += QString(" (transients %1)").arg(QString::fromStdString(format_bytes(static_cast<double>(c.transient_bytes))));
  }
  p.setFont(c.fits ? font() : bold);
  p.drawText(QRect(r.left(), r.top() - kChartTitle, r.width(), kChartTitle), Qt::AlignLeft | Qt::AlignVCenter, title);
  p.setFont(font());
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

void MemoryView::paint_legend(QPainter& p) {
  int x = kAxisLeft;
  const int y = height() - kLegend + 3;
  auto swatch = [&](const QColor& c, const QString& label, bool dashed = false, bool empty = false) {
    if (empty) {
      p.setPen(palette().color(QPalette::Text));
      p.drawRect(x, y + 1, 13, 13);
    } else if (dashed) {
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
  if (overlaid()) {
    // The stage ramp: stage 0 at the left end, stage K-1 at the right.
    const int n = static_cast<int>(curves_.stages.size());
    p.setPen(palette().color(QPalette::Text));
    p.drawText(x, y, 60, 16, Qt::AlignVCenter, "stage 0");
    x += 56;
    for (int i = 0; i < 120; ++i) p.fillRect(x + i, y + 2, 1, 12, ramp_color(i / 119.0));
    x += 126;
    p.drawText(x, y, 80, 16, Qt::AlignVCenter, QString("stage %1").arg(n - 1));
    x += 80;
    swatch(kStatic, "weights + gradients + optimizer (lowest stage)");
    p.drawText(x, y, 200, 16, Qt::AlignVCenter, "lines: + activations + transients");
    x += 200;
  } else {
    swatch(kStatic, "weights + gradients + optimizer");
    if (curves_.has_weight_versions()) swatch(kVersions, "weight versions (asynchronous)");
    swatch(stage_color(0), "activations (stage colour)");
    if (curves_.has_transients()) {
      swatch(transient_color(), "transients (in flight, workspace)");
    } else {
      swatch(QColor(), "transients not counted", false, true);
    }
    if (curves_.has_host()) {
      p.setPen(QPen(kHost, 1.5, Qt::DotLine));
      p.drawLine(x, y + 8, x + 18, y + 8);
      p.setPen(palette().color(QPalette::Text));
      const QString label = "on the host (offload)";
      p.drawText(x + 22, y, p.fontMetrics().horizontalAdvance(label) + 4, 16, Qt::AlignVCenter, label);
      x += 42 + p.fontMetrics().horizontalAdvance(label);
    }
  }
  swatch(does_not_fit_color(), "does not fit");
  if (curves_.capacity_bytes > 0) swatch({}, "device capacity", true);
}

void MemoryView::paint_overlay(QPainter& p, int64_t top, double ymax, double tend) {
  const QRect r = stage_rect(0);
  const int n = static_cast<int>(curves_.stages.size());
  auto X = [&](double t) { return r.left() + t / tend * r.width(); };
  auto Y = [&](double b) { return r.bottom() - b / ymax * r.height(); };
  p.setRenderHint(QPainter::Antialiasing, false);
  int64_t lowest_static = curves_.stages.front().static_bytes;
  for (const StageMemoryCurve& c : curves_.stages) lowest_static = std::min(lowest_static, c.static_bytes);
  p.fillRect(QRectF(QPointF(X(0), Y(static_cast<double>(lowest_static))), QPointF(X(tend), Y(0))), kStatic);
  // One point per pixel column (its largest value), so a curve of thousands of steps
  // costs what the chart's width costs and no peak is lost.
  const int columns = std::max(1, r.width());
  int oom = 0;
  for (int s = 0; s < n; ++s) {
    const StageMemoryCurve& c = curves_.stages[s];
    const std::vector<int64_t> top_of = column_max(c, curves_.end_ns, columns);
    QPolygonF line;
    line.reserve(columns);
    const double base = static_cast<double>(c.static_bytes);
    for (int x = 0; x < columns; ++x) line << QPointF(r.left() + x, Y(base + static_cast<double>(top_of[x])));
    oom += c.fits ? 0 : 1;
    p.setPen(QPen(c.fits ? ramp_color(n > 1 ? s / (n - 1.0) : 0) : does_not_fit_color(), c.fits ? 1 : 2));
    p.drawPolyline(line);
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  if (curves_.capacity_bytes > 0 && curves_.capacity_bytes <= ymax) {
    p.setPen(QPen(QColor(40, 40, 40), 1.5, Qt::DashLine));
    const double y = Y(static_cast<double>(curves_.capacity_bytes));
    p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
  }
  p.setPen(QColor(150, 150, 150));
  p.drawRect(r);
  int worst = 0;
  for (int s = 1; s < n; ++s) worst = curves_.stages[s].peak_bytes > curves_.stages[worst].peak_bytes ? s : worst;
  p.setPen(oom ? does_not_fit_color() : palette().color(QPalette::Text));
  p.drawText(QRect(r.left(), r.top() - kChartTitle, r.width(), kChartTitle), Qt::AlignLeft | Qt::AlignVCenter,
             QString("%1 stages overlaid; highest peak: stage %2, %3%4")
                 .arg(n).arg(worst)
                 .arg(QString::fromStdString(format_bytes(static_cast<double>(curves_.stages[worst].peak_bytes))))
                 .arg(oom ? QString("; %1 stages do not fit (red)").arg(oom) : QString()));
  p.setPen(palette().color(QPalette::Text));
  for (int i = 0; i <= 4; ++i) {
    const double b = static_cast<double>(top) * i / 4;
    p.drawText(QRect(0, static_cast<int>(Y(b)) - 8, kAxisLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
               QString::fromStdString(format_bytes(b)));
  }
  p.drawText(QRect(r.left(), r.bottom() + 1, r.width(), 14), Qt::AlignLeft | Qt::AlignTop, "0 ms");
  p.drawText(QRect(r.left(), r.bottom() + 1, r.width(), 14), Qt::AlignRight | Qt::AlignTop,
             QString::number(tend / 1e6, 'f', 1) + " ms");
}

}  // namespace pipescope::gui
