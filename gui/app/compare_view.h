// Compare tab: a measurement JSON from the executor (and optionally its Chrome trace)
// against the current prediction: a table of errors (CompareModel) and a timeline
// whose rows are the predicted ones, each followed by its measured twin when a
// trace is given ("device 0 pred", "device 0 meas"; gui/models/timeline_merge.h).
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
  void set_models(CompareModel* errors, const TimelineModel* rows);
  void set_message(const QString& message);
  TimelineView* timeline_view() const { return rows_; }
  void set_has_trace(bool has_trace);

 signals:
  void openMeasurementRequested();
  void openTraceRequested();

 private:
  QLabel* message_;
  QTableView* table_;
  TimelineView* rows_;
};

}  // namespace pipescope::gui
