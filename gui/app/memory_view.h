// Per-stage memory over the step: one small chart per pipeline stage, static bytes
// (weights, gradients, optimizer state) under the activations held over time (stage
// colour) under the transients (transient_color(): tensors received and sent, layer
// workspace, the loss gradient, output gradients held from I to W), the device
// capacity as a dashed line. The top of a chart's highest point is the stage's
// peak_memory_bytes, the number `pipescope simulate` prints. A stage that does not fit is drawn in
// red (fill, frame and title). All charts share one y axis so stages compare; it
// reaches the capacity, or with "zoom to usage" just above the highest peak.
// With more than kMaxSmallMultiples stages the small charts would be too small to
// read: one chart overlays every stage's total (static + activations + transients) as a line
// coloured along a ramp by stage, with a stage legend (stage 0 ... K-1) under it.
#pragma once

#include <QWidget>

class QCheckBox;

#include "gui/models/memory_curves.h"

namespace pipescope::gui {

class MemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);
  void set_curves(const MemoryCurves& curves);
  const MemoryCurves& curves() const { return curves_; }
  // The chart area of stage `s`, in widget coordinates.
  // (Overlaid: the one chart's area, for every s.)
  QRect stage_rect(int s) const;
  static constexpr int kMaxSmallMultiples = 16;
  bool overlaid() const { return static_cast<int>(curves_.stages.size()) > kMaxSmallMultiples; }
  // The colour stage s's activations are filled with (red when it does not fit).
  QColor stage_fill(int s) const;
  QSize sizeHint() const override { return {900, 300}; }
  // Off: the y axis reaches just above the highest peak (the capacity line may be off scale).
  void set_scale_to_capacity(bool on);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  void paint_header(class QPainter& p);
  void paint_stage_bands(class QPainter& p, int s, double ymax, double tend);
  void paint_stage_labels(class QPainter& p, int s, int64_t top, double ymax, double tend);
  void paint_overlay(class QPainter& p, int64_t top, double ymax, double tend);
  void paint_legend(class QPainter& p);
  MemoryCurves curves_;
  QCheckBox* zoom_;
};

}  // namespace pipescope::gui
