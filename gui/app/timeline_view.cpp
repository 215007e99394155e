#include "gui/app/timeline_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <set>

#include "gui/models/palette.h"
#include "gui/models/timeline_model.h"

namespace pipescope::gui {

namespace {
constexpr int kTitleHeight = 22;
constexpr int kAxisHeight = 22;
constexpr int kLegendHeight = 26;
constexpr int kRightMargin = 12;
const QColor kBusy(31, 78, 121);  // density mode: a fully busy column
}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(160);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);
}

void TimelineView::set_model(const TimelineModel* model) {
  model_ = model;
  if (model_) {
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
      hovered_ = -1;
      relayout();
      if (user_zoomed_) {
        axis_.resize(plot_rect().left(), plot_rect().width());  // the label column may have changed
      } else {
        fit();
      }
      update();
    });
  }
  relayout();
  fit();
}

void TimelineView::set_stage_stripes(bool on) {
  stripes_ = on;
  update();
}

void TimelineView::set_title(const QString& title) {
  title_ = title;
  update();
}

void TimelineView::set_link_rows(LinkRows mode) {
  link_rows_ = mode;
  relayout();
  update();
}

void TimelineView::set_min_label_width(int px) {
  min_label_width_ = px;
  relayout();
  update();
}

void TimelineView::relayout() {
  rows_.clear();
  label_width_ = 78;
  if (!model_) return;
  std::vector<QString> names;
  for (int t = 0; t < model_->track_count(); ++t) names.push_back(model_->track_name(t));
  const int height = std::max(10, this->height() - kTitleHeight - kAxisHeight - kLegendHeight - 4);
  rows_ = timeline_rows(names, height, fontMetrics().height(), link_rows_);
  int widest = 60;
  for (const TimelineRow& r : rows_) widest = std::max(widest, fontMetrics().horizontalAdvance(r.label));
  label_width_ = std::max(min_label_width_, std::min(widest, 220) + 18);
  const QRect plot = plot_rect();
  axis_.resize(plot.left(), plot.width());
}

QRect TimelineView::plot_rect() const {
  const int top = kTitleHeight + kAxisHeight;
  return QRect(label_width(), top, std::max(10, width() - label_width() - kRightMargin),
               std::max(10, height() - top - kLegendHeight - 4));
}

void TimelineView::fit() {
  const QRect plot = plot_rect();
  const int64_t end = fit_end_ns_ > 0 ? fit_end_ns_ : (model_ ? model_->end_ns() : 1);
  axis_.fit(0, std::max<int64_t>(1, end), plot.left(), plot.width());
  user_zoomed_ = false;
  update();
  emit axisChanged(axis_);
}

void TimelineView::set_axis(const TimeAxis& axis) {
  if (axis.view_start_ns == axis_.view_start_ns && axis.ns_per_px == axis_.ns_per_px) return;
  axis_.view_start_ns = axis.view_start_ns;
  axis_.ns_per_px = axis.ns_per_px;
  user_zoomed_ = true;
  update();
}

int TimelineView::label_width() const { return label_width_; }

int TimelineView::row_height() const {
  const int rows = std::max<int>(1, static_cast<int>(rows_.size()));
  return std::clamp(plot_rect().height() / rows, 3, 44);
}

bool TimelineView::density_mode() const {
  return model_ && model_->mean_op_ns() > 0 && model_->mean_op_ns() / axis_.ns_per_px < kMinOpPx;
}

int TimelineView::row_at(int y) const {
  if (!model_ || y < plot_rect().top()) return -1;
  const int row = (y - plot_rect().top()) / row_height();
  return row < static_cast<int>(rows_.size()) ? row : -1;
}

int TimelineView::track_at(int y) const {
  const int row = row_at(y);
  if (row < 0) return -1;
  const TimelineRow& r = rows_[row];
  const int sub = row_height() / r.tracks();  // a group row's sub-rows
  if (sub < 2) return -1;
  const int k = (y - plot_rect().top() - row * row_height()) / sub;
  return k < r.tracks() ? r.first_track + k : -1;
}

int TimelineView::event_at(QPoint pos) const {
  const int track = track_at(pos.y());
  if (track < 0 || pos.x() < plot_rect().left() || density_mode()) return -1;
  return model_->event_at(track, axis_.time_of(pos.x()), static_cast<int64_t>(2 * axis_.ns_per_px));
}

QString TimelineView::tooltip_at(QPoint pos) const {
  const int e = event_at(pos);
  if (e >= 0) return model_->describe(e);
  const int row = row_at(pos.y());
  if (row < 0 || pos.x() < plot_rect().left() || !density_mode()) return {};
  // Density: the busy share of the row around the pointer.
  const TimelineRow& r = rows_[row];
  const double t0 = axis_.time_of(pos.x()) - kDensityBinPx * axis_.ns_per_px / 2;
  const std::vector<float> f = model_->busy_fraction(r.first_track, r.end_track, t0, kDensityBinPx * axis_.ns_per_px, 1);
  return QString("%1\nbusy %2 % around %3 ms\nzoom in to see the ops")
      .arg(r.label)
      .arg(f.empty() ? 0.0 : 100.0 * f[0], 0, 'f', 0)
      .arg(axis_.time_of(pos.x()) / 1e6, 0, 'f', 3);
}

