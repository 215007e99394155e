#include "gui/models/compare_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gui/models/palette.h"

namespace pipescope::gui {

double CompareModel::error_percent(double predicted, double measured) {
  if (predicted == measured) return 0.0;
  if (predicted == 0) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * (measured - predicted) / predicted;
}

void CompareModel::set_reports(const StepReport& p, const StepReport& m, std::optional<double> replayed_step_ms) {
  beginResetModel();
  lines_.clear();
  lines_.push_back({"Step time (ms)", p.step_ns / 1e6, m.step_ns / 1e6, 3, false});
  if (replayed_step_ms) {
    lines_.push_back({"Step time, replayed with measured op times (ms)", *replayed_step_ms, m.step_ns / 1e6, 3, false});
  }
  lines_.push_back({"Throughput (samples/s)", p.throughput_samples_per_s, m.throughput_samples_per_s, 1, false});
  lines_.push_back({"Bubble fraction (%)", 100 * p.bubble_fraction, 100 * m.bubble_fraction, 1, false});
  const std::size_t n = std::min(p.stages.size(), m.stages.size());
  for (std::size_t s = 0; s < n; ++s) {
    lines_.push_back({QString("Stage %1 busy (ms)").arg(s), p.stages[s].busy_ns / 1e6, m.stages[s].busy_ns / 1e6, 3, false});
  }
  for (std::size_t s = 0; s < n; ++s) {
    lines_.push_back({QString("Stage %1 peak memory").arg(s), static_cast<double>(p.stages[s].peak_memory_bytes),
                      static_cast<double>(m.stages[s].peak_memory_bytes), 0, true});
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
    return l.bytes ? QString::fromStdString(format_bytes(v)) : QString::number(v, 'f', l.decimals);
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
