#include "gui/models/compare_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/compare.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

double CompareModel::error_percent(double predicted, double measured) {
  const double e = ComparedValue{"", predicted, measured}.relative_error();
  return std::isfinite(e) ? 100.0 * e : std::numeric_limits<double>::quiet_NaN();
}

void CompareModel::set_reports(const StepReport& p, const StepReport& m, std::optional<double> replayed_step_ms) {
  beginResetModel();
  lines_.clear();
  const Comparison c = compare_reports(p, m, StageMatch::Common);
  for (const ComparedValue& v : c.values) {
    const QString name = QString::fromStdString(v.name);
    lines_.push_back({name, v.predicted, v.measured, name.endsWith("_bytes")});
    if (lines_.size() == 1 && replayed_step_ms) {  // beside the step time
      lines_.push_back({"Step time, replayed with measured op times (ms)", *replayed_step_ms, m.step_ns / 1e6, false});
    }
  }
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(lines_.size());
}

int CompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Line& l = lines_[index.row()];
  const double err = error_percent(l.predicted, l.measured);
  auto number = [&](double v) {
    return l.bytes ? QString::fromStdString(format_bytes(v)) : QString::number(v, 'g', 6);
  };
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Quantity: return l.name;
        case Predicted: return number(l.predicted);
        case Measured: return number(l.measured);
        case ErrorPercent: return std::isnan(err) ? QString("n/a") : QString::number(err, 'f', 1);
      }
      return {};
    case RawRole:
      switch (index.column()) {
        case Quantity: return l.name;
        case Predicted: return l.predicted;
        case Measured: return l.measured;
        case ErrorPercent: return err;
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() == ErrorPercent && !std::isnan(err) && std::fabs(err) > 10.0) return does_not_fit_color();
      return {};
    case Qt::TextAlignmentRole:
      return index.column() == Quantity ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                        : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  static const char* names[] = {"Quantity", "Predicted", "Measured", "Error % (meas - pred) / pred"};
  return section >= 0 && section < ColumnCount ? QVariant(QString(names[section])) : QVariant();
}

}  // namespace pipescope::gui
