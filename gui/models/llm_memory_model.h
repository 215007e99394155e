// What each GPU of each pipeline rank keeps, when the plan carries an LLM layout (a v2
// plan's "layout"): parameters, gradients, optimizer state and activations, apart, as
// llm/memory.h computes them the way Megatron-LM keeps them, against the device's
// capacity. One row per pipeline rank; the columns are the four parts and their total in
// GiB, RawRole their bytes. Invariant: a row's parts sum to its total, which is
// llm_memory(shape, layout).stages[rank].total() (llm/memory.h); a plan without a layout (or a profile
// whose specs do not state the model) has no rows and says why in message(). A version 3
// plan's job fills it with evaluate_job's ranks (set_bars, gui/models/job_model.h) against
// its GPU file's memory.
//   LlmMemoryModel m;
//   m.set_plan(profile, plan, hardware.memory_bytes);
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <array>
#include <optional>
#include <vector>

#include "core/plan.h"
#include "core/profile.h"
#include "llm/memory.h"

namespace pipescope::gui {

// One stacked bar: bytes per GPU of pipeline rank `rank`, bottom to top.
struct LlmMemoryBar {
  int rank = 0;
  std::array<double, 4> parts{};  // parameters, gradients, optimizer state, activations
  double total() const { return parts[0] + parts[1] + parts[2] + parts[3]; }
};

// A rank's total fits a GPU of `capacity_bytes` (0: unbounded): total <= capacity, the bars'
// red (a job's fit against its launch headroom is JobEvaluation::fits, the search's test).
inline bool fits_capacity(double total_bytes, int64_t capacity_bytes) {
  return capacity_bytes <= 0 || total_bytes <= static_cast<double>(capacity_bytes);
}

// One bar per pipeline rank of `memory` (a plan's layout's, or a job's evaluate_job report's).
std::vector<LlmMemoryBar> llm_memory_bars(const LlmMemory& memory);

// llm_memory(shape, layout) of the plan's layout over the profile's model
// (llm/profile_layers.h), validated as Megatron-LM checks it, one bar per pipeline rank;
// nullopt with `why` for a plan without a layout or a model the specs do not state.
std::optional<std::vector<LlmMemoryBar>> plan_llm_memory(const Profile& profile, const Plan& plan, QString* why = nullptr);

class LlmMemoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Parameters, Gradients, Optimizer, Activations, Total, ColumnCount };
  enum Role { RawRole = Qt::UserRole + 1, FitsRole };
  static constexpr std::array<const char*, 4> kPartNames = {"parameters", "gradients", "optimizer state", "activations"};

  using QAbstractTableModel::QAbstractTableModel;
  // capacity_bytes 0: unbounded.
  void set_plan(const Profile& profile, const Plan& plan, int64_t capacity_bytes);
  // `source`: whose bytes these are, for the chart's title.
  void set_bars(std::vector<LlmMemoryBar> bars, int64_t capacity_bytes, QString source = "as Megatron-LM keeps it");
  void clear(const QString& why = {});

  const std::vector<LlmMemoryBar>& bars() const { return bars_; }
  int64_t capacity_bytes() const { return capacity_; }
  // The y axis's top: the highest bar, or the capacity when it is within 1.5 x of it (a
  // capacity far above every bar would flatten them; the view then names it instead).
  double max_bytes() const;
  bool capacity_on_scale() const { return capacity_ > 0 && static_cast<double>(capacity_) <= max_bytes(); }
  bool fits(int row) const { return fits_capacity(bars_[row].total(), capacity_); }
  QString message() const { return message_; }
  QString source() const { return source_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<LlmMemoryBar> bars_;
  int64_t capacity_ = 0;
  QString message_;
  QString source_;
};

}  // namespace pipescope::gui
