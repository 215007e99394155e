#include "gui/models/summary_model.h"

#include "gui/models/job_model.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

void SummaryModel::clear() {
  beginResetModel();
  lines_.clear();
  endResetModel();
}

void SummaryModel::set_report(const StepReport& r) {
  beginResetModel();
  lines_.clear();
  lines_.push_back({"Step time", QString::fromStdString(format_ms(r.step_ns)) + " ms",
                    static_cast<qlonglong>(r.step_ns), true});
  lines_.push_back({"Throughput", QString::number(r.throughput_samples_per_s, 'f', 1) + " samples/s",
                    r.throughput_samples_per_s, true});
  lines_.push_back({"Bubble fraction", QString::number(100.0 * r.bubble_fraction, 'f', 1) + " %",
                    r.bubble_fraction, true});
  for (const PositionReport& s : r.positions) {
    QString value = QString::fromStdString(format_bytes(static_cast<double>(s.peak_memory_bytes)));
    if (!s.fits) value += "  (does not fit)";
    lines_.push_back({QString("Peak memory, stage %1").arg(s.index), value,
                      static_cast<qlonglong>(s.peak_memory_bytes), s.fits});
  }
  endResetModel();
}

void SummaryModel::set_job(const JobEvaluation& job) {
  beginResetModel();
  lines_.clear();
  for (const auto& [name, value] : job_layout_rows(job.inputs.job)) lines_.push_back({name, value, value, true});
  const pipescope::StepTime& t = job.report.time;  // (StepTime alone is Row::StepTime here)
  const double samples_per_s = job.inputs.job.layout.global_batch() / (static_cast<double>(t.step_ns) * 1e-9);
  lines_.push_back({"Step time", QString("%1 s (%2 ns)").arg(static_cast<double>(t.step_ns) / 1e9, 0, 'f', 3).arg(t.step_ns),
                    static_cast<qlonglong>(t.step_ns), true});
  lines_.push_back({"Throughput", QString::number(samples_per_s, 'f', 1) + " samples/s", samples_per_s, true});
  lines_.push_back({"Bubble fraction", QString::number(100.0 * t.bubble, 'f', 1) + " %", t.bubble, true});
  lines_.push_back({"MFU", QString::number(100.0 * t.mfu, 'f', 1) + " %", t.mfu, true});
  for (const RankMemory& m : job.report.memory.stages) {
    const bool fits = job.fits(m);
    QString value = QString::fromStdString(format_bytes(m.total()));
    if (!fits) value += "  (does not fit)";
    lines_.push_back({QString("Memory per GPU, rank %1").arg(m.rank), value, m.total(), fits});
  }
  endResetModel();
}

int SummaryModel::row_of(const QString& name) const {
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    if (lines_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int SummaryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(lines_.size());
}

int SummaryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 2; }

QVariant SummaryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= 2) return {};
  const Line& l = lines_[index.row()];
  switch (role) {
    case Qt::DisplayRole: return index.column() == 0 ? l.name : l.value;
    case RawRole: return l.raw;
    case FitsRole: return l.fits;
    case Qt::ForegroundRole:
      if (!l.fits) return does_not_fit_color();
      return {};
  }
  return {};
}

QVariant SummaryModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || o != Qt::Horizontal) return {};
  return section == 0 ? QString("Quantity") : QString("Value");
}

}  // namespace pipescope::gui
