// MainWindow's tools for choosing a plan: the plans tab (the planner's
// search off the GUI thread, a click loads the candidate's own plan), the A/B tab
// (pin, differences, aligned timelines), the llm-plans tab's file and the what-if debounce. Same class as
// main_window.cpp, kept apart so each file stays readable.
#include <QDir>
#include <QFileInfo>
#include <QTimer>
#include <algorithm>

#include "core/error.h"
#include "core/plan.h"
#include "core/runtime_costs.h"
#include "gui/app/ab_view.h"
#include "gui/app/controls_panel.h"
#include "gui/app/main_window.h"
#include "gui/app/plans_view.h"
#include "gui/models/job_model.h"
#include "gui/models/llm_plan_set.h"
#include "gui/models/plan_search.h"
#include "gui/models/planner_plan_set.h"

namespace pipescope::gui {

void MainWindow::connect_plans() {
  connect(plans_view_, &PlansView::actionRequested, this, &MainWindow::run_plans);
  connect(plans_view_, &PlansView::candidateClicked, this, &MainWindow::load_candidate);
  connect(&plans_worker_, &PlansWorker::progress, plans_view_, &PlansView::set_progress);
  connect(&plans_worker_, &PlansWorker::finished, this, [this](std::shared_ptr<const SearchResult> r) {
    plans_view_->set_running(false);
    plans_result_ = r;
    plans_batch_ = plans_batch(current_inputs());
    plans_.set_plans(plan_set_of(*r));
    plans_view_->refresh_filters();
    int front = 0;
    for (const Candidate& c : r->candidates) front += c.pareto ? 1 : 0;
    QString text = QString("%1 candidates, %2 fit, %3 on the Pareto front").arg(r->candidates.size()).arg(r->ranking.size()).arg(front);
    if (!r->ranking.empty()) text += "; best: " + QString::fromStdString(r->candidates[r->ranking.front()].label());
    plans_view_->set_message(text + " (click a point to load it)");
  });
  connect(&plans_worker_, &PlansWorker::finished_job, this, [this](std::shared_ptr<const LlmSearchResult> r) {
    plans_view_->set_running(false);
    plans_result_.reset();
    job_plans_ = r;
    plans_.set_plans(plan_set_of(*r));
    plans_view_->refresh_filters();
    const Job& job = job_->job;
    const LlmPlanFile file{job.shape.name, job.cluster.gpu, job.layout.gpus(), job.layout.global_batch(), job.framework, *r};
    plans_view_->set_message(llm_plan_description(file) + "\n(click a point to load its layout into the job)");
  });
  connect(&plans_worker_, &PlansWorker::failed, this, [this](const QString& m) {
    plans_view_->set_running(false);
    plans_.clear();
    plans_result_.reset();
    job_plans_.reset();
    plans_view_->refresh_filters();
    plans_view_->set_message(m);
  });
  connect(controls_, &ControlsPanel::whatIfChanged, this, [this] {
    if (plans_result_) plans_view_->set_message("the what-if changed since this search: press Search to redo it");
  });
  connect(ab_view_, &AbView::pinRequested, this, &MainWindow::pin_current);
  connect(ab_view_, &AbView::exportRequested, this,
          [this](const QString& extension) { export_widget(ab_view_->content(), "a-b", extension); });
  connect(&pin_worker_, &PlanWorker::ready, this, [this](std::shared_ptr<const Evaluation> e) {
    pinned_ = std::move(e);
    pinned_timeline_.set_timeline(pinned_->report.timeline, pinned_->report.timeline_end_ns());
    update_ab();
  });
  connect(&pin_worker_, &PlanWorker::failed, this, [this](const QString& m) {
    ab_view_->set_message(m);
    set_status(m, true);
  });
}

void MainWindow::forget_plans() {
  if (!plans_result_ && !job_plans_) return;
  plans_.clear();
  plans_result_.reset();
  job_plans_.reset();
  plans_view_->refresh_filters();
  plans_view_->set_message("new profile or hardware: press Search to search again");
}

// With a job loaded, its own question: the layout search `pipescope plan` runs for its
// model, GPUs, global batch and framework (job_search_request), the 50 best simulated.
void MainWindow::run_plans() {
  if (job_) {
    const LlmSearchRequest q = job_search_request(job_->job, 50);
    plans_view_->set_running(true);
    plans_view_->set_message(QString("searching the layouts of %1 on %2 GPUs, global batch %3 ...")
                                 .arg(QString::fromStdString(q.shape.name)).arg(q.gpus).arg(q.global_batch));
    plans_worker_.start_job(q, job_->gpu);
    return;
  }
  if (!profile_) return;
  try {
    const PlanInputs in = current_inputs();
    const SearchRequest q = plans_request(in);
    plans_view_->set_running(true);
    plans_view_->set_message(QString("searching every plan for D=%1 devices, N=%2 samples ...").arg(q.devices).arg(q.batch));
    plans_worker_.start(q);
  } catch (const std::exception& e) {
    plans_view_->set_message(e.what());
  }
}

void MainWindow::load_candidate(int index) {
  if (job_ && job_plans_) {  // the layout into the job, as if the panel had set it
    if (index < 0 || index >= static_cast<int>(job_plans_->best.size())) return;
    PlanInputs in;
    try {
      in.job = std::make_shared<const JobInputs>(job_with_layout(*job_, job_plans_->best[static_cast<std::size_t>(index)]));
    } catch (const std::exception& e) {
      show_failure(e.what());
      return;
    }
    job_ = in.job;
    controls_->set_choice(job_choice(job_->job));
    controls_->set_job_layout(job_layout_choice(job_->job));
    loaded_candidate_ = index;
    plans_view_->scatter()->set_current(index);
    plan_worker_.request(in);
    return;
  }
  const SearchResult* r = plans_result_.get();
  if (!r || index < 0 || index >= static_cast<int>(r->candidates.size())) return;
  const Candidate& c = r->candidates[index];
  const PlanInputs in = candidate_inputs(current_inputs(), c, plans_batch_);
  controls_->set_choice(in.choice);
  loaded_candidate_ = index;
  plans_view_->scatter()->set_current(index);
  plan_worker_.request(in);
}

void MainWindow::pin_current() {
  if (!evaluation_) return;
  pinned_ = evaluation_;
  pinned_timeline_.set_timeline(pinned_->report.timeline, pinned_->report.timeline_end_ns());
  update_ab();
}

bool MainWindow::pin_plan_file(const QString& path) {
  PlanInputs in = current_inputs();
  try {
    Plan plan = load_plan(path.toStdString());
    in.choice = plan_choice(in.choice, plan);
    in.plan = std::move(plan);
  } catch (const std::exception& e) {
    ab_view_->set_message(e.what());
    set_status(e.what(), true);
    return false;
  }
  pin_worker_.request(in);
  return true;
}

namespace {
// Two names of one file (canonical when it exists, else the cleaned absolute path).
bool same_file(const QString& a, const QString& b) {
  auto name = [](const QString& f) {
    const QFileInfo info(f);
    return info.exists() ? info.canonicalFilePath() : QDir::cleanPath(info.absoluteFilePath());
  };
  return name(a) == name(b);
}
}  // namespace

bool MainWindow::open_plan_file(const QString& path, const QString& profile_flag) {
  PlanInputs in;
  try {
    Plan plan = load_plan(path.toStdString());
    const QFileInfo named(QString::fromStdString(plan.profile));
    const QString own = named.isRelative() ? QFileInfo(path).dir().filePath(named.filePath()) : named.filePath();
    if (!profile_flag.isEmpty() && !same_file(profile_flag, own)) {
      throw InputError("--profile " + profile_flag.toStdString() + ": " + path.toStdString() + " names its own profile, " +
                       own.toStdString() + "; give --plan alone, or a plan of that profile");
    }
    if (std::optional<JobInputs> job = read_plan_job(plan)) {  // version 3: the whole job, no profile read
      in.job = std::make_shared<const JobInputs>(std::move(*job));
    } else {
      if (!same_file(own, profile_path_) && !open_profile(own)) return false;
      if (!plan.runtime.empty() && options_.runtime_path.isEmpty()) {  // the runtime it was made with; --runtime wins
        const std::string field = path.toStdString() + ": runtime";
        controls_->set_runtime(std::make_shared<const RuntimeCosts>(load_runtime_costs(runtime_path_of(plan), field)),
                               QFileInfo(QString::fromStdString(runtime_path_of(plan))).fileName());
      }
      in = current_inputs();
      in.choice = plan_choice(in.choice, plan);
      in.plan = std::move(plan);
    }
  } catch (const std::exception& e) {
    set_status(e.what(), true);
    return false;
  }
  loaded_candidate_ = -1;
  if (in.job || job_) forget_plans();  // another job (or none): the last search asked another question
  job_ = in.job;
  controls_->set_choice(job_ ? job_choice(job_->job) : in.choice);
  if (job_) {
    controls_->set_job(path, QString::fromStdString(job_->job.cluster.gpu));
    controls_->set_job_layout(job_layout_choice(job_->job));
  }
  plan_worker_.request(in);
  return true;
}

bool MainWindow::open_llm_plan(const QString& path) {
  try {
    llm_plan_ = std::make_shared<const LlmPlanFile>(read_llm_plan_result(path.toStdString()));
  } catch (const std::exception& e) {
    llm_plans_view_->set_description(e.what());
    set_status(e.what(), true);
    return false;
  }
  llm_plans_.set_plans(plan_set_of(llm_plan_->result));
  llm_plans_view_->refresh_filters();
  llm_plans_view_->set_description(QFileInfo(path).fileName() + ": " + llm_plan_description(*llm_plan_));
  return true;
}

void MainWindow::flush_what_if() {
  if (what_if_timer_->isActive()) {
    what_if_timer_->stop();
    simulate();
  }
}

void MainWindow::update_ab() {
  if (!pinned_) {
    ab_.clear();
    return;
  }
  const StepReport& a = pinned_->report;
  if (!evaluation_) {
    ab_view_->set_titles(AbModel::describe(a), "(no plan)");
    return;
  }
  if (pinned_->job || evaluation_->job) {  // jobs compare whole steps and memory per GPU by rank
    if (!pinned_->job || !evaluation_->job) {
      ab_.clear();
      ab_view_->set_message("one side is a job (a version 3 plan), the other a profile's plan: pin again to compare");
      return;
    }
    const JobEvaluation &ja = *pinned_->job, &jb = *evaluation_->job;
    ab_.set_jobs(ja, jb);
    ab_view_->set_titles(AbModel::describe(ja), AbModel::describe(jb));
    const double da = static_cast<double>(ja.report.time.step_ns), db = static_cast<double>(jb.report.time.step_ns);
    ab_view_->set_message(QString("B - A: step %1 ms (%2 %); the timelines draw each job's pipeline")
                              .arg((db - da) / 1e6, 0, 'f', 3)
                              .arg(100.0 * (db - da) / da, 0, 'f', 1));
    ab_view_->align(std::max(a.step_ns, evaluation_->report.step_ns));
    return;
  }
  const StepReport& b = evaluation_->report;
  ab_.set_reports(a, b);
  ab_view_->set_titles(AbModel::describe(a), AbModel::describe(b));
  ab_view_->set_message(QString("B - A: step %1 ms (%2 %)")
                            .arg(static_cast<double>(b.step_ns - a.step_ns) / 1e6, 0, 'f', 3)
                            .arg(a.step_ns ? 100.0 * static_cast<double>(b.step_ns - a.step_ns) / static_cast<double>(a.step_ns) : 0.0,
                                 0, 'f', 1));
  ab_view_->align(std::max(a.step_ns, b.step_ns));
}

}  // namespace pipescope::gui
