// The layouts an LLM-scale search timed (llm/layout_search.h's LlmSearchResult::best), as
// a table the plans view can filter and colour by t, d, cp, ep and sharding. Rows keep
// the search's order (fastest first); a filter hides rows, never reorders them; the colour
// of a row is ramp_color of its value's place among the values the result spans, so the
// same value has the same colour whatever is filtered. The axes span every layout of the
// result, so a filter hides points and never moves the others.
//   LlmPlansModel m; m.set_result(std::make_shared<LlmSearchResult>(search_layouts(q, gpu)));
//   m.set_filter(LlmDimension::T, 8); m.set_colour_by(LlmDimension::Sharding);
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <memory>
#include <vector>

#include "gui/models/plot_scale.h"
#include "llm/layout_search.h"
#include "llm/llm_plan_json.h"

namespace pipescope::gui {

enum class LlmDimension { T, D, Cp, Ep, Sharding };
QString to_qstring(LlmDimension dimension);               // "t", "d", "cp", "ep", "sharding"
int dimension_value(const ParallelLayout& layout, LlmDimension dimension);  // sharding as its enum
QString dimension_value_name(LlmDimension dimension, int value);           // "8", "distributed-optimizer"
// What the llm-plans tab says about a file: the job, the search's counts, then the why lines.
QString llm_plan_description(const LlmPlanFile& file);

class LlmPlansModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Layout, StepMs, PeakGB, Bubble, Mfu, ColumnCount };
  enum Role { CandidateIndexRole = Qt::UserRole + 1, StepNsRole, ColourValueRole };

  using QAbstractTableModel::QAbstractTableModel;
  void set_result(std::shared_ptr<const LlmSearchResult> result);
  const LlmSearchResult* result() const { return result_.get(); }

  // value < 0: every value of that dimension.
  void set_filter(LlmDimension dimension, int value);
  void clear_filters();
  void set_colour_by(LlmDimension dimension);
  LlmDimension colour_by() const { return colour_by_; }
  // The values the result spans in `dimension`, ascending (for the filter boxes).
  std::vector<int> values(LlmDimension dimension) const;
  QColor colour(int row) const;
  QColor value_colour(int value) const;  // of a value of colour_by() (the legend's swatches)
  // The row showing best[candidate]; -1 when the filters hide it.
  int row_of_candidate(int candidate) const;
  // Over every layout of the result, filtered or not: peak memory per GPU against the
  // capacity searched (plot_scale.h's axis), and the fastest and slowest step.
  MemoryAxis memory_axis() const;
  int64_t min_step_ns() const;
  int64_t max_step_ns() const;
  const LlmCandidate& candidate(int row) const { return result_->best[rows_[static_cast<std::size_t>(row)]]; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  void refilter();

  std::shared_ptr<const LlmSearchResult> result_;
  std::vector<std::size_t> rows_;          // indices into result_->best
  int filters_[5] = {-1, -1, -1, -1, -1};  // by LlmDimension
  LlmDimension colour_by_ = LlmDimension::T;
};

}  // namespace pipescope::gui
