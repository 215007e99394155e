// The distribution tab: the current plan's step time under jitter as a histogram with
// the deterministic step, p50 and p99 marked, and below it how often each stage was the
// bottleneck of the critical path. Thin: the numbers come from gui/models/step_distribution.h;
// the window fills them when "Sample" is pressed (sampleRequested).
#pragma once

#include <QWidget>

#include "gui/models/step_distribution.h"

class QDoubleSpinBox;
class QLabel;

namespace pipescope::gui {

class DistributionView : public QWidget {
  Q_OBJECT
 public:
  explicit DistributionView(QWidget* parent = nullptr);
  void set_histogram(const StepHistogram& h);
  const StepHistogram& histogram() const { return histogram_; }
  // The spec the controls describe (1000 samples, seed 1).
  JitterSpec spec() const;
  QSize sizeHint() const override { return {900, 400}; }

 signals:
  void sampleRequested();

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QRect chart_rect() const;
  StepHistogram histogram_;
  QDoubleSpinBox* cv_;
  QDoubleSpinBox* straggler_p_;
  QDoubleSpinBox* straggler_slowdown_;
  QLabel* summary_;
};

}  // namespace pipescope::gui
