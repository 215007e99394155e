// gui/models/plans_model.h: a PlanSet's rows filtered by value per dimension, coloured by
// one dimension's value; ranges and the front over every row of the set.
#include "gui/models/plans_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

MemoryUnit gib_unit() { return {"GiB", 1024.0 * 1024 * 1024, "GiB = 2^30 B"}; }

MemoryUnit llm_plan_gb_unit() { return {"GB", 1e9, "GB = 10^9 B, llm-plan's unit"}; }

void PlanSet::add_dimension(const QString& name, const std::function<QString(int)>& name_of,
                            const std::function<QColor(int)>& colour_of) {
  const std::size_t d = dimensions.size();
  std::vector<int> seen;
  for (const PlanRow& r : rows) seen.push_back(r.values.at(d));
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  PlanDimension dim{name, {}};
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const int v = seen[i];
    const double place = seen.size() < 2 ? 0.0 : static_cast<double>(i) / static_cast<double>(seen.size() - 1);
    dim.values.push_back({v, name_of ? name_of(v) : QString::number(v), colour_of ? colour_of(v) : ramp_color(place)});
  }
  dimensions.push_back(std::move(dim));
}

void PlansModel::set_plans(PlanSet plans) {
  beginResetModel();
  std::vector<int> kept(plans.dimensions.size(), -1);
  for (std::size_t d = 0; plans_ && d < plans.dimensions.size(); ++d) {
    const PlanDimension& dim = plans.dimensions[d];
    for (std::size_t old = 0; old < plans_->dimensions.size(); ++old) {
      if (plans_->dimensions[old].name != dim.name) continue;
      const int want = filters_[old];
      const bool present = std::any_of(dim.values.begin(), dim.values.end(), [&](const PlanValue& v) { return v.value == want; });
      kept[d] = present ? want : -1;
    }
  }
  const bool has_colour = std::any_of(plans.dimensions.begin(), plans.dimensions.end(),
                                      [&](const PlanDimension& d) { return d.name == colour_by_; });
  if (!has_colour) colour_by_ = plans.dimensions.empty() ? QString() : plans.dimensions.front().name;
  plans_ = std::move(plans);
  filters_ = std::move(kept);
  refilter();
  endResetModel();
}

void PlansModel::clear() {
  beginResetModel();
  plans_.reset();
  filters_.clear();
  rows_.clear();
  endResetModel();
}

int PlansModel::dimension_index(const QString& name) const {
  QStringList names;
  for (std::size_t d = 0; plans_ && d < plans_->dimensions.size(); ++d) {
    if (plans_->dimensions[d].name == name) return static_cast<int>(d);
    names << plans_->dimensions[d].name;
  }
  const QString rows = plans_ ? QString("\"%1\"").arg(plans_->title) : QString("an empty plans view");
  throw InputError(QString("plans: %1 has no dimension \"%2\" (its dimensions: %3)")
                       .arg(rows, name, names.join(", "))
                       .toStdString());
}

void PlansModel::set_filter(const QString& dimension, int value) {
  const int d = dimension_index(dimension);
  beginResetModel();
  filters_[static_cast<std::size_t>(d)] = value < 0 ? -1 : value;
  refilter();
  endResetModel();
}

int PlansModel::filter(const QString& dimension) const { return filters_[static_cast<std::size_t>(dimension_index(dimension))]; }

void PlansModel::clear_filters() {
  beginResetModel();
  std::fill(filters_.begin(), filters_.end(), -1);
  refilter();
  endResetModel();
}

void PlansModel::set_colour_by(const QString& dimension) {
  dimension_index(dimension);
  colour_by_ = dimension;
  if (!rows_.empty()) emit dataChanged(index(0, Label), index(rowCount() - 1, Label), {Qt::DecorationRole});
}

void PlansModel::refilter() {
  rows_.clear();
  if (!plans_) return;
  for (std::size_t i = 0; i < plans_->rows.size(); ++i) {
    const std::vector<int>& v = plans_->rows[i].values;
    bool shown = true;
    for (std::size_t d = 0; d < filters_.size(); ++d) shown = shown && (filters_[d] < 0 || v[d] == filters_[d]);
    if (shown) rows_.push_back(static_cast<int>(i));
  }
}

