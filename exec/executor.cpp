// Runs the workers and merges what they measured. Invariant of the merge: every time in
// the report is relative to the step's origin, the earliest post-barrier clock reading
// of any worker (one steady clock serves every thread and every rank of one machine).
#include "exec/blas_kernels.h"
#include "exec/executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "core/error.h"
#include "exec/mpi_runner.h"
#include "exec/stage_worker.h"
#include "exec/thread_transport.h"

namespace pipescope::exec {

void check_runnable(const Profile& profile, const Plan& plan, const Schedule& schedule,
                    const RunOptions& options) {
  make_backend(options.backend);
  options.spin_waits(1);  // refuses an unknown --wait or --pin before anything runs
  options.pin_threads(1);
  if (options.steps < 1) throw InputError("--steps: expected at least 1, got " + std::to_string(options.steps));
  if (options.warmup_steps() >= options.steps) {
    throw InputError("--warmup: expected fewer warm-up steps than --steps (" + std::to_string(options.steps) + ")");
  }
  if (!(options.timeout_s > 0)) throw InputError("--timeout: expected a positive number of seconds");
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    if (plan.stages[s].devices.size() != 1) {
      throw InputError(plan.source, "stages[" + std::to_string(s) + "].devices",
                       "the executor does not run replicated stages (one device per stage)");
    }
  }
  if (static_cast<int>(plan.stages.size()) != schedule.stages()) {
    throw InputError("the plan has " + std::to_string(plan.stages.size()) + " stages but the schedule has " +
                     std::to_string(schedule.stages()));
  }
  check_executable(profile);
  if (options.fault && options.fault->stage >= schedule.stages()) {
    throw InputError("--inject-fault: stage " + std::to_string(options.fault->stage) + " does not exist");
  }
}

RunResult run_plan(const Profile& profile, const Plan& plan, const Schedule& schedule,
                   const RunOptions& options) {
  if (options.transport == "threads") return run_threads(profile, plan, schedule, options);
  if (options.transport == "mpi") return run_mpi(profile, plan, schedule, options);
  throw InputError("--transport: expected threads or mpi, got \"" + options.transport + "\"");
}

