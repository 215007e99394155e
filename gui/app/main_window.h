// The main window: plan controls and the summary on the left, tabs on the right
// (timeline + memory, layers, sweep, compare, plans, A/B, distribution, llm-plans). It owns the models and the workers
// and only wires them: every number shown comes from an Evaluation (plan_evaluation.h)
// or a SweepResult computed off the GUI thread.
//   MainWindow w(parse_app_options(args)); w.show();
#pragma once

#include <QMainWindow>
#include <memory>
#include <optional>

#include "gui/app/app_options.h"
#include "gui/models/ab_model.h"
#include "gui/models/compare_model.h"
#include "gui/models/layer_table_model.h"
#include "gui/models/llm_memory_model.h"
#include "gui/models/plans_model.h"
#include "gui/models/summary_model.h"
#include "gui/models/sweep_model.h"
#include "gui/models/timeline_model.h"
#include "gui/models/workers.h"
#include "llm/llm_plan_json.h"
#include "planner/search.h"

class QLabel;
class QTabWidget;
class QTableView;
class QTimer;

namespace pipescope::gui {

class AbView;
class CompareView;
class ControlsPanel;
class LayerChart;
class LlmMemoryView;
class MemoryView;
class PlansView;
class SweepView;
class TimelineView;

// What the Sweep tab says when asked to sweep while a job is shown (it sweeps a profile's
// plans; the Plans tab searches the job's layouts).
inline constexpr const char* kJobSearchMessage =
    "a version 3 plan's job is shown: the sweep runs over a profile's plans (open a profile); the Plans tab "
    "searches this job's layouts";

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const AppOptions& options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Each returns false and shows the message in the status line when the file is bad.
  bool open_profile(const QString& path);
  bool open_hardware(const QString& path);  // empty path: ideal hardware
  bool open_measurement(const QString& path);
  bool open_trace(const QString& path);
  bool open_any(const QString& path);       // by the file's "format"
  void open_dropped(const class QMimeData& mime);  // what dropEvent does with the files
  void set_hardware(std::shared_ptr<const Hardware> hardware, const QString& label);
  // Writes the shown plan as pipescope.plan JSON (atomically; a job: a version 3 plan and
  // its profile beside, as llm-plan --out writes them); throws InputError.
  void save_plan(const QString& path) const;

  PlanInputs current_inputs() const;
  void simulate();
  void wait_for_plan() { plan_worker_.wait(); }
  void run_sweep();
  void show_tab(const QString& name);  // timeline | layers | sweep | compare | plans | ab | distribution | llm-plans

  // Plans: the planner's search for the current inputs (plan_search.h), off the GUI thread.
  void run_plans();
  void wait_for_plans() { plans_worker_.wait(); }
  // Shows candidate `index` of the last search everywhere (its own plan, partition included).
  void load_candidate(int index);
  // A/B: the plan shown becomes A; a plan file can be pinned too (pipescope.plan JSON).
  void pin_current();
  bool pin_plan_file(const QString& path);
  // Shows a plan file as the current plan: a v1 / v2 plan with the profile it names (loaded
  // unless it is the one shown), a v3 plan its job (job_model.h; no profile needed).
  // `profile_flag`: the --profile given beside --plan, refused (naming both) when it is not
  // the plan's own profile. False, with the reader's message in the status line, when the
  // file does not read.
  bool open_plan_file(const QString& path, const QString& profile_flag = {});
  // The job shown (a v3 plan's, as the controls edit it), null when a profile's plan is shown.
  const std::shared_ptr<const JobInputs>& job() const { return job_; }
  void wait_for_pin() { pin_worker_.wait(); }
  // Shows a `pipescope llm-plan --json` result (llm/llm_plan_json.h) in the llm-plans tab.
  bool open_llm_plan(const QString& path);
  // The first file named on the command line (--plan, --llm-plan) that could not be
  // read, as its reader said it; empty when all read. pipescope-gui --screenshot exits 2 on it.
  const QString& startup_error() const { return startup_error_; }
  // What-if edits are simulated after a short pause; this runs a pending one now.
  void flush_what_if();

