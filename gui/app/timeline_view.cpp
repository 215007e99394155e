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
      if (user_zoomed_) {
        axis_.resize(plot_rect().left(), plot_rect().width());  // the label column may have changed
      } else {
        fit();
      }
      update();
    });
  }
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

QRect TimelineView::plot_rect() const {
  const int top = kTitleHeight + kAxisHeight;
  return QRect(label_width(), top, std::max(10, width() - label_width() - kRightMargin),
               std::max(10, height() - top - kLegendHeight - 4));
}

void TimelineView::fit() {
  const QRect plot = plot_rect();
  axis_.fit(0, model_ ? std::max<int64_t>(1, model_->end_ns()) : 1, plot.left(), plot.width());
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

int TimelineView::label_width() const {
  int widest = 60;
  if (model_) {
    for (int t = 0; t < model_->track_count(); ++t) widest = std::max(widest, fontMetrics().horizontalAdvance(model_->track_name(t)));
  }
  return std::min(widest, 220) + 18;
}

int TimelineView::row_height() const {
  const int tracks = model_ ? std::max(1, model_->track_count()) : 1;
  return std::clamp(plot_rect().height() / tracks, 3, 44);
}

int TimelineView::track_at(int y) const {
  if (!model_) return -1;
  const int row = (y - plot_rect().top()) / row_height();
  return y >= plot_rect().top() && row < model_->track_count() ? row : -1;
}

int TimelineView::event_at(QPoint pos) const {
  const int track = track_at(pos.y());
  if (track < 0 || pos.x() < plot_rect().left()) return -1;
  return model_->event_at(track, axis_.time_of(pos.x()), static_cast<int64_t>(2 * axis_.ns_per_px));
}

QString TimelineView::tooltip_at(QPoint pos) const {
  const int e = event_at(pos);
  return e < 0 ? QString() : model_->describe(e);
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
  std::set<QString> present;
  if (model_) {
    for (const auto& e : model_->events()) present.insert(QString::fromStdString(e.category));
  }
  int x = label_width();
  const int y = height() - kLegendHeight + 4;
  const QFontMetrics fm(font());
  for (const LegendEntry& l : category_legend()) {
    const bool shown = l.category == "idle" || present.count(l.category) ||
                       (l.category == "backward" && present.count("backward_input"));
    if (!shown) continue;
    p.setPen(QColor(90, 90, 90));
    p.setBrush(category_color(l.category));
    p.drawRect(x, y + 3, 14, 14);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(x + 20, y, fm.horizontalAdvance(l.label) + 4, 20, Qt::AlignVCenter, l.label);
    x += 20 + fm.horizontalAdvance(l.label) + 22;
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
  const double step_left = std::max<double>(plot.left(), axis_.x_of(0));
  const double step_right = std::min<double>(plot.right(), axis_.x_of(static_cast<double>(model_->end_ns())));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
  for (int t = 0; t < model_->track_count(); ++t) {
    const int y = plot.top() + t * rh;
    if (y + rh > plot.bottom() + 1) break;  // more tracks than fit: the rest are cut
    p.setPen(palette().color(QPalette::Text));
    p.setFont(font());
    const int label_every = std::max(1, (fontMetrics().height() + rh - 1) / rh);
    if (t % label_every == 0) {
      p.drawText(QRect(6, y, label_width() - 10, std::max(rh, fontMetrics().height())), Qt::AlignLeft | Qt::AlignVCenter,
                 model_->track_name(t));
    }
    const int pad = rh >= 12 ? 2 : 0;
    const QRectF row(step_left, y + pad, std::max(0.0, step_right - step_left), rh - 2 * pad);
    p.fillRect(row, category_color("idle"));
    p.setPen(QColor(225, 225, 225));
    p.drawLine(plot.left(), y + rh - 1, plot.right(), y + rh - 1);
    p.setClipRect(plot);
    p.setFont(small);
    p.setBrush(Qt::NoBrush);
    for (int i : model_->track_events(t)) {
      const TimelineEvent& e = model_->events()[i];
      const double x0 = axis_.x_of(static_cast<double>(e.start_ns));
      const double x1 = axis_.x_of(static_cast<double>(e.start_ns + e.duration_ns));
      if (x1 < plot.left() || x0 > plot.right()) continue;
      const QRectF box(x0, y + pad + (pad ? 1 : 0), std::max(1.0, x1 - x0), std::max(1, rh - 2 * pad - (pad ? 2 : 0)));
      const QColor c = category_color(QString::fromStdString(e.category));
      p.fillRect(box, i == hovered_ ? c.lighter(130) : c);
      if (stripes_ && e.stage >= 0 && e.category != "transfer") {
        p.fillRect(QRectF(box.left(), box.bottom() - 4, box.width(), 4), stage_color(e.stage));
      }
      if (box.width() > 4 && rh >= 12) {
        p.setPen(c.darker(140));
        p.drawRect(box);
      }
      if (e.microbatch >= 0 && box.width() > 14 && rh > 14) {
        p.setPen(Qt::white);
        p.drawText(box, Qt::AlignCenter, QString::number(e.microbatch));
      }
    }
    p.setClipping(false);
  }
  p.setPen(QColor(160, 160, 160));
  p.setBrush(Qt::NoBrush);
  p.drawRect(plot.adjusted(0, 0, -1, 0).intersected(QRect(plot.left(), plot.top(), plot.width(), rh * model_->track_count())));
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
  if (e->button() == Qt::LeftButton) {
    dragging_ = true;
    last_drag_ = e->pos();
    setCursor(Qt::ClosedHandCursor);
  }
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
  if (hovered_ >= 0) {
    QToolTip::showText(e->globalPosition().toPoint(), model_->describe(hovered_), this);
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
  const QRect plot = plot_rect();
  if (user_zoomed_) {
    axis_.resize(plot.left(), plot.width());
  } else {
    fit();
  }
}

}  // namespace pipescope::gui
