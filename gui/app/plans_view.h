// The one plans view, for every search (the Plans tab: the planner's candidates; the LLM
// plans tab: an llm-plan result): a scatter of step time (ms) against peak memory per
// device in the model's unit (GiB, or GB where llm-plan quotes it; the unit named on the
// axis), each point coloured by its value of the "colour by" dimension (a legend names the
// values), hollow when it does not fit, a diamond when the search took activation offload
// (dotted from where it sat without), the search's front as a staircase through starred
// points, the capacity as a dashed red line; one filter box per dimension the rows have
// (none for a dimension they lack); the table of the same rows; the search's description
// ("why" lines) under it. A click on a point or a table row selects it, rings its point and
// says which set row (candidateClicked); a selected row stays selected through filters while
// shown. Rows are drawn last to first, so the first (fastest, or first enumerated) is on top.
// Geometry goes through LinearScale (gui/models/plot_scale.h); every number comes from the
// PlansModel (gui/models/plans_model.h).
//   PlansView v("Search", "simulate every candidate", "Press \"Search\" ..."); v.set_model(&m);
#pragma once

#include <QWidget>
#include <vector>

#include "gui/models/plans_model.h"
#include "gui/models/plot_scale.h"

class QComboBox;
class QHBoxLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QTableView;

namespace pipescope::gui {

class PlansScatter : public QWidget {
  Q_OBJECT
 public:
  struct DrawnPoint {
    int row;    // of the model
    int entry;  // its index in the set (the source's own index)
    QPointF at;
    QColor colour;
  };

  explicit PlansScatter(QWidget* parent = nullptr);
  void set_model(const PlansModel* model);
  void set_placeholder(const QString& text) { placeholder_ = text; }  // shown while the model is empty
  void set_current(int entry);  // the set row ringed; -1: none
  int current() const { return current_; }
  QPointF point_of(int row) const;
  int row_at(QPoint pos) const;  // the row drawn nearest `pos` within 7 px; -1 when none
  QRect plot_rect() const;
  double capacity_x() const;     // where the capacity line is drawn; -1: none
  const std::vector<DrawnPoint>& drawn() const { return drawn_; }  // what the last paint drew
  QSize sizeHint() const override { return {800, 480}; }

 signals:
  void rowClicked(int row);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(class QMouseEvent*) override;
  void mouseMoveEvent(class QMouseEvent*) override;

 private:
  LinearScale x_scale() const;  // the set's memory unit
  LinearScale y_scale() const;  // ms
  QPointF place(const PlanPoint& p) const;
  void paint_legend(class QPainter& p);
  void paint_front(class QPainter& p);
  void paint_points(class QPainter& p);

  const PlansModel* model_ = nullptr;
  QString placeholder_;
  int current_ = -1;
  std::vector<DrawnPoint> drawn_;
};

class PlansView : public QWidget {
  Q_OBJECT
 public:
  // `action`: the button's text (it emits actionRequested); `placeholder`: the chart's text
  // while there are no rows.
  PlansView(const QString& action, const QString& action_tip, const QString& placeholder, QWidget* parent = nullptr);
  void set_model(PlansModel* model);
  // Rebuilds the filter boxes (one per dimension of the model's set: "all", then each
  // value) and the colour-by box, showing the model's filters and colour.
  void refresh_filters();
  void set_description(const QString& text);  // under the table; hidden while empty
  QString description() const;
  void set_message(const QString& message);   // the line under the buttons
  void set_running(bool running);
  void set_progress(int done, int total);
  void select_row(int row);  // the table's row and the scatter's ring
  PlansScatter* scatter() const { return scatter_; }
  QTableView* table() const { return table_; }
  // The box of a dimension of the set shown; nullptr for one it lacks.
  QComboBox* filter(const QString& dimension) const;
  QComboBox* colour_by() const { return colour_by_; }

 signals:
  void actionRequested();
  void candidateClicked(int entry);

 private:
  PlansModel* model_ = nullptr;
  QPushButton* action_;
  PlansScatter* scatter_;
  QTableView* table_;
  QHBoxLayout* filter_bar_;
  std::vector<QComboBox*> filters_;  // by dimension of the set shown
  QComboBox* colour_by_;
  QProgressBar* progress_;
  QLabel* message_;
  QScrollArea* description_area_;
  QLabel* description_;
};

}  // namespace pipescope::gui
