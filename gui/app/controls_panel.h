// The plan controls: profile and hardware files, K, M, micro-batch size, schedule,
// chunks, re-materialisation, partitioner and replicas r per stage. Emits changed() on every edit; the
// main window turns choice() into a PlanInputs and asks the PlanWorker to simulate.
#pragma once

#include <QWidget>

#include "planner/plan_builder.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace pipescope::gui {

struct AppOptions;

class ControlsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ControlsPanel(QWidget* parent = nullptr);
  void set_from(const AppOptions& options);
  PlanChoice choice() const;
  // Loads a sweep cell; micro-batch size and replicas change only when > 0.
  void set_cell(int stages, int microbatches, int microbatch_size = 0, int replicas = 0);
  void set_files(const QString& profile, const QString& hardware);
  QSpinBox* stages_box() const { return stages_; }
  QSpinBox* microbatches_box() const { return microbatches_; }
  QComboBox* schedule_box() const { return schedule_; }

 signals:
  void changed();
  void openProfileRequested();
  void openHardwareRequested();

 private:
  void update_enabled();
  QLabel* profile_;
  QLabel* hardware_;
  QSpinBox* stages_;
  QSpinBox* microbatches_;
  QSpinBox* microbatch_size_;
  QComboBox* schedule_;
  QSpinBox* chunks_;
  QCheckBox* recompute_;
  QComboBox* partition_;
  QSpinBox* replicas_;
  bool quiet_ = false;
};

}  // namespace pipescope::gui
