// Runs the workers on threads, and the single-process gradient reference. The merge of
// the workers' records is in exec/runtime/merge_results.cpp.
#include "exec/runtime/executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/limits.h"
#include "exec/transport/mpi_runner.h"
#include "exec/runtime/replica_layout.h"
#include "exec/runtime/stage_worker.h"
#include "exec/transport/thread_transport.h"

namespace pipescope::exec {

namespace {

// pipedream and 2bw run their steps as one op list (the schedule's steps); no replicas yet.
void check_async_runnable(const Schedule& schedule, const RunOptions& options, const ReplicaLayout& layout) {
  if (layout.replicas > 1) {
    throw InputError(schedule.name + ": replicated stages are not supported under asynchronous schedules yet "
                     "(PipeDream's round-robin replication); use --replicas 1");
  }
  if (options.steps != schedule.steps) {
    throw InputError("--steps: the " + schedule.name + " schedule holds " + std::to_string(schedule.steps) +
                     " step(s) without a flush but the run asks for " + std::to_string(options.steps));
  }
  if (options.warmup > 0) {
    throw InputError("--warmup: " + schedule.name + " runs its steps as one op list without a flush, so no step "
                     "can be left out as a warm-up (its steady-state step already leaves out the first)");
  }
  if (options.check_gradients) {
    throw InputError("--check-gradients: " + schedule.name + " is asynchronous (updates use stale weights), so "
                     "its gradients are not those of one process running the mini-batch");
  }
}

// Activation offload runs where its walk is the simulator's: one worker per position on this
// process's threads, flushed synchronized steps, whole elements of the cpu backend.
void check_offload_runnable(const Schedule& schedule, const RunOptions& options, const ReplicaLayout& layout) {
  const OffloadRun& off = *options.offload;
  const std::string what = "--offload " + to_string(off.policy);
  if (options.backend != "cpu" || options.transport != Transport::Threads) {
    throw InputError(what + ": the executor offloads on the cpu backend's threads transport only (got --backend " +
                     options.backend + ", --transport " + to_string(options.transport) + ")");
  }
  if (layout.replicas > 1) throw InputError(what + ": the executor does not offload replicated stages yet; use --replicas 1");
  if (schedule.asynchronous() || options.optimizer_step == OptimizerStep::PostValidation) {
    throw InputError(what + ": the executor offloads flushed steps with a synchronized optimizer step only (got " +
                     schedule.name + ", --optimizer-step " + to_string(options.optimizer_step) + ")");
  }
  const std::size_t slots = static_cast<std::size_t>(schedule.stages()) * schedule.microbatches();
  if (off.slot_bytes.size() != slots) {
    throw InputError(what + ": expected one offload byte count per (stage, micro-batch), " + std::to_string(slots) +
                     ", got " + std::to_string(off.slot_bytes.size()));
  }
  const int64_t element = make_backend(options.backend)->element_bytes();
  for (std::size_t k = 0; k < slots; ++k) {
    if (off.slot_bytes[k] % element != 0) {
      throw InputError("--offload-fraction: stage " + std::to_string(k / schedule.microbatches()) + " would offload " +
                       std::to_string(off.slot_bytes[k]) + " bytes of each stash, not a whole number of the " +
                       options.backend + " backend's " + std::to_string(element) +
                       "-byte elements (the executor moves whole elements; pick a fraction that gives them, e.g. 0.5)");
    }
  }
}

}  // namespace

void check_runnable(const Profile& profile, const Plan& plan, const Schedule& schedule,
                    const RunOptions& options) {
  make_backend(options.backend);
  if (options.steps < 1) throw InputError("--steps: expected at least 1, got " + std::to_string(options.steps));
  check_range("--steps", options.steps, 1, kMaxRounds);
  if (options.warmup_steps() >= options.steps) {
    throw InputError("--warmup: expected fewer warm-up steps than --steps (" + std::to_string(options.steps) + ")");
  }
  if (!(options.timeout_s > 0)) throw InputError("--timeout: expected a positive number of seconds");
  if (!(options.optimizer.lr >= 0) || !std::isfinite(options.optimizer.lr)) {
    throw InputError("--lr: expected a finite learning rate >= 0, got " + std::to_string(options.optimizer.lr));
  }
  const ReplicaLayout layout = replica_layout(plan);
  if (layout.replicas > 1 && options.backend != "cpu") {
    throw InputError(plan.source.empty() ? "plan" : plan.source, "stages[0].devices",
                     "replicated stages run on the cpu backend only (got --backend " + options.backend + ")");
  }
  if (schedule.asynchronous()) check_async_runnable(schedule, options, layout);
  if (options.offload) check_offload_runnable(schedule, options, layout);
  const bool post_validation = options.optimizer_step == OptimizerStep::PostValidation && !schedule.asynchronous();
  if (post_validation && (options.transport != Transport::Threads || options.backend != "cpu" || layout.replicas > 1)) {
    throw InputError("--optimizer-step: post-validation runs on the cpu backend's threads transport without "
                     "replicated stages (its global gradient check is an in-process board)");
  }
  if (post_validation && options.warmup > 0) {
    throw InputError("--warmup: post-validation runs its steps back to back as one op list, so no step can be left "
                     "out as a warm-up (its steady-state step leaves out the first)");
  }
  if (options.model_time && (options.transport != Transport::Threads || layout.replicas > 1)) {
    throw InputError("model time runs on the threads transport without replicated stages");
  }
  if (static_cast<int>(plan.stages.size()) != schedule.stages()) {
    throw InputError("the plan has " + std::to_string(plan.stages.size()) + " stages but the schedule has " +
                     std::to_string(schedule.stages()));
  }
  check_executable(profile);
  if (options.fault && options.fault->stage >= schedule.stages()) {
    throw InputError("--inject-fault: stage " + std::to_string(options.fault->stage) + " does not exist");
  }
  if (options.fault && options.fault->replica >= layout.replicas) {
    throw InputError("--inject-fault: stage " + std::to_string(options.fault->stage) + " has " +
                     std::to_string(layout.replicas) + " replica(s), so replica " +
                     std::to_string(options.fault->replica) + " does not exist");
  }
}

RunResult run_plan(const Profile& profile, const Plan& plan, const Schedule& schedule,
                   const RunOptions& options) {
  if (options.transport == Transport::Mpi) return run_mpi(profile, plan, schedule, options);
  return run_threads(profile, plan, schedule, options);
}

RunResult run_threads(const Profile& profile, const Plan& plan, const Schedule& schedule,
                      const RunOptions& options) {
  check_runnable(profile, plan, schedule, options);
  const ReplicaLayout layout = replica_layout(plan);
  const int D = layout.workers();
  const bool spin = options.spin_waits(D);
  // Replicas run on the cpu backend only (check_runnable), whose hub is a ThreadHub.
  std::unique_ptr<Hub> hub = layout.replicas > 1 ? std::make_unique<ThreadHub>(D, spin)
                                                 : make_hub(options.backend, schedule, spin);
  std::vector<WorkerResult> results(D);
  std::optional<ModelClock> model_clock;
  if (options.model_time) model_clock.emplace(profile, plan, schedule, *options.model_time, options.p2p);
  ModelClock* clock = model_clock ? &*model_clock : nullptr;
  std::vector<std::thread> threads;
  const bool pin = options.pin_threads(D);
  for (int d = 0; d < D; ++d) {
    threads.emplace_back([&, d, pin] {
      if (pin) pin_current_thread(d);
      try {
        StageWorker worker(WorkerSetup{profile, plan, schedule, options, d, clock}, hub->endpoint(d));
        results[d] = worker.run();
      } catch (const std::exception& e) {
        // The first failure reported wins; a worker that stopped because of it adds nothing.
        hub->endpoint(d).report_failure(std::string("device ") + std::to_string(d) + ": " + e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::string failure = hub->failure();
  if (!failure.empty()) throw RunError(failure);
  return merge_results(profile, plan, schedule, options, std::move(results), spin);
}

namespace {

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    double d = double(got[i]) - want[i];
    diff += d * d;
    norm += double(want[i]) * want[i];
  }
  if (!std::isfinite(diff) || !std::isfinite(norm)) return INFINITY;  // NaN must not pass
  if (norm == 0) return diff == 0 ? 0 : 1;
  return std::sqrt(diff / norm);
}

}  // namespace

double gradient_error(const Profile& profile, const Plan& plan, const std::string& backend_name,
                      const std::map<int, std::vector<std::vector<float>>>& gradients) {
  std::unique_ptr<Backend> backend = make_backend(backend_name);
  MemoryTracker tracker;
  Context ctx{*backend, tracker};
  StageLayers layers = build_stage_layers(profile, 0, profile.num_layers(), ctx);
  const int64_t B = plan.batch_size, seq = layers.front()->sequence();
  const int64_t in = layers.front()->in_features(), out = layers.back()->out_features();
  Tensor h = Tensor::from_host(ctx, B * seq, in, input_data(0, B, seq, in));
  std::vector<LayerStash> stashes(layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l) h = layers[l]->forward(h, &stashes[l]);
  Tensor target = Tensor::from_host(ctx, B * seq, out, target_data(0, B, seq, out));
  Tensor g = Tensor::empty(ctx, B * seq, out);
  const double denom = static_cast<double>(B) * seq * out;
  backend->mse_gradient(g.data(), h.data(), target.data(), static_cast<float>(2.0 / denom), h.numel());
  for (std::size_t l = layers.size(); l-- > 0;) g = layers[l]->backward(g, stashes[l]);
  double worst = 0;
  for (const auto& [layer, grads] : gradients) {
    std::vector<Parameter*> params = layers.at(layer)->parameters();
    if (params.size() != grads.size()) throw RunError("gradient check: parameter count mismatch in layer " + std::to_string(layer));
    for (std::size_t i = 0; i < params.size(); ++i) {
      worst = std::max(worst, relative_error(grads[i], params[i]->grad.to_host()));
    }
  }
  return worst;
}

}  // namespace pipescope::exec