void TimelineView::paint_axis(QPainter& p, const QRect& plot) {
  const double step = axis_.tick_step_ns(90);
  const double first = std::ceil(axis_.view_start_ns / step) * step;
  p.setPen(palette().color(QPalette::Text));
  const int decimals = step >= 1e6 ? 0 : step >= 1e5 ? 1 : step >= 1e4 ? 2 : 3;
  for (double t = first; t <= axis_.view_end_ns(); t += step) {
    const int x = static_cast<int>(std::lround(axis_.x_of(t)));
    p.setPen(QColor(0, 0, 0, 30));
    p.drawLine(x, plot.top(), x, plot.bottom());
    p.setPen(palette().color(QPalette::Text));
    p.drawLine(x, plot.top() - 4, x, plot.top());
    p.drawText(QRect(x - 45, kTitleHeight, 90, kAxisHeight - 4), Qt::AlignCenter,
               QString::number(t / 1e6, 'f', decimals) + " ms");
  }
}

void TimelineView::paint_legend(QPainter& p) {
  int x = label_width();
  const int y = height() - kLegendHeight + 4;
  const QFontMetrics fm(font());
  auto swatch = [&](const QColor& c, const QString& label) {
    p.setPen(QColor(90, 90, 90));
    p.setBrush(c);
    p.drawRect(x, y + 3, 14, 14);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(x + 20, y, fm.horizontalAdvance(label) + 4, 20, Qt::AlignVCenter, label);
    x += 20 + fm.horizontalAdvance(label) + 22;
  };
  if (density_mode()) {
    swatch(kBusy, "busy share of each column (ops narrower than 3 px: zoom in to see them)");
    swatch(category_color("idle"), "idle");
    return;
  }
  const std::set<QString> none;
  const std::set<QString>& present = model_ ? model_->categories() : none;
  for (const LegendEntry& l : category_legend()) {
    const bool shown = l.category == "idle" || present.count(l.category) ||
                       (l.category == "backward" && present.count("backward_input"));
    if (shown) swatch(category_color(l.category), l.label);
  }
}

void TimelineView::paint_row_ops(QPainter& p, const QRect& plot, const TimelineRow& row, int y, int rh) {
  // A group row stacks its tracks as unlabelled sub-rows (the group is labelled).
  const int n = row.tracks();
  const int sub = rh / n;
  for (int k = 0; k < n; ++k) {
    const int track = row.first_track + k;
    const int top = y + k * sub;
    const int h = n == 1 ? rh : sub;
    const int pad = h >= 12 ? 2 : 0;
    const std::vector<int>& ids = model_->track_events(track);
    // Start a little before the first op that begins in view (one may reach into it).
    auto it = std::lower_bound(ids.begin(), ids.end(), axis_.view_start_ns, [&](int i, double t) {
      return static_cast<double>(model_->events()[i].start_ns) < t;
    });
    it -= std::min<std::ptrdiff_t>(it - ids.begin(), 64);
    for (; it != ids.end(); ++it) {
      const int i = *it;
      const TimelineEvent& e = model_->events()[i];
      const double x0 = axis_.x_of(static_cast<double>(e.start_ns));
      if (x0 > plot.right()) break;
      const double x1 = axis_.x_of(static_cast<double>(e.start_ns + e.duration_ns));
      if (x1 < plot.left()) continue;
      const QRectF box(x0, top + pad + (pad ? 1 : 0), std::max(1.0, x1 - x0), std::max(1, h - 2 * pad - (pad ? 2 : 0)));
      const QColor c = category_color(QString::fromStdString(e.category));
      p.fillRect(box, i == hovered_ ? c.lighter(130) : c);
      if (stripes_ && e.stage >= 0 && e.category != "transfer" && h >= 12) {
        p.fillRect(QRectF(box.left(), box.bottom() - 4, box.width(), 4), stage_color(e.stage));
      }
      if (box.width() > 4 && h >= 12) {
        p.setPen(c.darker(140));
        p.drawRect(box);
      }
      if (e.microbatch >= 0 && box.width() > 14 && h > 14) {
        p.setPen(Qt::white);
        p.drawText(box, Qt::AlignCenter, QString::number(e.microbatch));
      }
    }
  }
}