const PlanDimension& PlansModel::dimension(const QString& name) const {
  return plans_->dimensions[static_cast<std::size_t>(dimension_index(name))];
}

std::vector<int> PlansModel::values(const QString& name) const {
  std::vector<int> out;
  for (const PlanValue& v : dimension(name).values) out.push_back(v.value);
  return out;
}

int PlansModel::value(int row, const QString& name) const {
  return at(row).values[static_cast<std::size_t>(dimension_index(name))];
}

QString PlansModel::value_name(int row, const QString& name) const {
  const int v = value(row, name);
  for (const PlanValue& pv : dimension(name).values) {
    if (pv.value == v) return pv.name;
  }
  return QString::number(v);
}

QColor PlansModel::colour(int row) const {
  return colour_by_.isEmpty() ? ramp_color(0.0) : value_colour(value(row, colour_by_));
}

QColor PlansModel::value_colour(int value) const {
  if (!plans_ || colour_by_.isEmpty()) return ramp_color(0.0);
  for (const PlanValue& v : dimension(colour_by_).values) {
    if (v.value == value) return v.colour;
  }
  return ramp_color(0.0);
}

int PlansModel::row_of(int entry) const {
  const auto it = std::find(rows_.begin(), rows_.end(), entry);
  return entry < 0 || it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

std::vector<int> PlansModel::front() const {
  std::vector<int> out;
  if (!plans_) return out;
  const std::vector<PlanRow>& all = plans_->rows;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].pareto) out.push_back(static_cast<int>(i));
  }
  std::sort(out.begin(), out.end(), [&](int a, int b) {
    const int64_t pa = all[static_cast<std::size_t>(a)].point.peak_bytes, pb = all[static_cast<std::size_t>(b)].point.peak_bytes;
    return pa != pb ? pa < pb : a < b;
  });
  return out;
}

int PlansModel::fitting() const {
  if (!plans_) return 0;
  return static_cast<int>(std::count_if(plans_->rows.begin(), plans_->rows.end(), [](const PlanRow& r) { return r.fits; }));
}

int64_t PlansModel::max_peak_bytes() const {
  int64_t m = 0;
  if (plans_) {
    for (const PlanRow& r : plans_->rows) m = std::max(m, r.point.peak_bytes);
  }
  return m;
}

MemoryAxis PlansModel::memory_axis() const { return gui::memory_axis(max_peak_bytes(), plans_ ? plans_->capacity_bytes : 0); }

int64_t PlansModel::min_step_ns() const {
  if (!plans_ || plans_->rows.empty()) return 0;
  int64_t m = plans_->rows.front().point.step_ns;
  for (const PlanRow& r : plans_->rows) m = std::min(m, r.point.step_ns);
  return m;
}

int64_t PlansModel::max_step_ns() const {
  int64_t m = 0;
  if (plans_) {
    for (const PlanRow& r : plans_->rows) m = std::max(m, r.point.step_ns);
  }
  return m;
}

int PlansModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

int PlansModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid()) return 0;
  return SourceColumns + (plans_ ? static_cast<int>(plans_->columns.size()) : 0);
}

QVariant PlansModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const PlanRow& r = at(index.row());
  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == Label) return r.label;
      if (index.column() == StepMs) return QString::number(static_cast<double>(r.point.step_ns) / 1e6, 'f', 3);
      if (index.column() == Peak) return QString::number(static_cast<double>(r.point.peak_bytes) / plans_->unit.bytes, 'f', 2);
      return r.cells.value(index.column() - SourceColumns);
    case Qt::DecorationRole: return index.column() == Label ? QVariant(colour(index.row())) : QVariant();
    case Qt::ToolTipRole: return r.tooltip;
    case EntryRole: return entry(index.row());
    case StepNsRole: return static_cast<qlonglong>(r.point.step_ns);
    case PeakBytesRole: return static_cast<qlonglong>(r.point.peak_bytes);
    case FitsRole: return r.fits;
    case ParetoRole: return r.pareto;
  }
  return {};
}

QVariant PlansModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || !plans_ || section < 0) return {};
  if (section == Label) return plans_->label_header;
  if (section == StepMs) return QString("Step ms");
  if (section == Peak) return "Peak " + plans_->unit.name;
  return section < columnCount() ? QVariant(plans_->columns[section - SourceColumns]) : QVariant();
}

}  // namespace pipescope::gui
