#include "gui/app/main_window.h"

#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "core/atomic_file.h"
#include "core/runtime_costs.h"
#include "core/error.h"
#include "gui/app/ab_view.h"
#include "gui/app/compare_view.h"
#include "gui/app/controls_panel.h"
#include "gui/app/export.h"
#include "gui/app/layer_chart.h"
#include "gui/app/llm_memory_view.h"
#include "gui/app/memory_view.h"
#include "gui/app/plans_view.h"
#include "gui/app/sweep_view.h"
#include "gui/app/timeline_view.h"
#include "gui/models/memory_curves.h"
#include "gui/app/distribution_view.h"
#include "gui/models/job_model.h"
#include "gui/models/plan_search.h"
#include "gui/models/timeline_merge.h"
#include "gui/models/trace_reader.h"
#include "sim/replay.h"
#include "sim/simulator.h"

namespace pipescope::gui {

MainWindow::~MainWindow() = default;

QWidget* MainWindow::current_chart() const {
  switch (tabs_->currentIndex()) {
    case 0: return memory_view_;
    case 1: return layer_chart_;
    case 2: return sweep_view_->heat_map();
    case 4: return plans_view_->scatter();
    case 5: return ab_view_->content();
    case 7: return llm_plans_view_->scatter();
    default: return compare_view_;
  }
}

void MainWindow::show_tab(const QString& name) {
  const QStringList names = {"timeline", "layers", "sweep", "compare", "plans", "ab", "distribution", "llm-plans"};
  tabs_->setCurrentIndex(std::max<int>(0, static_cast<int>(names.indexOf(name))));
}

bool MainWindow::open_profile(const QString& path) {
  try {
    profile_ = std::make_shared<const Profile>(load_profile(path.toStdString()));
  } catch (const std::exception& e) {
    set_status(e.what(), true);
    return false;
  }
  profile_path_ = path;
  job_.reset();  // a profile's plans from here on
  controls_->set_files(profile_path_, hardware_path_);
  forget_plans();
  simulate();
  return true;
}

bool MainWindow::open_hardware(const QString& path) {
  std::shared_ptr<const Hardware> hardware;
  if (!path.isEmpty()) {
    try {
      hardware = std::make_shared<const Hardware>(load_hardware(path.toStdString()));
    } catch (const std::exception& e) {
      set_status(e.what(), true);
      return false;
    }
  }
  set_hardware(hardware, path);
  return true;
}

void MainWindow::set_hardware(std::shared_ptr<const Hardware> hardware, const QString& label) {
  hardware_ = std::move(hardware);
  hardware_path_ = label;
  controls_->set_files(profile_path_, hardware_path_);
  forget_plans();
  if (profile_) simulate();
}

bool MainWindow::open_measurement(const QString& path) {
  try {
    measurement_ = load_report(path.toStdString());
  } catch (const std::exception& e) {
    compare_view_->set_message(e.what());
    set_status(e.what(), true);
    return false;
  }
  compare_view_->set_message(QString("%1: %2 %3, K=%4, M=%5")
                                 .arg(QFileInfo(path).fileName(), QString::fromStdString(measurement_->kind),
                                      QString::fromStdString(measurement_->schedule))
                                 .arg(measurement_->num_positions).arg(measurement_->microbatches));
  update_comparison();
  return true;
}

bool MainWindow::open_trace(const QString& path) {
  try {
    measured_trace_ = read_chrome_trace(path.toStdString());
  } catch (const std::exception& e) {
    set_status(e.what(), true);
    return false;
  }
  compare_view_->set_has_trace(true);
  update_compare_rows();
  update_comparison();
  return true;
}

bool MainWindow::open_any(const QString& path) {
  std::string format;
  try {
    JsonReader r = JsonReader::from_file(path.toStdString());
    if (r.json().is_object() && r.has("format")) format = r["format"].as_string();
    else if (r.json().is_object() && r.has("traceEvents")) format = "trace";
  } catch (const std::exception& e) {
    set_status(e.what(), true);
    return false;
  }
  if (format == "pipescope.profile") return open_profile(path);
  if (format == "pipescope.hardware") return open_hardware(path);
  if (format == "pipescope.measurement" || format == "pipescope.prediction") return open_measurement(path);
  if (format == "trace") return open_trace(path);
  if (format == "pipescope.llm_plan") return open_llm_plan(path);
  if (format == "pipescope.plan") return open_plan_file(path);
  set_status(path + ": format: expected a profile, hardware, plan, measurement, llm-plan result or Chrome trace file", true);
  return false;
}

PlanInputs MainWindow::current_inputs() const {
  PlanInputs in;
  in.profile = profile_;
  in.hardware = hardware_;
  in.choice = controls_->choice();
  in.choice.profile_path = QFileInfo(profile_path_).fileName().toStdString();
  in.what_if = controls_->what_if();
  return in;
}

void MainWindow::simulate() {
  if (job_) return simulate_job();
  if (!profile_) return;
  loaded_candidate_ = -1;
  plans_view_->scatter()->set_current(-1);
  PlanInputs in;
  try {
    in = current_inputs();
  } catch (const std::exception& e) {
    show_failure(e.what());
    return;
  }
  plan_worker_.request(in);
}

void MainWindow::run_sweep() {
  if (job_) return sweep_view_->set_message(kJobSearchMessage);
  if (!profile_) return;
  PlanInputs in = current_inputs();
  sweep_view_->set_running(true);
  sweep_view_->set_message(QString("sweeping %1 ...").arg(QString::fromStdString(to_string(in.choice.schedule))));
  const int devices = hardware_ ? hardware_->devices : 8;
  if (sweep_view_->planner_grid()) {
    const double b = in.choice.microbatch_size > 0 ? in.choice.microbatch_size : profile_->batch_sizes.front();
    const int64_t batch = static_cast<int64_t>(b) * in.choice.microbatches;
    in.choice.microbatch_size = 0;
    sweep_worker_.start(in, planner_sweep_axes(devices, batch, profile_->num_layers()));
  } else {
    in.choice.replicas = 1;
    sweep_worker_.start(in, default_sweep_axes(devices, profile_->num_layers()));
  }
}

void MainWindow::show_evaluation(std::shared_ptr<const Evaluation> e) {
  evaluation_ = std::move(e);
  distribution_view_->set_histogram({});  // sampled for the previous plan
  if (tabs_->currentWidget() == distribution_view_) emit distribution_view_->sampleRequested();
  const StepReport& r = evaluation_->report;
  layers_.set_plan(evaluation_->profile, evaluation_->plan);
  timeline_.set_timeline(r.timeline, r.timeline_end_ns());
  timeline_view_->set_stage_stripes(r.chunks > 1);
  update_comparison();
  update_compare_rows();
  update_ab();
  if (evaluation_->job) return show_job(*evaluation_);
  summary_.set_report(r);
  memory_view_->set_curves(memory_curves(r));
  memory_view_->show();
  const int64_t capacity = hardware_ && hardware_->memory_bytes > 0 ? hardware_->memory_bytes : evaluation_->profile->device_memory_bytes;
  llm_memory_.set_plan(*evaluation_->profile, evaluation_->plan, capacity);
  llm_memory_view_->setVisible(llm_memory_.rowCount() > 0);
  timeline_view_->set_title(QString("%1 | %2 | K=%3 | M=%4 | micro-batch %5  -  step %6 ms, %7 samples/s, bubble %8 %")
                                .arg(QString::fromStdString(r.model), QString::fromStdString(r.schedule))
                                .arg(r.num_positions).arg(r.microbatches).arg(r.microbatch_size)
                                .arg(static_cast<double>(r.step_ns) / 1e6, 0, 'f', 3)
                                .arg(r.throughput_samples_per_s, 0, 'f', 1)
                                .arg(100 * r.bubble_fraction, 0, 'f', 1));
  QString status = r.fits() ? "plan fits the device memory" : "some stages do not fit the device memory";
  for (const std::string& n : r.notes) status += "\nnote: " + QString::fromStdString(n);
  set_status(status, !r.fits());
}

// A job's numbers are evaluate_job's: the summary's rows, one memory bar per pipeline rank
// by kind against the GPU file's capacity (the profile's memory curves do not apply: hidden).
void MainWindow::show_job(const Evaluation& e) {
  const JobEvaluation& j = *e.job;
  const ParallelLayout& l = j.inputs.job.layout;
  const StepTime& t = j.report.time;
  summary_.set_job(j);
  memory_view_->set_curves({});
  memory_view_->hide();
  llm_memory_.set_bars(llm_memory_bars(j.report.memory), j.capacity_bytes(), "evaluate_job, as `simulate --plan` prints them");
  llm_memory_view_->show();
  timeline_view_->set_title(QString("%1 on %2 GPUs | %3 | p=%4 v=%5 | M=%6 | b=%7  -  step %8 s, of it the pipeline "
                                    "drawn here %9 s, bubble %10 %")
                                .arg(QString::fromStdString(j.inputs.job.shape.name)).arg(l.gpus())
                                .arg(QString::fromStdString(t.schedule)).arg(l.p).arg(l.v).arg(l.microbatches)
                                .arg(l.micro_batch).arg(static_cast<double>(t.step_ns) / 1e9, 0, 'f', 3)
                                .arg(static_cast<double>(t.pipeline_ns) / 1e9, 0, 'f', 3)
                                .arg(100 * t.bubble, 0, 'f', 1));
  QString status = j.fits() ? "the job fits the GPU memory less its launch headroom"
                            : "some pipeline ranks do not fit the GPU memory less its launch headroom";
  for (const std::string& n : j.inputs.notes) status += "\nnote: " + QString::fromStdString(n);
  set_status(status, !j.fits());
}

void MainWindow::simulate_job() {
  PlanInputs in;
  try {
    in.job = std::make_shared<const JobInputs>(
        edit_job(*job_, job_edit(job_->job, controls_->choice(), controls_->job_layout())));
  } catch (const std::exception& e) {
    show_failure(e.what());  // the framework's refusal, as the CLI words it
    return;
  }
  plan_worker_.request(in);
}

void MainWindow::show_failure(const QString& message) {
  evaluation_.reset();
  summary_.clear();
  layers_.set_plan(profile_, Plan{});
  timeline_.set_timeline({});
  compare_rows_.set_timeline({});
  memory_view_->set_curves({});
  llm_memory_.clear();
  llm_memory_view_->hide();
  set_status(message, true);
}

void MainWindow::set_status(const QString& message, bool error) {
  status_->setText(message);
  status_->setStyleSheet(error ? "color: #d62728;" : "");
}

QString MainWindow::status_text() const { return status_->text(); }

void MainWindow::update_compare_rows() {
  if (!evaluation_) {
    compare_rows_.set_timeline({});
  } else if (measured_trace_) {
    compare_rows_.set_timeline(interleave_timelines(evaluation_->report.timeline, "pred", *measured_trace_, "meas"));
  } else {
    compare_rows_.set_timeline(evaluation_->report.timeline, evaluation_->report.timeline_end_ns());
  }
}

void MainWindow::update_comparison() {
  if (!measurement_ || !evaluation_) return;
  std::optional<double> replayed;
  if (measured_trace_ && measured_trace_->events.size() > 0) {
    // The measured op times through the simulator: what the pipeline adds to them.
    const PlanInputs in = current_inputs();
    const Schedule& schedule = evaluation_->schedule;
    const StepReport r = pipescope::simulate(schedule, with_measured_op_times(evaluation_->costs, *measured_trace_),
                                             hardware_for(in, evaluation_->plan), SimOptions{false, {}});
    replayed = r.step_ns / 1e6;
  }
  compare_.set_reports(evaluation_->report, *measurement_, replayed);
  if (measurement_->num_positions != evaluation_->report.num_positions || measurement_->microbatches != evaluation_->report.microbatches) {
    compare_view_->set_message(QString("note: the measurement has K=%1, M=%2 but the plan shown has K=%3, M=%4")
                                   .arg(measurement_->num_positions).arg(measurement_->microbatches)
                                   .arg(evaluation_->report.num_positions).arg(evaluation_->report.microbatches));
  }
}

void MainWindow::export_widget(QWidget* widget, const QString& name, const QString& extension) {
  const QString filter = extension == "svg" ? "SVG (*.svg)" : "PNG (*.png)";
  const QString path = QFileDialog::getSaveFileName(this, "Export " + name, name + "." + extension, filter);
  if (path.isEmpty()) return;
  try {
    save_image(widget, path, "pipescope " + name);
    set_status("wrote " + path, false);
  } catch (const std::exception& e) {
    set_status(e.what(), true);
  }
}

void MainWindow::save_plan(const QString& path) const {
  if (!evaluation_) throw InputError("no plan to save: the current choices do not make a plan");
  if (evaluation_->job) return save_job_plan(evaluation_->job->inputs, path.toStdString());  // v3, profile beside
  Plan plan = evaluation_->plan;
  if (evaluation_->runtime) plan.runtime = runtime_reference(*evaluation_->runtime, path.toStdString());
  write_file_atomically(path.toStdString(), plan_to_json(plan).dump(2) + "\n");
}

void MainWindow::export_plan() {
  if (!evaluation_) return;
  const QString path = QFileDialog::getSaveFileName(this, "Export plan", "plan.json", "JSON (*.json)");
  if (path.isEmpty()) return;
  try {
    save_plan(path);
    set_status("wrote " + path, false);
  } catch (const std::exception& e) {
    set_status(e.what(), true);
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  open_dropped(*e->mimeData());
  e->acceptProposedAction();
}

void MainWindow::open_dropped(const QMimeData& mime) {
  for (const QUrl& url : mime.urls()) {
    if (url.isLocalFile()) open_any(url.toLocalFile());
  }
}

}  // namespace pipescope::gui