RunResult run_threads(const Profile& profile, const Plan& plan, const Schedule& schedule,
                      const RunOptions& options) {
  check_runnable(profile, plan, schedule, options);
  const int K = schedule.devices();
  std::unique_ptr<Hub> hub = make_hub(options.backend, schedule, options.spin_waits(K));
  std::vector<WorkerResult> results(K);
  std::vector<std::thread> threads;
  const bool pin = options.pin_threads(K);
  for (int d = 0; d < K; ++d) {
    threads.emplace_back([&, d, pin] {
      if (pin) pin_current_thread(d);
      try {
        StageWorker worker(WorkerSetup{profile, plan, schedule, options, d}, hub->endpoint(d));
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
  RunResult r = merge_results(profile, plan, schedule, options, std::move(results), options.spin_waits(K));
  return r;
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

RunResult merge_results(const Profile& profile, const Plan& plan, const Schedule& schedule,
                        const RunOptions& options, std::vector<WorkerResult> workers, bool spin_waits) {
  RunResult r;
  r.spin_waits = spin_waits;
  const int K = schedule.devices();
  const int steps = options.steps, warmup = options.warmup_steps();
  // Step times of the measured steps, then the median one.
  std::vector<int64_t> origin(steps, INT64_MAX), end(steps, 0);
  for (const WorkerResult& w : workers) {
    for (int i = 0; i < steps; ++i) {
      const StepRecord& s = w.steps.at(i);
      origin[i] = std::min(origin[i], s.origin_ns);
      for (const OpRecord& o : s.ops) end[i] = std::max(end[i], o.end_ns);
    }
  }
  std::vector<int> measured;
  for (int i = warmup; i < steps; ++i) {
    measured.push_back(i);
    r.step_ns.push_back(end[i] - origin[i]);
  }
  std::vector<int> order = measured;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return end[a] - origin[a] < end[b] - origin[b]; });
  const int pick = order[(order.size() - 1) / 2];
  const int64_t t0 = origin[pick];

  StepReport& rep = r.report;
  rep.kind = "measurement";
  rep.model = profile.model;
  rep.schedule = to_string(schedule.spec.kind);
  rep.devices = K;
  rep.chunks = schedule.spec.chunks;
  rep.microbatches = schedule.microbatches();
  rep.microbatch_size = plan.microbatch_size();
  rep.batch_size = plan.batch_size;
  rep.recompute = schedule.spec.recompute;
  rep.step_ns = end[pick] - t0;
  rep.simulated_ops = static_cast<int64_t>(schedule.num_ops());
  rep.throughput_samples_per_s = rep.step_ns > 0 ? static_cast<double>(plan.batch_size) * 1e9 / rep.step_ns : 0;
  for (int d = 0; d < K; ++d) rep.timeline.tracks.push_back("device " + std::to_string(d));
  std::sort(workers.begin(), workers.end(), [](const WorkerResult& a, const WorkerResult& b) { return a.device < b.device; });
  r.losses.assign(steps, 0.0);
  for (const WorkerResult& w : workers) {
    for (int i = 0; i < steps; ++i) r.losses[i] += w.steps.at(i).loss;
  }
  int64_t total_busy = 0;
  std::vector<TransferRecord> transfers;
  for (const WorkerResult& w : workers) {
    const StepRecord& s = w.steps.at(pick);
    StageReport st;
    st.index = w.device;
    for (int stage = w.device; stage < schedule.stages(); stage += K) {
      st.layers.emplace_back(plan.stages[stage].first_layer, plan.stages[stage].end_layer);
    }
    st.hardware_devices = plan.stages[w.device].devices;
    for (const OpRecord& o : s.ops) {
      st.busy_ns += o.end_ns - o.start_ns;
      rep.timeline.events.push_back({w.device, to_string(o.kind), o.stage, o.microbatch, o.start_ns - t0, o.end_ns - o.start_ns});
    }
    for (const TransferRecord& t : s.transfers) {
      if (t.from_device != t.to_device) transfers.push_back(t);
    }
    for (auto [time, bytes] : s.memory) rep.timeline.memory.push_back({w.device, time - t0, bytes});
    total_busy += st.busy_ns;
    st.bubble_fraction = rep.step_ns > 0 ? 1.0 - static_cast<double>(st.busy_ns) / rep.step_ns : 0;
    st.static_bytes = w.static_bytes;
    for (const StepRecord& any : w.steps) {
      st.peak_activation_bytes = std::max(st.peak_activation_bytes, any.peak_activation_bytes);
      st.peak_memory_bytes = std::max(st.peak_memory_bytes, any.peak_total_bytes);
    }
    r.optimizer_ns = std::max(r.optimizer_ns, s.optimizer_ns);
    rep.stages.push_back(std::move(st));
  }
  // Link tracks in order of their first transfer, as the simulator creates them.
  std::sort(transfers.begin(), transfers.end(),
            [](const TransferRecord& a, const TransferRecord& b) { return a.start_ns < b.start_ns; });
  for (const TransferRecord& t : transfers) {
    int track = rep.timeline.track_for("link " + std::to_string(t.from_device) + "->" + std::to_string(t.to_device));
    rep.timeline.events.push_back({track, "transfer", t.stage, t.microbatch, t.start_ns - t0, t.end_ns - t.start_ns});
  }
  rep.bubble_fraction = rep.step_ns > 0 ? 1.0 - static_cast<double>(total_busy) / (static_cast<double>(K) * rep.step_ns) : 0;
  rep.notes.push_back("measured: " + options.backend + " backend" +
                      (options.backend == "cpu" ? " (OpenBLAS " + blas_kernels() + " kernels)" : std::string()) + ", " + options.transport + " transport (" +
                      (r.spin_waits ? "waits spin" : "waits block") +
                      (options.transport == "threads" ? (options.pin_threads(K) ? ", threads pinned" : ", threads unpinned") : "") +
                      "), median of " + std::to_string(steps - warmup) +
                      " step(s) after " + std::to_string(warmup) + " warm-up");
  if (std::string where = placement_note(options.backend, K); !where.empty()) rep.notes.push_back(where);
  rep.notes.push_back("step time runs from the step's start barrier to the end of its last op; the optimizer step (" +
                      format_ms(r.optimizer_ns) + " ms on the slowest device) is not included");
  rep.notes.push_back("peak memory = largest total the tracker saw (weights, gradients, optimizer state, stashed "
                      "activations and transient buffers)");
  // How much of a core the ops got: well below 1 means the stages shared cores (K > free
  // cores, or other load), and measured times will exceed a prediction from a quiet profile.
  int64_t cpu = 0, wall = 0;
  for (const WorkerResult& w : workers) {
    for (int i : measured) {
      for (const OpRecord& o : w.steps.at(i).ops) {
        cpu += o.cpu_ns;
        wall += o.end_ns - o.start_ns;
      }
    }
  }
  r.cpu_share = wall > 0 ? static_cast<double>(cpu) / wall : 0;
  char share_text[256];
  std::snprintf(share_text, sizeof share_text,
                "ops got %.0f%% of a core on average (thread CPU time / wall time)%s", 100 * r.cpu_share,
                r.cpu_share < 0.9 ? ": the workers did not have a core each (other load, or more stages than cores), so ops ran slower than on a quiet machine" : "");
  rep.notes.push_back(share_text);
  char loss_text[64];
  std::snprintf(loss_text, sizeof loss_text, "%.6g", r.losses[pick]);
  rep.notes.push_back(std::string("training loss (mean squared error) in the reported step: ") + loss_text);
  if (options.check_gradients) {
    std::map<int, std::vector<std::vector<float>>> grads;
    bool have_all = true;
    for (WorkerResult& w : workers) {
      if (w.gradients.empty()) have_all = false;
      for (auto& [layer, g] : w.gradients) grads[layer] = std::move(g);
    }
    double worst = have_all ? gradient_error(profile, plan, options.backend, grads) : 0.0;
    for (const WorkerResult& w : workers) worst = std::max(worst, w.max_gradient_error);
    r.max_gradient_error = worst;
  }
  return r;
}

}  // namespace pipescope::exec