void TimelineView::paint_row_density(QPainter& p, const QRect& plot, const TimelineRow& row, int y, int rh) {
  const int bins = (plot.width() + kDensityBinPx - 1) / kDensityBinPx;
  const double bin_ns = kDensityBinPx * axis_.ns_per_px;
  // Devices: the mean share busy; links: their summed share (one busy link shows).
  const bool devices = model_->track_name(row.first_track).startsWith("device ");
  const std::vector<float> busy = model_->busy_fraction(row.first_track, row.end_track, axis_.view_start_ns, bin_ns, bins,
                                                        devices ? TimelineModel::Combine::Mean : TimelineModel::Combine::Sum);
  const QColor idle = category_color("idle");
  const int pad = rh >= 12 ? 2 : 0;
  for (int b = 0; b < bins; ++b) {
    const double t = axis_.view_start_ns + b * bin_ns;
    if (t + bin_ns <= 0 || t >= static_cast<double>(model_->end_ns())) continue;  // outside the step: no band
    const float f = busy[static_cast<std::size_t>(b)];
    const QColor c = QColor::fromRgbF(idle.redF() + (kBusy.redF() - idle.redF()) * f,
                                      idle.greenF() + (kBusy.greenF() - idle.greenF()) * f,
                                      idle.blueF() + (kBusy.blueF() - idle.blueF()) * f);
    p.fillRect(plot.left() + b * kDensityBinPx, y + pad, kDensityBinPx, rh - 2 * pad, c);
  }
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QRect plot = plot_rect();
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(8, 2, width() - 16, kTitleHeight), Qt::AlignLeft | Qt::AlignVCenter,
             title_.isEmpty() ? QString("Timeline") : title_);
  p.setFont(font());
  paint_legend(p);
  if (!model_ || model_->track_count() == 0) {
    p.drawText(plot, Qt::AlignCenter, "no timeline");
    return;
  }
  paint_axis(p, plot);
  const int rh = row_height();
  const bool density = density_mode();
  const double step_left = std::max<double>(plot.left(), axis_.x_of(0));
  const double step_right = std::min<double>(plot.right(), axis_.x_of(static_cast<double>(model_->end_ns())));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
  const int fh = fontMetrics().height();
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    const TimelineRow& row = rows_[r];
    const int y = plot.top() + static_cast<int>(r) * rh;
    if (y + rh > plot.bottom() + 1) break;  // cannot happen unless the window is tiny
    p.setPen(palette().color(QPalette::Text));
    p.setFont(font());
    p.drawText(QRect(6, y + (rh - fh) / 2, label_width() - 10, fh), Qt::AlignLeft | Qt::AlignVCenter, row.label);
    const int pad = rh >= 12 ? 2 : 0;
    p.fillRect(QRectF(step_left, y + pad, std::max(0.0, step_right - step_left), rh - 2 * pad), category_color("idle"));
    p.setPen(QColor(225, 225, 225));
    p.drawLine(plot.left(), y + rh - 1, plot.right(), y + rh - 1);
    p.setClipRect(plot);
    p.setFont(small);
    p.setBrush(Qt::NoBrush);
    if (density || rh / row.tracks() < 2) {  // sub-rows under 2 px cannot show ops
      paint_row_density(p, plot, row, y, rh);
    } else {
      paint_row_ops(p, plot, row, y, rh);
    }
    p.setClipping(false);
  }
  p.setPen(QColor(160, 160, 160));
  p.setBrush(Qt::NoBrush);
  const int used = rh * static_cast<int>(rows_.size());
  p.drawRect(plot.adjusted(0, 0, -1, 0).intersected(QRect(plot.left(), plot.top(), plot.width(), used)));
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const double factor = std::pow(1.25, e->angleDelta().y() / 120.0);
  axis_.zoom(factor, e->position().x());
  user_zoomed_ = true;
  update();
  emit axisChanged(axis_);
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  const int row = row_at(e->pos().y());
  if (e->pos().x() < plot_rect().left() && row >= 0 && model_ &&
      !model_->track_name(rows_[row].first_track).startsWith("device ")) {
    // Clicking a link row's label expands or collapses the links.
    set_link_rows(rows_[row].tracks() > 1 || link_rows_ == LinkRows::Collapsed ? LinkRows::Expanded
                                                                               : LinkRows::Collapsed);
    return;
  }
  dragging_ = true;
  last_drag_ = e->pos();
  setCursor(Qt::ClosedHandCursor);
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_) {
    axis_.pan(last_drag_.x() - e->pos().x());
    last_drag_ = e->pos();
    user_zoomed_ = true;
    update();
    emit axisChanged(axis_);
    return;
  }
  const int hovered = event_at(e->pos());
  if (hovered != hovered_) {
    hovered_ = hovered;
    update();
  }
  const QString tip = tooltip_at(e->pos());
  if (!tip.isEmpty()) {
    QToolTip::showText(e->globalPosition().toPoint(), tip, this);
  } else {
    QToolTip::hideText();
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = false;
  unsetCursor();
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) { fit(); }

void TimelineView::resizeEvent(QResizeEvent*) {
  relayout();
  const QRect plot = plot_rect();
  if (user_zoomed_) {
    axis_.resize(plot.left(), plot.width());
  } else {
    fit();
  }
}

}  // namespace pipescope::gui