  std::shared_ptr<const Evaluation> evaluation() const { return evaluation_; }
  ControlsPanel* controls() const { return controls_; }
  const SummaryModel& summary() const { return summary_; }
  const SweepModel& sweep() const { return sweep_; }
  const CompareModel& comparison() const { return compare_; }
  const TimelineModel& compare_rows() const { return compare_rows_; }
  TimelineView* timeline_view() const { return timeline_view_; }
  MemoryView* memory_view() const { return memory_view_; }
  const LlmMemoryModel& llm_memory() const { return llm_memory_; }
  LlmMemoryView* llm_memory_view() const { return llm_memory_view_; }
  SweepView* sweep_view() const { return sweep_view_; }
  // The Plans tab (the last search: its candidates, null before one) and the LLM plans tab
  // (an llm-plan result's layouts): one view and one model each (plans_view.h).
  const PlansModel& plans() const { return plans_; }
  const SearchResult* plans_result() const { return plans_result_.get(); }
  const LlmSearchResult* job_plans() const { return job_plans_.get(); }
  PlansView* plans_view() const { return plans_view_; }
  const PlansModel& llm_plans() const { return llm_plans_; }
  PlansView* llm_plans_view() const { return llm_plans_view_; }
  const AbModel& ab() const { return ab_; }
  AbView* ab_view() const { return ab_view_; }
  std::shared_ptr<const Evaluation> pinned() const { return pinned_; }
  SweepWorker& sweep_worker() { return sweep_worker_; }
  PlanWorker& plan_worker() { return plan_worker_; }
  QString status_text() const;

 protected:
  void dragEnterEvent(class QDragEnterEvent*) override;
  void dropEvent(class QDropEvent*) override;

 private:
  // Construction, in order (main_window_build.cpp).
  QWidget* build_left_panel();
  void build_tabs(QWidget* parent);
  QWidget* build_plan_tab();
  QWidget* build_layers_tab();
  void build_menus();
  void connect_simulation();
  void connect_sweep();
  void connect_compare();
  void open_startup_files();
  void show_evaluation(std::shared_ptr<const Evaluation> evaluation);
  void show_job(const Evaluation& evaluation);  // the job's rows, memory chart and title (show_evaluation's part)
  void simulate_job();  // the job with the controls' K, M, v, schedule, d, through evaluate_job
  void show_failure(const QString& message);
  void set_status(const QString& message, bool error);
  void update_comparison();
  void update_compare_rows();
  void update_ab();
  void connect_plans();
  void connect_llm_plans();
  void forget_plans();  // a new profile or hardware: the last search no longer applies
  void export_widget(QWidget* widget, const QString& name, const QString& extension);
  void export_plan();
  QWidget* current_chart() const;

  AppOptions options_;
  std::shared_ptr<const Profile> profile_;
  std::shared_ptr<const Hardware> hardware_;
  QString profile_path_, hardware_path_;
  std::shared_ptr<const Evaluation> evaluation_;
  std::shared_ptr<const JobInputs> job_;  // a v3 plan's job, as read (the controls' edits apply to it)
  std::optional<StepReport> measurement_;
  std::optional<Timeline> measured_trace_;

  LayerTableModel layers_;
  TimelineModel timeline_;
  TimelineModel compare_rows_;
  SummaryModel summary_;
  LlmMemoryModel llm_memory_;
  SweepModel sweep_;
  CompareModel compare_;
  PlanWorker plan_worker_;
  SweepWorker sweep_worker_;
  PlansModel plans_;
  std::shared_ptr<const SearchResult> plans_result_;  // what plans_ shows (a profile's search) ...
  std::shared_ptr<const LlmSearchResult> job_plans_;  // ... or this (the loaded job's layout search)
  int64_t plans_batch_ = 0;                          // ... and the batch it searched
  PlansWorker plans_worker_;
  AbModel ab_;
  PlansModel llm_plans_;
  std::shared_ptr<const LlmPlanFile> llm_plan_;
  QString startup_error_;
  TimelineModel pinned_timeline_;
  std::shared_ptr<const Evaluation> pinned_;
  PlanWorker pin_worker_;
  QTimer* what_if_timer_ = nullptr;
  int loaded_candidate_ = -1;  // the plans-view candidate shown, -1 when the controls made the plan

  ControlsPanel* controls_ = nullptr;
  QTableView* summary_view_ = nullptr;
  QLabel* status_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  TimelineView* timeline_view_ = nullptr;
  MemoryView* memory_view_ = nullptr;
  LlmMemoryView* llm_memory_view_ = nullptr;
  LayerChart* layer_chart_ = nullptr;
  SweepView* sweep_view_ = nullptr;
  CompareView* compare_view_ = nullptr;
  PlansView* plans_view_ = nullptr;
  AbView* ab_view_ = nullptr;
  class DistributionView* distribution_view_ = nullptr;
  PlansView* llm_plans_view_ = nullptr;
};

}  // namespace pipescope::gui
