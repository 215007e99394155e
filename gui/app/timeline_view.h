// The Gantt chart: one row per timeline track (devices, then links and all-reduces),
// ops as boxes coloured by category over a light "idle" band, a millisecond axis on
// top and a legend below. Wheel zooms around the pointer, dragging pans, a double
// click fits the whole step; hovering shows the op, stage, micro-batch, start and
// duration. All geometry goes through a TimeAxis (gui/models/time_axis.h).
// At scale: rows come from timeline_rows() (every row labelled; devices grouped and
// links collapsed when there are more tracks than labelled rows fit; clicking the
// links label expands or collapses them), and when ops would be narrower than
// kMinOpPx, or a row holds several tracks, the row shows its busy fraction per
// kDensityBinPx column instead of boxes (density mode); zooming in brings the ops back.
#pragma once

#include <QWidget>

#include <vector>

#include "gui/models/time_axis.h"
#include "gui/models/timeline_rows.h"

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
  // Fit shows [0, end_ns) (0: the model's step); A/B aligns two views with it.
  void set_fit_end(int64_t end_ns) { fit_end_ns_ = end_ns; }
  void set_link_rows(LinkRows mode);
  // The label column is at least this wide (A/B lines two views' plots up).
  void set_min_label_width(int px);
  int label_width() const;
  LinkRows link_rows() const { return link_rows_; }
  const std::vector<TimelineRow>& rows() const { return rows_; }
  // True when ops would be narrower than kMinOpPx at the current zoom.
  bool density_mode() const;
  static constexpr double kMinOpPx = 3.0;
  static constexpr int kDensityBinPx = 2;

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
  void relayout();
  int row_height() const;
  int row_at(int y) const;
  void paint_row_ops(class QPainter& p, const QRect& plot, const TimelineRow& row, int y, int rh);
  void paint_row_density(class QPainter& p, const QRect& plot, const TimelineRow& row, int y, int rh);
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
  int64_t fit_end_ns_ = 0;
  LinkRows link_rows_ = LinkRows::Auto;
  std::vector<TimelineRow> rows_;
  int label_width_ = 78;
  int min_label_width_ = 0;
};

}  // namespace pipescope::gui
