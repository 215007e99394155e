// The plans tab: every candidate of the planner's search as a scatter of throughput
// (samples/s) against peak memory per device, coloured by schedule, hollow when it
// does not fit, the Pareto front as a line through its starred points, the device
// memory as a dashed vertical line. Filters (schedule, K, re-materialisation) hide
// points; clicking a point (or a row of the table under it) asks to load that candidate. Geometry goes through
// LinearScale (gui/models/plot_scale.h); the numbers come from a PlansModel.
#pragma once

#include <QWidget>

#include "gui/models/plot_scale.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;

namespace pipescope::gui {

class PlansModel;

class PlansScatter : public QWidget {
  Q_OBJECT
 public:
  explicit PlansScatter(QWidget* parent = nullptr);
  void set_model(const PlansModel* model);
  // The candidate (enumeration index) the other tabs show; -1 for none.
  void set_current(int candidate);
  // Where candidate row `row` of the model is drawn.
  QPointF point_of(int row) const;
  // The model row drawn nearest to `pos` within a few pixels; -1 when none.
  int row_at(QPoint pos) const;
  QRect plot_rect() const;
  QSize sizeHint() const override { return {800, 500}; }

 signals:
  void candidateClicked(int candidate);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(class QMouseEvent*) override;
  void mouseMoveEvent(class QMouseEvent*) override;

 private:
  LinearScale x_scale() const;
  LinearScale y_scale() const;
  void paint_axes(class QPainter& p, const QRect& plot);
  void paint_legend(class QPainter& p);

  const PlansModel* model_ = nullptr;
  int current_ = -1;
};

class PlansView : public QWidget {
  Q_OBJECT
 public:
  explicit PlansView(QWidget* parent = nullptr);
  void set_model(PlansModel* model);
  PlansScatter* scatter() const { return scatter_; }
  QTableView* table() const { return table_; }
  void set_running(bool running);
  void set_progress(int done, int total);
  void set_message(const QString& message);
  // Refills the K filter from the model (after a search).
  void refresh_filters();
  QComboBox* schedule_filter() const { return schedule_; }

 signals:
  void searchRequested();
  void candidateClicked(int candidate);

 private:
  PlansModel* model_ = nullptr;
  PlansScatter* scatter_;
  QTableView* table_;
  QComboBox* schedule_;
  QComboBox* stages_;
  QComboBox* recompute_;
  QPushButton* search_;
  QProgressBar* progress_;
  QLabel* message_;
};

}  // namespace pipescope::gui
