// The layer table: one row per profile layer, with its stage in the current plan and
// its time, activation and parameter bytes at the plan's micro-batch size (the
// profile's interpolation, Profile::forward_ms etc.). The bar chart reads the same
// model: RawRole gives numbers, StageRole the model stage a layer belongs to.
//   LayerTableModel m; m.set_plan(profile, plan);
#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <vector>

#include "core/plan.h"
#include "core/profile.h"

namespace pipescope::gui {

class LayerTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Stage, ForwardMs, BackwardMs, CostMs, ActivationBytes, OutputBytes, ParameterBytes, ColumnCount };
  enum Role { RawRole = Qt::UserRole + 1, StageRole };

  using QAbstractTableModel::QAbstractTableModel;

  // `plan` may have no stages (layers then have stage -1).
  void set_plan(std::shared_ptr<const Profile> profile, const Plan& plan);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  double microbatch_size() const { return microbatch_size_; }

 private:
  struct Row {
    QString name;
    int stage = -1;
    double forward_ms = 0, backward_ms = 0;
    double activation_bytes = 0, output_bytes = 0, parameter_bytes = 0;
  };
  std::vector<Row> rows_;
  double microbatch_size_ = 1;
  int stages_ = 0;
};

}  // namespace pipescope::gui
