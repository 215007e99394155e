// Measured over predicted: one row per quantity both reports carry (step time,
// throughput, bubble fraction, then each stage's busy time and peak memory), with
// the relative error (measured - predicted) / predicted, as `pipescope compare` prints it. Rows for stages exist only
// for positions both reports have.
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

  // Relative error in percent; 0 when both are 0, +-inf avoided (predicted 0 -> NaN).
  static double error_percent(double predicted, double measured);

 private:
  struct Line {
    QString name;
    double predicted = 0, measured = 0;
    int decimals = 3;
    bool bytes = false;
  };
  std::vector<Line> lines_;
};

}  // namespace pipescope::gui
