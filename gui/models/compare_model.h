// Measured over predicted: the rows of core/compare.h's compare_reports, the ones
// `pipescope compare` prints (step time, throughput, bubble fraction, then each stage's
// busy time and memory by category), with its relative error; rows for stages exist
// only for positions both reports have (StageMatch::Common).
//   CompareModel m; m.set_reports(prediction, measurement);
#pragma once

#include <QAbstractTableModel>

#include <optional>
#include <vector>

#include "core/report.h"

namespace pipescope::gui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Quantity, Predicted, Measured, ErrorPercent, ColumnCount };
  enum Role { RawRole = Qt::UserRole + 1 };

  using QAbstractTableModel::QAbstractTableModel;
  // replayed_step_ms: the measured step replayed through the simulator with the
  // measured op times (sim/replay.h), shown as a second step-time row when given.
  void set_reports(const StepReport& predicted, const StepReport& measured,
                   std::optional<double> replayed_step_ms = std::nullopt);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // 100 x ComparedValue::relative_error(); NaN (shown "n/a") where that is infinite.
  static double error_percent(double predicted, double measured);

 private:
  struct Line {
    QString name;
    double predicted = 0, measured = 0;
    bool bytes = false;  // a *_bytes row, shown as GiB / MiB
  };
  std::vector<Line> lines_;
};

}  // namespace pipescope::gui
