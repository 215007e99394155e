// The plan controls: profile and hardware files, K, M, micro-batch size, schedule,
// chunks, re-materialisation, partitioner and replicas r per stage. Emits changed() on every edit; the
// main window turns choice() into a PlanInputs and asks the PlanWorker to simulate.
// Under them, what-if: link bandwidth and latency, one slow device and its speed, the
// optimizer step and the p2p mode; these emit whatIfChanged(), which the main window
// debounces before simulating. A version 3 plan's job (set_job) reads K, M, b, schedule,
// chunks and r, and a job box shown only then: t, SP, cp, ep, recompute and sharding.
#pragma once

#include <QWidget>

#include "gui/models/job_model.h"
#include "gui/models/what_if.h"
#include "planner/plan_builder.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
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
  // Shows `choice` (a plans-view candidate) without emitting changed().
  void set_choice(const PlanChoice& choice);
  void set_files(const QString& profile, const QString& hardware);  // a profile's plans: every control applies
  // A version 3 plan's job: its plan file and GPU file in the file rows; K (= p), M, b,
  // schedule, chunks (= v) and r (= d) edit its layout; recompute, partitioner and what-if,
  // which a job does not read, are disabled.
  void set_job(const QString& plan, const QString& gpu);
  // The job box: shows `layout` without emitting changed(); job_layout() reads it back.
  void set_job_layout(const JobLayoutChoice& layout);
  JobLayoutChoice job_layout() const;
  QSpinBox* tensor_parallel_box() const { return t_; }
  QSpinBox* expert_parallel_box() const { return ep_; }
  WhatIf what_if() const;
  void set_what_if(const WhatIf& what_if);  // emits whatIfChanged()
  // The runtime's costs (--runtime; `label` names the file), charged in every simulation;
  // its p2p, when it has one, sets the p2p box. Emits whatIfChanged().
  void set_runtime(std::shared_ptr<const RuntimeCosts> runtime, const QString& label);
  QSpinBox* stages_box() const { return stages_; }
  QSpinBox* microbatches_box() const { return microbatches_; }
  QComboBox* schedule_box() const { return schedule_; }

 signals:
  void changed();
  void whatIfChanged();
  void openProfileRequested();
  void openHardwareRequested();

 private:
  void update_enabled();
  void enable_profile_controls(bool on);  // recompute, partitioner, what-if: read by a profile's plans only
  ScheduleKind selected_schedule() const;  // the schedule box's entry, parsed once here
  QWidget* build_what_if();
  QWidget* build_job_box();
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
  QDoubleSpinBox* bandwidth_;
  QDoubleSpinBox* latency_;
  QSpinBox* slow_device_;
  QDoubleSpinBox* slow_speed_;
  QComboBox* optimizer_step_;
  QComboBox* p2p_;
  QLabel* runtime_label_;
  std::shared_ptr<const RuntimeCosts> runtime_;  // --runtime's file (null: the ops alone)
  QWidget* what_if_box_ = nullptr;
  QWidget* job_box_ = nullptr;
  QSpinBox* t_;
  QCheckBox* sequence_parallel_;
  QSpinBox* cp_;
  QSpinBox* ep_;
  QComboBox* job_recompute_;
  QComboBox* sharding_;
  bool quiet_ = false;
};

}  // namespace pipescope::gui
