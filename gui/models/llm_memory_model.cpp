// The per-rank split of llm/memory.h as table rows and stacked bars (gui/models/llm_memory_model.h).
#include "gui/models/llm_memory_model.h"

#include <algorithm>

#include "core/error.h"
#include "llm/profile_layers.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/plan_layout.h"

namespace pipescope::gui {

std::vector<LlmMemoryBar> llm_memory_bars(const LlmMemory& memory) {
  std::vector<LlmMemoryBar> bars;
  for (const RankMemory& s : memory.stages) {
    bars.push_back({s.rank, {s.parameter_bytes, s.gradient_bytes, s.optimizer_bytes, s.activation_bytes}});
  }
  return bars;
}

std::optional<std::vector<LlmMemoryBar>> plan_llm_memory(const Profile& profile, const Plan& plan, QString* why) {
  auto fail = [&](const std::string& reason) -> std::optional<std::vector<LlmMemoryBar>> {
    if (why) *why = QString::fromStdString(reason);
    return std::nullopt;
  };
  try {
    const std::optional<ParallelLayout> layout = plan_layout(plan);
    if (!layout) return fail("the plan carries no layout (a version 2 plan's \"layout\")");
    std::string reason;
    const std::optional<TransformerShape> shape = transformer_shape_of(profile, layout->t, &reason);
    if (!shape) return fail(reason);
    return llm_memory_bars(llm_memory(*shape, validate_layout(*shape, *layout, layout->gpus())));
  } catch (const InputError& e) {
    return fail(e.what());
  }
}

void LlmMemoryModel::set_plan(const Profile& profile, const Plan& plan, int64_t capacity_bytes) {
  QString why;
  std::optional<std::vector<LlmMemoryBar>> bars = plan_llm_memory(profile, plan, &why);
  if (bars) {
    set_bars(std::move(*bars), capacity_bytes);
  } else {
    clear(why);
  }
}

void LlmMemoryModel::set_bars(std::vector<LlmMemoryBar> bars, int64_t capacity_bytes, QString source) {
  beginResetModel();
  bars_ = std::move(bars);
  capacity_ = capacity_bytes;
  source_ = std::move(source);
  message_.clear();
  endResetModel();
}

void LlmMemoryModel::clear(const QString& why) {
  beginResetModel();
  bars_.clear();
  capacity_ = 0;
  message_ = why;
  endResetModel();
}

double LlmMemoryModel::max_bytes() const {
  double top = 0;
  for (const LlmMemoryBar& b : bars_) top = std::max(top, b.total());
  const double capacity = static_cast<double>(capacity_);
  return capacity > 0 && capacity <= 1.5 * top ? std::max(top, capacity) : top;
}

int LlmMemoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(bars_.size());
}

int LlmMemoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LlmMemoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const LlmMemoryBar& b = bars_[index.row()];
  const int c = index.column();
  const double bytes = c == Rank ? b.rank : c == Total ? b.total() : b.parts[c - Parameters];
  if (role == RawRole) return bytes;
  if (role == FitsRole) return fits(index.row());
  if (role == Qt::DisplayRole) {
    if (c == Rank) return b.rank;
    return QString::number(bytes / (1024.0 * 1024.0 * 1024.0), 'f', 2);
  }
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant LlmMemoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section;
  switch (section) {
    case Rank: return "pipeline rank";
    case Parameters: return "parameters GiB";
    case Gradients: return "gradients GiB";
    case Optimizer: return "optimizer state GiB";
    case Activations: return "activations GiB";
    case Total: return "total GiB";
    default: return {};
  }
}

}  // namespace pipescope::gui
