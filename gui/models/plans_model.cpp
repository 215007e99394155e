#include "gui/models/plans_model.h"

#include <algorithm>
#include <set>

namespace pipescope::gui {

void PlansModel::set_result(std::shared_ptr<const SearchResult> result, int64_t batch) {
  result_ = std::move(result);
  batch_ = batch;
  refilter();
}

void PlansModel::clear() { set_result(nullptr, 0); }

void PlansModel::set_schedule_filter(const QString& schedule) {
  schedule_ = schedule;
  refilter();
}

void PlansModel::set_stages_filter(int stages) {
  stages_ = stages;
  refilter();
}

void PlansModel::set_recompute_filter(Recompute recompute) {
  recompute_ = recompute;
  refilter();
}

bool PlansModel::visible(const Candidate& c) const {
  if (!schedule_.isEmpty() && QString::fromStdString(to_string(c.schedule)) != schedule_) return false;
  if (stages_ > 0 && c.stages != stages_) return false;
  if (recompute_ == Recompute::On && !c.recompute) return false;
  if (recompute_ == Recompute::Off && c.recompute) return false;
  return true;
}

void PlansModel::refilter() {
  beginResetModel();
  rows_.clear();
  if (result_) {
    for (const Candidate& c : result_->candidates) {
      if (visible(c)) rows_.push_back(c.index);
    }
  }
  endResetModel();
}

std::vector<int> PlansModel::stage_values() const {
  std::set<int> ks;
  if (result_) {
    for (const Candidate& c : result_->candidates) ks.insert(c.stages);
  }
  return {ks.begin(), ks.end()};
}

std::vector<int> PlansModel::front() const {
  std::vector<int> out;
  if (!result_) return out;
  for (const Candidate& c : result_->candidates) {
    if (c.pareto) out.push_back(c.index);
  }
  const auto& cs = result_->candidates;
  std::sort(out.begin(), out.end(), [&](int a, int b) {
    return cs[a].peak_bytes != cs[b].peak_bytes ? cs[a].peak_bytes < cs[b].peak_bytes : a < b;
  });
  return out;
}

std::optional<PlansModel::Point> PlansModel::without_offload(int row) const {
  const Candidate& c = candidate(row);
  if (!c.offload_chosen || c.offload_trials.empty() || c.offload_trials.front().step_ns <= 0) return std::nullopt;
  const Candidate::OffloadTrial& none = c.offload_trials.front();
  Point p;
  for (int64_t b : none.stage_peak_bytes) p.peak_bytes = std::max(p.peak_bytes, b);
  p.throughput_samples_per_s = static_cast<double>(batch_) * 1e9 / static_cast<double>(none.step_ns);
  return p;
}

double PlansModel::max_throughput() const {
  double m = 0;
  if (result_) {
    for (const Candidate& c : result_->candidates) m = std::max(m, c.throughput_samples_per_s);
  }
  return m;
}

int64_t PlansModel::max_peak_bytes() const {
  int64_t m = 0;
  if (result_) {
    for (const Candidate& c : result_->candidates) m = std::max(m, c.peak_bytes);
  }
  return m;
}

MemoryAxis PlansModel::memory_axis() const {
  return gui::memory_axis(max_peak_bytes(), result_ ? result_->memory_limit_bytes : 0);
}

int PlansModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int PlansModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlansModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Candidate& c = candidate(index.row());
  const double gib = static_cast<double>(c.peak_bytes) / (1024.0 * 1024 * 1024);
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Label: return QString::fromStdString(c.label());
        case StepMs: return QString::number(static_cast<double>(c.step_ns) / 1e6, 'f', 3);
        case Throughput: return QString::number(c.throughput_samples_per_s, 'f', 1);
        case PeakGiB: return QString::number(gib, 'f', 2);
        case Bubble: return QString::number(100 * c.bubble_fraction, 'f', 1) + " %";
        case Fits: return c.fits ? QString("yes") : QString("no");
        case Pareto: return c.pareto ? QString("\u2605") : QString();
        case Rank: return c.rank > 0 ? QVariant(c.rank) : QVariant(QString("-"));
      }
      return {};
    case Qt::ToolTipRole:
      return QString("%1\nstep %2 ms, %3 samples/s, bubble %4 %\npeak %5 GiB per device%6%7")
          .arg(QString::fromStdString(c.label()))
          .arg(static_cast<double>(c.step_ns) / 1e6, 0, 'f', 3)
          .arg(c.throughput_samples_per_s, 0, 'f', 1)
          .arg(100 * c.bubble_fraction, 0, 'f', 1)
          .arg(gib, 0, 'f', 2)
          .arg(c.fits ? "" : " (does not fit)")
          .arg(c.pareto ? "\non the Pareto front" : "") +
          (c.plan.offload.active() ? QString("\nactivation offload: %1%2")
                                         .arg(QString::fromStdString(to_string(c.plan.offload.policy)))
                                         .arg(c.offload_chosen ? " (it does not fit without)" : "")
                                   : QString());
    case CandidateRole: return c.index;
    case ThroughputRole: return c.throughput_samples_per_s;
    case PeakBytesRole: return static_cast<qlonglong>(c.peak_bytes);
    case FitsRole: return c.fits;
    case ParetoRole: return c.pareto;
    case ScheduleRole: return QString::fromStdString(to_string(c.schedule));
    case OffloadRole: return QString::fromStdString(to_string(c.plan.offload.policy));
  }
  return {};
}

QVariant PlansModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) return section;
  static const char* names[] = {"Plan", "Step ms", "Samples/s", "Peak GiB", "Bubble", "Fits", "Pareto", "Rank"};
  return section >= 0 && section < ColumnCount ? QVariant(QString(names[section])) : QVariant();
}

}  // namespace pipescope::gui
