// The one model behind every plans view (gui/app/plans_view.h), whatever search made its
// rows. A source writes a PlanSet once (planner_plan_set.h: the profile planner's
// candidates; llm_plan_set.h: a `pipescope.llm_plan` result): rows with a label, a step, a
// peak per device, fits or not, on the search's front or not, and one value per named
// dimension (schedule, K, ... or t, d, cp, ...); the capacity; the memory unit. The model
// shows it as a table the view filters by value per dimension and colours by one dimension.
// Invariants: rows keep the source's order (set row i is the source's i-th: Candidate::index
// i, best[i]); a filter hides rows, never reorders them, and moves neither the axes (they
// span every row) nor the front (the search's own); a dimension the set lacks is refused
// (InputError naming it and the set's dimensions), never a silently empty table.
// Units, one convention on every axis and column: step time in ms; peak memory per device in
// the set's unit, GiB (2^30 bytes) for pipescope's own numbers, GB (10^9 bytes) where the
// source quotes llm-plan's table (Megatron's unit), the unit named in every title.
//   PlansModel m; m.set_plans(plan_set_of(*search_result));  // or plan_set_of(llm_plan_file.result)
//   m.set_filter("K", 4); m.set_colour_by("r"); const PlanRow& p = m.at(row);
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QStringList>
#include <functional>
#include <optional>
#include <vector>

#include "gui/models/plot_scale.h"

namespace pipescope::gui {

struct MemoryUnit {
  QString name;      // "GiB", "GB"
  double bytes = 1;  // 2^30, 1e9
  QString meaning;   // "GiB = 2^30 B", "GB = 10^9 B, llm-plan's unit"
};
MemoryUnit gib_unit();
MemoryUnit llm_plan_gb_unit();

// One value a dimension takes among the rows, named and coloured.
struct PlanValue {
  int value = 0;
  QString name;  // "8", "zb-h1", "distributed-optimizer"
  QColor colour;
};
struct PlanDimension {
  QString name;                   // "schedule", "K", "t", "sharding", ...
  std::vector<PlanValue> values;  // those the rows take, ascending by value
};

// Where a row sits in the scatter.
struct PlanPoint {
  int64_t peak_bytes = 0;  // per device
  int64_t step_ns = 0;
};

struct PlanRow {
  QString label;  // "1f1b K=4 r=2 M=32", "t 2 cp 1 ep 4 d 16 p 1 ..."
  PlanPoint point;
  bool fits = true;
  bool pareto = false;   // on the search's own front
  bool offload = false;  // activation offload (drawn as a diamond)
  std::optional<PlanPoint> without_offload;  // where it sat before the search took offload for it
  std::vector<int> values;  // one per PlanSet::dimensions
  QStringList cells;        // one per PlanSet::columns
  QString tooltip;
};

struct PlanSet {
  QString title;        // "Every candidate plan", "llm-plan's layouts"
  QString device;       // "device", "GPU"
  QString label_header; // "Plan", "Layout"
  MemoryUnit unit;
  int64_t capacity_bytes = 0;  // per device; 0: none (ideal hardware)
  std::vector<PlanDimension> dimensions;
  QStringList columns;  // the source's own table columns, after label, step and peak
  std::vector<PlanRow> rows;

  // Appends dimension `name` with the rows' values[dimensions.size()]: each value once,
  // ascending, named by `name_of` (default: the number) and coloured by `colour_of`
  // (default: its place among the values on palette.h's ramp, the smallest at 0, the
  // largest at 1). Call after the rows are filled, in the order of their values.
  void add_dimension(const QString& name, const std::function<QString(int)>& name_of = {},
                     const std::function<QColor(int)>& colour_of = {});
};

class PlansModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Label, StepMs, Peak, SourceColumns };
  enum Role { EntryRole = Qt::UserRole + 1, StepNsRole, PeakBytesRole, FitsRole, ParetoRole };

  using QAbstractTableModel::QAbstractTableModel;
  // A new set keeps the filters and the colour dimension that it has too (values it
  // lacks drop to "every value"); the colour falls back to its first dimension.
  void set_plans(PlanSet plans);
  void clear();
  const PlanSet* plans() const { return plans_ ? &*plans_ : nullptr; }

  // value < 0: every value. Both throw InputError for a dimension the set lacks.
  void set_filter(const QString& dimension, int value);
  int filter(const QString& dimension) const;
  void clear_filters();
  void set_colour_by(const QString& dimension);
  const QString& colour_by() const { return colour_by_; }
  const PlanDimension& dimension(const QString& name) const;  // throws as set_filter
  std::vector<int> values(const QString& dimension) const;    // ascending
  int value(int row, const QString& dimension) const;
  QString value_name(int row, const QString& dimension) const;
  QColor colour(int row) const;          // of its value of colour_by()
  QColor value_colour(int value) const;  // of a value of colour_by() (the legend's swatches)

  const PlanRow& at(int row) const { return plans_->rows[rows_[static_cast<std::size_t>(row)]]; }
  int entry(int row) const { return rows_[static_cast<std::size_t>(row)]; }  // its index in the set
  int row_of(int entry) const;  // -1 when a filter hides it
  // Set rows on the search's front, peak ascending (the staircase the view draws).
  std::vector<int> front() const;
  int fitting() const;
  // Over every row of the set, filtered or not.
  int64_t max_peak_bytes() const;
  MemoryAxis memory_axis() const;  // plot_scale.h's, for the rows and the capacity
  int64_t min_step_ns() const;
  int64_t max_step_ns() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  int dimension_index(const QString& name) const;  // throws
  void refilter();

  std::optional<PlanSet> plans_;
  std::vector<int> rows_;       // indices into plans_->rows
  std::vector<int> filters_;    // by dimension; -1: every value
  QString colour_by_;
};

}  // namespace pipescope::gui
