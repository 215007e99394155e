// The sweep as a table model: rows are K, columns are M, a cell's display text is
// its throughput (samples/s), "-" when it does not fit, "n/a" when the plan is
// impossible. Roles give what the heat map paints: the throughput, whether the
// cell fits, whether it is the best, and the heat (0..1 across fitting cells).
#pragma once

#include <QAbstractTableModel>

#include "gui/models/sweep.h"

namespace pipescope::gui {

class SweepModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Role { ThroughputRole = Qt::UserRole + 1, ValidRole, FitsRole, BestRole, HeatRole, StagesRole, MicrobatchesRole };

  using QAbstractTableModel::QAbstractTableModel;
  void set_result(const SweepResult& result);
  const SweepResult& result() const { return result_; }
  QModelIndex best_index() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  SweepResult result_;
  double min_ = 0, max_ = 0;  // throughput range over fitting cells
};

}  // namespace pipescope::gui
