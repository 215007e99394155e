// Long work off the GUI thread. Each worker runs its job on a private thread pool
// and reports back on the thread that owns it, by signals only:
//   PlanWorker:  ready(evaluation) or failed(message); a newer request supersedes
//                older ones, whose results are dropped (only the latest is reported).
//   SweepWorker: progress(done, total), then finished(result) or failed(message);
//                cancel() stops it after the cell in flight (finished then reports
//                result.cancelled = true).
//   PlansWorker: the planner's search (search_plans): progress(done, total), then
//                finished(result) or failed(message); or a job's layout search
//                (search_layouts): finished_job(result) or failed(message); a newer
//                start of either supersedes.
// Destroying a worker waits for its job, so a job never reports to a dead object.
//   PlanWorker w; connect(&w, &PlanWorker::ready, view, ...); w.request(inputs);
#pragma once

#include <QObject>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <memory>

#include "gui/models/plan_evaluation.h"
#include "gui/models/sweep.h"
#include "llm/layout_search.h"
#include "planner/search.h"

namespace pipescope::gui {

class PlanWorker : public QObject {
  Q_OBJECT
 public:
  explicit PlanWorker(QObject* parent = nullptr);
  ~PlanWorker() override;
  void request(const PlanInputs& inputs);
  bool busy() const { return pending_ > 0; }
  // Blocks until every job has reported (for the --screenshot path and tests).
  void wait();

 signals:
  void ready(std::shared_ptr<const pipescope::gui::Evaluation> evaluation);
  void failed(const QString& message);
  void busyChanged(bool busy);

 private:
  QThreadPool pool_;
  uint64_t generation_ = 0;
  int pending_ = 0;
};

class SweepWorker : public QObject {
  Q_OBJECT
 public:
  explicit SweepWorker(QObject* parent = nullptr);
  ~SweepWorker() override;
  // Ignored while a sweep is running.
  void start(const PlanInputs& base, const SweepAxes& axes);
  void cancel() { cancel_->store(true); }
  bool running() const { return running_; }
  // Blocks until the sweep has reported (for the --screenshot path and tests).
  void wait();

 signals:
  void progress(int done, int total);
  void finished(const pipescope::gui::SweepResult& result);
  void failed(const QString& message);

 private:
  QThreadPool pool_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  bool running_ = false;
};

class PlansWorker : public QObject {
  Q_OBJECT
 public:
  explicit PlansWorker(QObject* parent = nullptr);
  ~PlansWorker() override;
  void start(const SearchRequest& request);
  // A job's layout search (llm/layout_search.h) on its GPU file: finished_job or failed.
  void start_job(const LlmSearchRequest& request, std::shared_ptr<const GpuModel> gpu);
  bool running() const { return pending_ > 0; }
  // Blocks until every search has reported (for the --screenshot path and tests).
  void wait();

 signals:
  void progress(int done, int total);
  void finished(std::shared_ptr<const pipescope::SearchResult> result);
  void finished_job(std::shared_ptr<const pipescope::LlmSearchResult> result);
  void failed(const QString& message);

 private:
  // Runs `search` on the pool; its result (or its error) is emitted by `emit_result` on
  // this object's thread, unless a later start has superseded it.
  template <typename Result>
  void run(std::function<Result()> search, void (PlansWorker::*done)(std::shared_ptr<const Result>));
  QThreadPool pool_;
  uint64_t generation_ = 0;
  int pending_ = 0;
};

}  // namespace pipescope::gui
