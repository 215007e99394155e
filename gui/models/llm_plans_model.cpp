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

QColor LlmPlansModel::colour(int row) const {
  const std::vector<int> all = values(colour_by_);
  const int value = dimension_value(candidate(row).layout, colour_by_);
  const auto at = std::lower_bound(all.begin(), all.end(), value) - all.begin();
  return ramp_color(all.size() < 2 ? 0.0 : static_cast<double>(at) / static_cast<double>(all.size() - 1));
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
