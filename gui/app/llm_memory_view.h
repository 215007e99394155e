// What each GPU keeps, per pipeline rank, when the plan carries an LLM layout or a job: one stacked
// bar per rank (parameters, gradients, optimizer state, activations, bottom to top; the
// numbers of llm/memory.h through LlmMemoryModel), the device capacity as a dashed line,
// a rank over the capacity drawn with a red frame; bytes drawn in GiB (2^30), the capacity
// also in GB (10^9) as GPU files state it. All drawing reads the model; nothing
// here computes a byte.
#pragma once

#include <QColor>
#include <QWidget>

#include "gui/models/llm_memory_model.h"

namespace pipescope::gui {

class LlmMemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit LlmMemoryView(QWidget* parent = nullptr);
  void set_model(const LlmMemoryModel* model);
  // The colour of part i (LlmMemoryModel::kPartNames order).
  static QColor part_color(int part);
  // Rank r's bar, in widget coordinates (empty when there is no such rank).
  QRect bar_rect(int rank) const;
  QSize sizeHint() const override { return {900, 260}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QRect plot_rect() const;
  const LlmMemoryModel* model_ = nullptr;
};

}  // namespace pipescope::gui
