// Merges every worker's records into the measurement. Invariant: every time in the
// report is relative to the step's origin, the earliest post-barrier clock reading of
// any worker (one steady clock serves every thread and every rank of one machine).
// A replicated position's row holds the largest of its replicas' numbers; replica 0's
// events go on the prediction's tracks, replica i's on tracks suffixed " replica i".
#include <algorithm>
#include <cstdio>

#include "exec/blas_kernels.h"
#include "exec/executor.h"
#include "exec/replica_layout.h"

namespace pipescope::exec {

namespace {

// The latest end of any op, all-reduce or optimizer step of a step: where the step ends.
int64_t step_end(const StepRecord& s) {
  int64_t end = std::max(s.allreduce_end_ns, s.optimizer_start_ns + s.optimizer_ns);
  for (const OpRecord& o : s.ops) end = std::max(end, o.end_ns);
  return end;
}

}  // namespace

std::string measured_setup(const RunOptions& options, int workers, bool spin_waits) {
  std::string note = "measured: " + options.backend + " backend";
  if (options.backend == "cpu") note += " (OpenBLAS " + blas_kernels() + " kernels)";
  note += ", " + options.transport + " transport (";
  note += spin_waits ? "waits spin" : "waits block";
  if (options.transport == "threads") note += options.pin_threads(workers) ? ", threads pinned" : ", threads unpinned";
  return note + ")";
}

double workers_gradient_error(const Profile& profile, const Plan& plan, const std::string& backend,
                              std::vector<WorkerResult>& workers) {
  // Every replica holds the summed gradients: check each replica's set of layers.
  const ReplicaLayout layout = replica_layout(plan);
  double worst = 0;
  for (int i = 0; i < layout.replicas; ++i) {
    std::map<int, std::vector<std::vector<float>>> grads;
    bool have_all = true;
    for (WorkerResult& w : workers) {
      if (layout.replica(w.device) != i) continue;
      if (w.gradients.empty()) have_all = false;
      for (auto& [layer, g] : w.gradients) grads[layer] = std::move(g);
    }
    if (have_all) worst = std::max(worst, gradient_error(profile, plan, backend, grads));
  }
  for (const WorkerResult& w : workers) worst = std::max(worst, w.max_gradient_error);
  return worst;
}

std::string model_time_note(const RunOptions& options) {
  return "model time: every op, transfer and optimizer step took the cost model's time on the hardware given (p2p " +
         to_string(options.p2p) + "), not the steady clock's";
}

StepReport measurement_header(const Profile& profile, const Plan& plan, const Schedule& schedule) {
  StepReport rep;
  rep.kind = "measurement";
  rep.model = profile.model;
  rep.schedule = schedule.name;
  rep.devices = schedule.devices();
  rep.chunks = std::max(1, schedule.stages() / schedule.devices());
  rep.microbatches = schedule.step_microbatches();
  rep.microbatch_size = plan.microbatch_size();
  rep.batch_size = plan.batch_size;
  rep.recompute = schedule.recompute;
  rep.weight_update = schedule.weight_update;
  rep.simulated_ops = static_cast<int64_t>(schedule.num_ops());
  return rep;
}

RunResult merge_results(const Profile& profile, const Plan& plan, const Schedule& schedule,
                        const RunOptions& options, std::vector<WorkerResult> workers, bool spin_waits) {
  if (schedule.asynchronous() || options.optimizer_step == OptimizerStep::PostValidation) return merge_async_results(profile, plan, schedule, options, std::move(workers), spin_waits);
  RunResult r;
  r.spin_waits = spin_waits;
  const ReplicaLayout layout = replica_layout(plan);
  const int K = schedule.devices(), R = layout.replicas;
  const int steps = options.steps, warmup = options.warmup_steps();
  std::sort(workers.begin(), workers.end(), [](const WorkerResult& a, const WorkerResult& b) { return a.device < b.device; });
  // Step times of the measured steps, then the median one.
  std::vector<int64_t> origin(steps, INT64_MAX), end(steps, 0);
  for (const WorkerResult& w : workers) {
    for (int i = 0; i < steps; ++i) {
      origin[i] = std::min(origin[i], w.steps.at(i).origin_ns);
      end[i] = std::max(end[i], step_end(w.steps.at(i)));
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

  r.report = measurement_header(profile, plan, schedule);
  StepReport& rep = r.report;
  rep.step_ns = end[pick] - t0;
  rep.throughput_samples_per_s = rep.step_ns > 0 ? static_cast<double>(plan.batch_size) * 1e9 / rep.step_ns : 0;
  TimelineRecorder timeline(rep.timeline, K);
  r.losses.assign(steps, 0.0);
  for (const WorkerResult& w : workers) {
    for (int i = 0; i < steps; ++i) r.losses[i] += w.steps.at(i).loss;
  }
  int64_t total_busy = 0, after_arrival = 0;
  std::vector<TransferRecord> transfers;
  std::vector<std::pair<int64_t, int>> allreduces;  // (start, worker) in the reported step
  for (int p = 0; p < K; ++p) {
    StageReport st;
    st.index = p;
    for (int stage : schedule.stages_of(p)) {
      st.layers.emplace_back(plan.stages[stage].first_layer, plan.stages[stage].end_layer);
    }
    st.hardware_devices = plan.stages[p].devices;
    int memory_replica = 0;  // the replica with the highest activation peak draws the memory counter
    int64_t last_arrival = 0, summed = 0;  // this position's all-reduce: its last member's start, its end
    for (int i = 0; i < R; ++i) {
      const WorkerResult& w = workers.at(layout.worker(p, i));
      const StepRecord& s = w.steps.at(pick);
      int64_t busy = 0;
      for (const OpRecord& o : s.ops) {
        busy += o.end_ns - o.start_ns;
        timeline.op(p, i, Op{o.kind, o.stage, o.microbatch}, o.start_ns - t0, o.end_ns - o.start_ns);
      }
      for (const TransferRecord& t : s.transfers) {
        if (t.from_device != t.to_device) transfers.push_back(t);
      }
      if (s.allreduce_end_ns > 0) allreduces.emplace_back(s.allreduce_start_ns, w.device);
      timeline.optimizer(p, i, s.optimizer_start_ns - t0, s.optimizer_ns);
      st.busy_ns = std::max(st.busy_ns, busy);
      st.static_bytes = std::max(st.static_bytes, w.static_bytes);
      st.weight_bytes = std::max(st.weight_bytes, w.weight_bytes);
      st.gradient_bytes = std::max(st.gradient_bytes, w.gradient_bytes);
      st.optimizer_bytes = std::max(st.optimizer_bytes, w.optimizer_bytes);
      for (const StepRecord& any : w.steps) {
        if (any.peak_activation_bytes > st.peak_activation_bytes) memory_replica = i;
        st.peak_activation_bytes = std::max(st.peak_activation_bytes, any.peak_activation_bytes);
        st.peak_memory_bytes = std::max(st.peak_memory_bytes, any.peak_total_bytes);
      }
      r.optimizer_ns = std::max(r.optimizer_ns, s.optimizer_ns);
      r.allreduce_ns = std::max(r.allreduce_ns, s.allreduce_end_ns - s.allreduce_start_ns);
      last_arrival = std::max(last_arrival, s.allreduce_start_ns);
      summed = std::max(summed, s.allreduce_end_ns);
      if (w.parameter_hash != workers.at(layout.worker(p, 0)).parameter_hash) r.replicas_identical = false;
    }
    for (const MemorySample& m : workers.at(layout.worker(p, memory_replica)).steps.at(pick).memory) {
      timeline.memory(p, m.time_ns - t0, m.activation_bytes, m.transient_bytes);
    }
    st.transient_bytes = transient_share(st);
    after_arrival = std::max(after_arrival, summed - last_arrival);
    total_busy += st.busy_ns;
    st.bubble_fraction = bubble_fraction(static_cast<double>(st.busy_ns), 1, static_cast<double>(rep.step_ns));
    rep.stages.push_back(std::move(st));
  }
  // Link tracks, then all-reduce tracks, in order of their first event, as the simulator creates them.
  std::sort(transfers.begin(), transfers.end(),
            [](const TransferRecord& a, const TransferRecord& b) { return a.start_ns < b.start_ns; });
  for (const TransferRecord& t : transfers) {
    timeline.transfer(layout.position(t.from_device), layout.position(t.to_device), t.stage, t.microbatch,
                      t.start_ns - t0, t.end_ns - t.start_ns, layout.replica(t.from_device));
  }
  std::sort(allreduces.begin(), allreduces.end());
  for (auto [start, worker] : allreduces) {
    const StepRecord& s = workers.at(worker).steps.at(pick);
    timeline.allreduce(layout.position(worker), layout.replica(worker), start - t0, s.allreduce_end_ns - start);
  }
  rep.bubble_fraction = bubble_fraction(static_cast<double>(total_busy), K, static_cast<double>(rep.step_ns));
  rep.notes.push_back(measured_setup(options, K * R, r.spin_waits) + ", median of " +
                      std::to_string(steps - warmup) + " step(s) after " + std::to_string(warmup) + " warm-up");
  if (options.model_time) rep.notes.push_back(model_time_note(options));
  if (std::string where = placement_note(options.backend, K); !where.empty()) rep.notes.push_back(where);
  if (R > 1) {
    rep.notes.push_back("every stage runs as r = " + std::to_string(R) + " replicas (" + std::to_string(K * R) +
                        " workers), each on b/r = " + std::to_string(layout.rows_per_replica()) +
                        " sample(s) of every micro-batch; a stage's row shows the largest of its replicas' numbers; "
                        "trace tracks of replica i > 0 end in \"replica i\"");
    rep.notes.push_back("gradient all-reduce of the replicas: up to " + format_ms(r.allreduce_ns) +
                        " ms from a replica's last op to the summed gradients (waiting for its slower replicas "
                        "included), " + format_ms(after_arrival) + " ms after the last replica arrived; replicas hold " +
                        (r.replicas_identical ? "identical" : "DIFFERENT") + " parameters after the last step");
  }
  rep.notes.push_back("step time runs from the step's start barrier to the end of its optimizer step (" +
                      format_ms(r.optimizer_ns) + " ms on the slowest device), after its last op or gradient "
                      "all-reduce; predictions end the step with it when the profile has optimizer_ms");
  rep.notes.push_back("peak memory = largest total the tracker saw (weights, gradients, optimizer state, stashed "
                      "activations and transient buffers, the gradient all-reduce and optimizer step included); "
                      "transient_bytes = its excess over static + peak activations");
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
  if (options.check_gradients) r.max_gradient_error = workers_gradient_error(profile, plan, options.backend, workers);
  r.workers = std::move(workers);
  return r;
}

}  // namespace pipescope::exec
