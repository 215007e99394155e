// The llm-plans tab: the layouts a `pipescope llm-plan --json` file holds (read by
// llm/llm_plan_json.h into an LlmPlansModel) as a scatter of step time (s) against peak
// memory per GPU (GB), each point coloured by the "colour by" dimension with a legend of
// its values, the GPU's capacity as a dashed vertical line; filters by t, d, cp, ep and
// sharding hide points (the axes span every layout, so the rest stay put); the table
// of the same rows under it, and the search's counts and "why" lines under that.
// Clicking a point selects its row and selecting a row rings its point. Geometry goes
// through LinearScale (gui/models/plot_scale.h); every number comes from the model.
#pragma once

#include <QWidget>
#include <vector>

#include "gui/models/llm_plans_model.h"
#include "gui/models/plot_scale.h"

class QComboBox;
class QLabel;
class QTableView;

namespace pipescope::gui {

class LlmPlansScatter : public QWidget {
  Q_OBJECT
 public:
  struct DrawnPoint {
    int row;        // of the model
    int candidate;  // index into the result's best
    QPointF at;
    QColor colour;
  };

  explicit LlmPlansScatter(QWidget* parent = nullptr);
  void set_model(const LlmPlansModel* model);
  void set_current(int candidate);  // -1: none
  int current() const { return current_; }
  QPointF point_of(int row) const;
  int row_at(QPoint pos) const;     // the row drawn nearest `pos` within 7 px; -1 when none
  QRect plot_rect() const;
  double capacity_x() const;        // where the capacity line is drawn
  const std::vector<DrawnPoint>& drawn() const { return drawn_; }  // what the last paint drew
  QSize sizeHint() const override { return {800, 460}; }

 signals:
  void rowClicked(int row);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(class QMouseEvent*) override;
  void mouseMoveEvent(class QMouseEvent*) override;

 private:
  LinearScale x_scale() const;  // GB
  LinearScale y_scale() const;  // s
  void paint_axes(class QPainter& p, const QRect& plot);
  void paint_legend(class QPainter& p);

  const LlmPlansModel* model_ = nullptr;
  int current_ = -1;
  std::vector<DrawnPoint> drawn_;
};

class LlmPlansView : public QWidget {
  Q_OBJECT
 public:
  explicit LlmPlansView(QWidget* parent = nullptr);
  void set_model(LlmPlansModel* model);
  // Refills the filter boxes with "all" and the values the model's result spans.
  void refresh_filters();
  void set_description(const QString& text);
  void select_row(int row);  // the table's row and the scatter's ring
  LlmPlansScatter* scatter() const { return scatter_; }
  QTableView* table() const { return table_; }
  QComboBox* filter(LlmDimension dimension) const { return filters_[static_cast<int>(dimension)]; }
  QComboBox* colour_by() const { return colour_by_; }
  QString description() const;

 signals:
  void openRequested();

 private:
  LlmPlansModel* model_ = nullptr;
  LlmPlansScatter* scatter_;
  QTableView* table_;
  QComboBox* filters_[5];
  QComboBox* colour_by_;
  QLabel* description_;
};

}  // namespace pipescope::gui
