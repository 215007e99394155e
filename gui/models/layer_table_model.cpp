#include "gui/models/layer_table_model.h"

#include "core/report.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

void LayerTableModel::set_plan(std::shared_ptr<const Profile> profile, const Plan& plan) {
  beginResetModel();
  rows_.clear();
  stages_ = static_cast<int>(plan.stages.size());
  microbatch_size_ = plan.microbatch_size();
  if (profile) {
    const double b = microbatch_size_;
    for (int l = 0; l < profile->num_layers(); ++l) {
      Row r;
      r.name = QString::fromStdString(profile->layers[l].name);
      for (int s = 0; s < stages_; ++s) {
        if (l >= plan.stages[s].first_layer && l < plan.stages[s].end_layer) r.stage = s;
      }
      r.forward_ms = profile->forward_ms(l, b);
      r.backward_ms = profile->backward_ms(l, b);
      r.activation_bytes = static_cast<double>(profile->activation_bytes(l, b));
      r.output_bytes = static_cast<double>(profile->output_bytes(l, b));
      r.parameter_bytes = static_cast<double>(profile->layers[l].parameter_bytes);
      rows_.push_back(r);
    }
  }
  endResetModel();
}

int LayerTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Row& r = rows_[index.row()];
  auto raw = [&]() -> QVariant {
    switch (index.column()) {
      case Name: return r.name;
      case Stage: return r.stage;
      case ForwardMs: return r.forward_ms;
      case BackwardMs: return r.backward_ms;
      case CostMs: return r.forward_ms + r.backward_ms;
      case ActivationBytes: return r.activation_bytes;
      case OutputBytes: return r.output_bytes;
      case ParameterBytes: return r.parameter_bytes;
    }
    return {};
  };
  switch (role) {
    case RawRole: return raw();
    case StageRole: return r.stage;
    case Qt::DisplayRole:
      switch (index.column()) {
        case Name: return r.name;
        case Stage: return r.stage < 0 ? QString("-") : QString::number(r.stage);
        case ForwardMs:
        case BackwardMs:
        case CostMs: return QString::number(raw().toDouble(), 'f', 4);
        default: return QString::fromStdString(format_bytes(raw().toDouble()));
      }
    case Qt::TextAlignmentRole:
      return index.column() == Name ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                    : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::DecorationRole:
      if (index.column() == Stage && r.stage >= 0) return stage_color(r.stage);
      return {};
  }
  return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) return section;
  switch (section) {
    case Name: return QString("Layer");
    case Stage: return QString("Stage");
    case ForwardMs: return QString("Forward ms");
    case BackwardMs: return QString("Backward ms");
    case CostMs: return QString("F+B ms");
    case ActivationBytes: return QString("Activations");
    case OutputBytes: return QString("Output");
    case ParameterBytes: return QString("Parameters");
  }
  return {};
}

}  // namespace pipescope::gui
