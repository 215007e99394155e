#include "gui/models/ab_model.h"

#include <algorithm>
#include <cmath>

namespace pipescope::gui {

void AbModel::set_reports(const StepReport& a, const StepReport& b) {
  beginResetModel();
  lines_.clear();
  lines_.push_back({"step (ms)", Unit::Ms, static_cast<double>(a.step_ns), static_cast<double>(b.step_ns)});
  lines_.push_back({"throughput (samples/s)", Unit::Samples, a.throughput_samples_per_s, b.throughput_samples_per_s});
  lines_.push_back({"bubble", Unit::Percent, a.bubble_fraction, b.bubble_fraction});
  const std::size_t stages = std::max(a.positions.size(), b.positions.size());
  for (std::size_t s = 0; s < stages; ++s) {
    Line line{QString("peak memory, stage %1 (GiB)").arg(s), Unit::GiB, std::nullopt, std::nullopt};
    if (s < a.positions.size()) line.a = static_cast<double>(a.positions[s].peak_memory_bytes);
    if (s < b.positions.size()) line.b = static_cast<double>(b.positions[s].peak_memory_bytes);
    lines_.push_back(line);
  }
  endResetModel();
}

void AbModel::set_jobs(const JobEvaluation& a, const JobEvaluation& b) {
  beginResetModel();
  lines_.clear();
  const pipescope::StepTime &ta = a.report.time, &tb = b.report.time;
  const auto per_s = [](const JobEvaluation& j) {
    return static_cast<double>(j.inputs.job.layout.global_batch()) * 1e9 / static_cast<double>(j.report.time.step_ns);
  };
  lines_.push_back({"step (ms)", Unit::Ms, static_cast<double>(ta.step_ns), static_cast<double>(tb.step_ns)});
  lines_.push_back({"throughput (sequences/s)", Unit::Samples, per_s(a), per_s(b)});
  lines_.push_back({"bubble", Unit::Percent, ta.bubble, tb.bubble});
  lines_.push_back({"MFU", Unit::Percent, ta.mfu, tb.mfu});
  const std::vector<RankMemory>&ra = a.report.memory.stages, &rb = b.report.memory.stages;
  for (std::size_t r = 0; r < std::max(ra.size(), rb.size()); ++r) {
    Line line{QString("memory per GPU, rank %1 (GiB)").arg(r), Unit::GiB, std::nullopt, std::nullopt};
    if (r < ra.size()) line.a = ra[r].total();
    if (r < rb.size()) line.b = rb[r].total();
    lines_.push_back(line);
  }
  endResetModel();
}

void AbModel::clear() {
  beginResetModel();
  lines_.clear();
  endResetModel();
}

int AbModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(lines_.size()); }

int AbModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString AbModel::format(double raw, Unit unit) const {
  switch (unit) {
    case Unit::Ms: return QString::number(raw / 1e6, 'f', 3);
    case Unit::Samples: return QString::number(raw, 'f', 1);
    case Unit::Percent: return QString::number(100 * raw, 'f', 1) + " %";
    case Unit::GiB: return QString::number(raw / (1024.0 * 1024 * 1024), 'f', 2);
  }
  return {};
}

QVariant AbModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Line& l = lines_[index.row()];
  const bool both = l.a && l.b;
  if (role == RawRole) {
    switch (index.column()) {
      case A: return l.a ? QVariant(*l.a) : QVariant();
      case B: return l.b ? QVariant(*l.b) : QVariant();
      case Delta: return both ? QVariant(*l.b - *l.a) : QVariant();
      case Relative: return both && *l.a != 0 ? QVariant((*l.b - *l.a) / *l.a) : QVariant();
    }
    return {};
  }
  if (role == Qt::TextAlignmentRole && index.column() != Metric) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Metric: return l.name;
    case A: return l.a ? format(*l.a, l.unit) : QString("-");
    case B: return l.b ? format(*l.b, l.unit) : QString("-");
    case Delta: {
      if (!both) return QString("-");
      const double d = *l.b - *l.a;
      if (l.unit == Unit::Percent) return (d > 0 ? "+" : "") + QString::number(100 * d, 'f', 1) + " pt";  // points
      return (d > 0 ? "+" : "") + format(d, l.unit);
    }
    case Relative: {
      if (!both || *l.a == 0) return QString("-");
      const double r = 100 * (*l.b - *l.a) / *l.a;
      return (r > 0 ? "+" : "") + QString::number(r, 'f', 1) + " %";
    }
  }
  return {};
}

QVariant AbModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) return section;
  static const char* names[] = {"", "A (pinned)", "B (current)", "B - A", "(B - A) / A"};
  return section >= 0 && section < ColumnCount ? QVariant(QString(names[section])) : QVariant();
}

QString AbModel::describe(const StepReport& r) {
  QString s = QString::fromStdString(r.schedule);
  if (r.chunks > 1) s += QString(" v=%1").arg(r.chunks);
  s += QString(" K=%1 M=%2 (micro-batch %3)").arg(r.num_positions).arg(r.microbatches).arg(r.microbatch_size);
  if (r.recompute == Recompute::Full) s += " recompute";
  return s + QString(": %1 ms").arg(static_cast<double>(r.step_ns) / 1e6, 0, 'f', 3);
}

QString AbModel::describe(const JobEvaluation& j) {
  return QString("%1 (%2): %3 ms")
      .arg(QString::fromStdString(layout_summary(j.inputs.job.layout)))
      .arg(QString::fromStdString(j.report.time.schedule))
      .arg(static_cast<double>(j.report.time.step_ns) / 1e6, 0, 'f', 3);
}

}  // namespace pipescope::gui
