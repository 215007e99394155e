// The table of gui/models/llm_plans_model.h: rows are LlmSearchResult::best in order,
// filtered by value per dimension; colours from palette.h's ramp.
#include "gui/models/llm_plans_model.h"

#include <algorithm>

#include "gui/models/palette.h"

namespace pipescope::gui {

QString to_qstring(LlmDimension dimension) {
  switch (dimension) {
    case LlmDimension::T: return "t";
    case LlmDimension::D: return "d";
    case LlmDimension::Cp: return "cp";
    case LlmDimension::Ep: return "ep";
    case LlmDimension::Sharding: return "sharding";
  }
  return "t";
}

int dimension_value(const ParallelLayout& l, LlmDimension dimension) {
  switch (dimension) {
    case LlmDimension::T: return l.t;
    case LlmDimension::D: return l.d;
    case LlmDimension::Cp: return l.cp;
    case LlmDimension::Ep: return l.ep;
    case LlmDimension::Sharding: return static_cast<int>(l.sharding);
  }
  return 0;
}

QString dimension_value_name(LlmDimension dimension, int value) {
  if (dimension == LlmDimension::Sharding) return QString::fromStdString(to_string(static_cast<Sharding>(value)));
  return QString::number(value);
}

void LlmPlansModel::set_result(std::shared_ptr<const LlmSearchResult> result) {
  beginResetModel();
  result_ = std::move(result);
  std::fill(std::begin(filters_), std::end(filters_), -1);
  refilter();
  endResetModel();
}

void LlmPlansModel::set_filter(LlmDimension dimension, int value) {
  beginResetModel();
  filters_[static_cast<int>(dimension)] = value;
  refilter();
  endResetModel();
}

void LlmPlansModel::clear_filters() {
  beginResetModel();
  std::fill(std::begin(filters_), std::end(filters_), -1);
  refilter();
  endResetModel();
}

void LlmPlansModel::set_colour_by(LlmDimension dimension) {
  colour_by_ = dimension;
  if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1), {Qt::DecorationRole});
}

void LlmPlansModel::refilter() {
  rows_.clear();
  if (!result_) return;
  for (std::size_t i = 0; i < result_->best.size(); ++i) {
    bool shown = true;
    for (int d = 0; d < 5; ++d) {
      const int want = filters_[d];
      if (want >= 0 && dimension_value(result_->best[i].layout, static_cast<LlmDimension>(d)) != want) shown = false;
    }
    if (shown) rows_.push_back(i);
  }
}

std::vector<int> LlmPlansModel::values(LlmDimension dimension) const {
  std::vector<int> out;
  if (!result_) return out;
  for (const LlmCandidate& c : result_->best) out.push_back(dimension_value(c.layout, dimension));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

QColor LlmPlansModel::colour(int row) const { return value_colour(dimension_value(candidate(row).layout, colour_by_)); }

QColor LlmPlansModel::value_colour(int value) const {
  const std::vector<int> all = values(colour_by_);
  const auto at = std::lower_bound(all.begin(), all.end(), value) - all.begin();
  return ramp_color(all.size() < 2 ? 0.0 : static_cast<double>(at) / static_cast<double>(all.size() - 1));
}

int LlmPlansModel::row_of_candidate(int candidate) const {
  const auto it = std::find(rows_.begin(), rows_.end(), static_cast<std::size_t>(candidate));
  return candidate < 0 || it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

MemoryAxis LlmPlansModel::memory_axis() const {
  double peak = 0;
  if (result_) {
    for (const LlmCandidate& c : result_->best) peak = std::max(peak, c.peak_bytes);
  }
  return gui::memory_axis(static_cast<int64_t>(peak), result_ ? static_cast<int64_t>(result_->capacity) : 0);
}

int64_t LlmPlansModel::min_step_ns() const {
  int64_t out = 0;
  if (result_ && !result_->best.empty()) out = result_->best.front().step_ns;
  if (result_) {
    for (const LlmCandidate& c : result_->best) out = std::min(out, c.step_ns);
  }
  return out;
}

int64_t LlmPlansModel::max_step_ns() const {
  int64_t out = 0;
  if (result_) {
    for (const LlmCandidate& c : result_->best) out = std::max(out, c.step_ns);
  }
  return out;
}

QString llm_plan_description(const LlmPlanFile& f) {
  const LlmSearchResult& r = f.result;
  QString text = QString("%1 on %2 x %3 (%4 GB each), global batch %5, %6: the %7 fastest layouts that fit\n")
                     .arg(QString::fromStdString(f.model)).arg(f.gpus).arg(QString::fromStdString(f.gpu))
                     .arg(r.capacity / 1e9, 0, 'f', 1).arg(f.global_batch)
                     .arg(QString::fromStdString(to_string(f.framework))).arg(r.best.size());
  text += QString("searched: %1 (t, cp, d, p) factorizations, %2 layouts, %3 valid, %4 fit in memory, %5 simulated\n")
              .arg(r.factorizations).arg(r.enumerated).arg(r.valid).arg(r.fitting).arg(r.simulated);
  text += "why:";
  for (const std::string& w : r.why) text += "\n  " + QString::fromStdString(w);
  return text;
}

int LlmPlansModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int LlmPlansModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LlmPlansModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const LlmCandidate& c = candidate(index.row());
  if (role == CandidateIndexRole) return static_cast<qulonglong>(rows_[static_cast<std::size_t>(index.row())]);
  if (role == StepNsRole) return static_cast<qlonglong>(c.step_ns);
  if (role == ColourValueRole) return dimension_value(c.layout, colour_by_);
  if (role == Qt::DecorationRole && index.column() == Layout) return colour(index.row());
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Layout: return QString::fromStdString(layout_summary(c.layout));
    case StepMs: return static_cast<double>(c.step_ns) / 1e6;
    case PeakGB: return c.peak_bytes / 1e9;
    case Bubble: return c.bubble;
    case Mfu: return c.mfu;
    default: return {};
  }
}

QVariant LlmPlansModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"layout", "step ms", "peak GB", "bubble", "MFU"};
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace pipescope::gui
