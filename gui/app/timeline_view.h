// The Gantt chart: one row per timeline track (devices, then links and all-reduces),
// ops as boxes coloured by category over a light "idle" band, a millisecond axis on
// top and a legend below. Wheel zooms around the pointer, dragging pans, a double
// click fits the whole step; hovering shows the op, stage, micro-batch, start and
// duration. All geometry goes through a TimeAxis (gui/models/time_axis.h).
#pragma once

#include <QWidget>

#include "gui/models/time_axis.h"

namespace pipescope::gui {

class TimelineModel;

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  void set_model(const TimelineModel* model);
  void set_title(const QString& title);
  // Interleaved plans: a strip in the model stage's colour under each op.
  void set_stage_stripes(bool on);
  const TimeAxis& axis() const { return axis_; }
  void set_axis(const TimeAxis& axis);  // keeps two views in step (Compare)
  void fit();
  // The area where boxes are drawn, in widget coordinates.
  QRect plot_rect() const;
  // What hovering at `pos` shows; empty when no op is there.
  QString tooltip_at(QPoint pos) const;
  QSize sizeHint() const override { return {900, 360}; }

 signals:
  void axisChanged(const pipescope::gui::TimeAxis& axis);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  int row_height() const;
  int label_width() const;
  int track_at(int y) const;
  int event_at(QPoint pos) const;
  void paint_axis(class QPainter& p, const QRect& plot);
  void paint_legend(class QPainter& p);

  const TimelineModel* model_ = nullptr;
  QString title_;
  TimeAxis axis_;
  bool user_zoomed_ = false;
  bool stripes_ = false;
  bool dragging_ = false;
  QPoint last_drag_;
  int hovered_ = -1;
};

}  // namespace pipescope::gui
