#include "gui/models/sweep_model.h"

#include <algorithm>

namespace pipescope::gui {

void SweepModel::set_result(const SweepResult& result) {
  beginResetModel();
  result_ = result;
  min_ = max_ = 0;
  bool first = true;
  for (const SweepCell& c : result_.cells) {
    if (!c.valid || !c.fits) continue;
    min_ = first ? c.throughput : std::min(min_, c.throughput);
    max_ = first ? c.throughput : std::max(max_, c.throughput);
    first = false;
  }
  endResetModel();
}

QModelIndex SweepModel::best_index() const {
  if (result_.best < 0) return {};
  return index(result_.best / result_.columns(), result_.best % result_.columns());
}

int SweepModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : result_.rows(); }

int SweepModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || result_.rows() == 0 ? 0 : result_.columns();
}

QVariant SweepModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const int i = index.row() * result_.columns() + index.column();
  const SweepCell& c = result_.cells[i];
  switch (role) {
    case Qt::DisplayRole:
      if (!c.valid) return QString("n/a");
      if (!c.fits) return QString("-");
      return QString::number(c.throughput, 'f', 0);
    case Qt::ToolTipRole: {
      QString head = QString("K=%1, M=%2").arg(c.stages).arg(c.microbatches);
      if (!c.valid) return head + "\n" + QString::fromStdString(c.error);
      return head + QString("\n%1 samples/s, step %2 ms, bubble %3 %\npeak %4 GiB%5")
                        .arg(c.throughput, 0, 'f', 1)
                        .arg(static_cast<double>(c.step_ns) / 1e6, 0, 'f', 3)
                        .arg(100 * c.bubble_fraction, 0, 'f', 1)
                        .arg(static_cast<double>(c.peak_bytes) / (1024.0 * 1024 * 1024), 0, 'f', 2)
                        .arg(c.fits ? "" : " (does not fit)");
    }
    case ThroughputRole: return c.throughput;
    case ValidRole: return c.valid;
    case FitsRole: return c.fits;
    case BestRole: return i == result_.best;
    case HeatRole:
      if (!c.valid || !c.fits) return {};
      return max_ > min_ ? (c.throughput - min_) / (max_ - min_) : 1.0;
    case StagesRole: return c.stages;
    case MicrobatchesRole: return c.microbatches;
  }
  return {};
}

QVariant SweepModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) {
    if (section < 0 || section >= result_.rows()) return {};
    return QString("K=%1").arg(result_.axes.stages[section]);
  }
  if (section < 0 || section >= result_.columns()) return {};
  return QString("M=%1").arg(result_.axes.microbatches[section]);
}

}  // namespace pipescope::gui
