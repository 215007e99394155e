#include "gui/models/workers.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <exception>

namespace pipescope::gui {

PlanWorker::PlanWorker(QObject* parent) : QObject(parent) { pool_.setMaxThreadCount(1); }

PlanWorker::~PlanWorker() { pool_.waitForDone(); }

void PlanWorker::request(const PlanInputs& inputs) {
  const uint64_t generation = ++generation_;
  if (pending_++ == 0) emit busyChanged(true);
  pool_.start([this, inputs, generation] {
    std::shared_ptr<const Evaluation> result;
    QString error;
    try {
      result = std::make_shared<const Evaluation>(evaluate(inputs));
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(this, [this, result, error, generation] {
      const bool latest = generation == generation_;
      if (--pending_ == 0) emit busyChanged(false);
      if (!latest) return;
      if (result) {
        emit ready(result);
      } else {
        emit failed(error);
      }
    }, Qt::QueuedConnection);
  });
}

void PlanWorker::wait() {
  pool_.waitForDone();
  QCoreApplication::sendPostedEvents(this);
}

SweepWorker::SweepWorker(QObject* parent)
    : QObject(parent), cancel_(std::make_shared<std::atomic<bool>>(false)) {
  pool_.setMaxThreadCount(1);
}

SweepWorker::~SweepWorker() {
  cancel_->store(true);
  pool_.waitForDone();
}

void SweepWorker::wait() {
  pool_.waitForDone();
  QCoreApplication::sendPostedEvents(this);
}

void SweepWorker::start(const PlanInputs& base, const SweepAxes& axes) {
  if (running_) return;
  running_ = true;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  auto cancel = cancel_;
  pool_.start([this, base, axes, cancel] {
    SweepResult result;
    QString error;
    try {
      result = compute_sweep(base, axes, [this, cancel](int done, int total) {
        QMetaObject::invokeMethod(this, [this, done, total] { emit progress(done, total); }, Qt::QueuedConnection);
        return !cancel->load();
      });
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(this, [this, result, error] {
      running_ = false;
      if (error.isEmpty()) {
        emit finished(result);
      } else {
        emit failed(error);
      }
    }, Qt::QueuedConnection);
  });
}

PlansWorker::PlansWorker(QObject* parent) : QObject(parent) { pool_.setMaxThreadCount(1); }

PlansWorker::~PlansWorker() { pool_.waitForDone(); }

void PlansWorker::wait() {
  pool_.waitForDone();
  QCoreApplication::sendPostedEvents(this);
}

template <typename Result>
void PlansWorker::run(std::function<Result()> search, void (PlansWorker::*done)(std::shared_ptr<const Result>)) {
  const uint64_t generation = generation_;
  ++pending_;
  pool_.start([this, search = std::move(search), done, generation] {
    std::shared_ptr<const Result> result;
    QString error;
    try {
      result = std::make_shared<const Result>(search());
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(this, [this, result, error, generation, done] {
      --pending_;
      if (generation != generation_) return;
      if (result) {
        emit(this->*done)(result);
      } else {
        emit failed(error);
      }
    }, Qt::QueuedConnection);
  });
}

void PlansWorker::start(const SearchRequest& request) {
  const uint64_t generation = ++generation_;
  run<SearchResult>(
      [this, request, generation] {
        return search_plans(request, [this, generation](std::size_t done, std::size_t total) {
          QMetaObject::invokeMethod(this, [this, done, total, generation] {
            if (generation == generation_) emit progress(static_cast<int>(done), static_cast<int>(total));
          }, Qt::QueuedConnection);
        });
      },
      &PlansWorker::finished);
}

void PlansWorker::start_job(const LlmSearchRequest& request, std::shared_ptr<const GpuModel> gpu) {
  ++generation_;
  run<LlmSearchResult>([request, gpu] { return search_layouts(request, *gpu); }, &PlansWorker::finished_job);
}

}  // namespace pipescope::gui
