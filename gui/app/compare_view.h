// Compare tab: a measurement JSON from the executor (and optionally its Chrome trace)
// against the current prediction: a table of errors (CompareModel) and, when a trace
// is given, the predicted and measured timelines one above the other on a shared,
// linked time axis.
#pragma once

#include <QWidget>

class QLabel;
class QTableView;

namespace pipescope::gui {

class CompareModel;
class TimelineModel;
class TimelineView;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  void set_models(CompareModel* errors, const TimelineModel* predicted, const TimelineModel* measured);
  void set_message(const QString& message);
  TimelineView* predicted_view() const { return predicted_; }
  TimelineView* measured_view() const { return measured_; }
  void set_measured_visible(bool visible);

 signals:
  void openMeasurementRequested();
  void openTraceRequested();

 private:
  QLabel* message_;
  QTableView* table_;
  TimelineView* predicted_;
  TimelineView* measured_;
};

}  // namespace pipescope::gui
