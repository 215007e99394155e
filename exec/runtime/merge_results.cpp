// Merges every worker's records into the measurement. Invariant: every time in the
// report is relative to the step's origin, the earliest post-barrier clock reading of
// any worker (one steady clock serves every thread and every rank of one machine).
// A replicated position's row holds the largest of its replicas' numbers; replica 0's
// events go on the prediction's tracks, replica i's on tracks suffixed " replica i".
#include <algorithm>
#include <cstdio>

#include "exec/backends/blas_kernels.h"
#include "exec/runtime/executor.h"
#include "exec/runtime/replica_layout.h"

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
  note += ", " + to_string(options.transport) + " transport (";
  note += spin_waits ? "waits spin" : "waits block";
  if (options.transport == Transport::Threads) note += options.pin_threads(workers) ? ", threads pinned" : ", threads unpinned";
  return note + ")";
}

// Every replica holds the summed gradients: the worst error of any replica's set of
// layers against the unpipelined reference, or of a worker's own check.
double workers_gradient_error(const Profile& profile, const Plan& plan, const std::string& backend,
                              std::vector<WorkerResult>& workers) {
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
  rep.num_positions = schedule.positions();
  rep.chunks = std::max(1, schedule.stages() / schedule.positions());
  rep.microbatches = schedule.step_microbatches();
  rep.microbatch_size = plan.microbatch_size();
  rep.batch_size = plan.batch_size;
  rep.recompute = recompute_from_r_ops(schedule.r_ops);
  rep.weight_update = schedule.weight_update;
  rep.simulated_ops = static_cast<int64_t>(schedule.num_ops());
  return rep;
}

namespace {

// The measured steps (after warm-up) and the median one, which the report shows.
struct StepPick {
  std::vector<int64_t> origin, end;  // per step: the earliest start, the latest end
  std::vector<int> measured;         // the steps after warm-up
  int pick = 0;                      // the median of them
};

StepPick pick_median_step(const std::vector<WorkerResult>& workers, int steps, int warmup) {
  StepPick p;
  p.origin.assign(steps, INT64_MAX);
  p.end.assign(steps, 0);
  for (const WorkerResult& w : workers) {
    for (int i = 0; i < steps; ++i) {
      p.origin[i] = std::min(p.origin[i], w.steps.at(i).origin_ns);
      p.end[i] = std::max(p.end[i], step_end(w.steps.at(i)));
    }
  }
  for (int i = warmup; i < steps; ++i) p.measured.push_back(i);
  std::vector<int> order = p.measured;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return p.end[a] - p.origin[a] < p.end[b] - p.origin[b]; });
  p.pick = order[(order.size() - 1) / 2];
  return p;
}

// One flushed run's merge: each position's row from its replicas' records, then the
// link and all-reduce tracks, then the notes. Times are relative to the picked step's origin.
class SyncMerge {
 public:
  SyncMerge(const Plan& plan, const Schedule& schedule, const ReplicaLayout& layout,
            const std::vector<WorkerResult>& workers, int pick, int64_t t0, RunResult& r)
      : plan_(plan), schedule_(schedule), layout_(layout), workers_(workers), pick_(pick), t0_(t0), r_(r),
        timeline_(r.report.timeline, schedule.positions()) {}

  // Position p's row: the largest of its replicas' numbers; its ops, optimizer step and
  // memory counter (of the replica with the highest activation peak) on the timeline.
  PositionReport position_row(int p) {
    PositionReport st;
    st.index = p;
    for (int stage : schedule_.stages_of(p)) {
      st.layers.emplace_back(plan_.stages[stage].first_layer, plan_.stages[stage].end_layer);
    }
    st.hardware_devices = plan_.stages[p].devices;
    int memory_replica = 0;
    int64_t last_arrival = 0, summed = 0;  // this position's all-reduce: its last member's start, its end
    for (int i = 0; i < layout_.replicas; ++i) {
      const WorkerResult& w = workers_.at(layout_.worker(p, i));
      const StepRecord& s = w.steps.at(pick_);
      add_replica_events(p, i, w, s, st);
      take_larger_bytes(w, st);
      for (const StepRecord& any : w.steps) {
        if (any.peak_activation_bytes > st.peak_activation_bytes) memory_replica = i;
        st.peak_activation_bytes = std::max(st.peak_activation_bytes, any.peak_activation_bytes);
        st.peak_memory_bytes = std::max(st.peak_memory_bytes, any.peak_total_bytes);
      }
      r_.optimizer_ns = std::max(r_.optimizer_ns, s.optimizer_ns);
      r_.allreduce_ns = std::max(r_.allreduce_ns, s.allreduce_end_ns - s.allreduce_start_ns);
      last_arrival = std::max(last_arrival, s.allreduce_start_ns);
      summed = std::max(summed, s.allreduce_end_ns);
      if (w.parameter_hash != workers_.at(layout_.worker(p, 0)).parameter_hash) r_.replicas_identical = false;
    }
    for (const MemorySample& m : workers_.at(layout_.worker(p, memory_replica)).steps.at(pick_).memory) {
      timeline_.memory(p, m.time_ns - t0_, m.activation_bytes, m.transient_bytes);
    }
    add_host_side(p, workers_.at(layout_.worker(p, 0)).steps.at(pick_), st);
    st.transient_bytes = transient_share(st);
    after_arrival_ = std::max(after_arrival_, summed - last_arrival);
    st.bubble_fraction = bubble_fraction(static_cast<double>(st.busy_ns), 1, static_cast<double>(r_.report.step_ns));
    return st;
  }

  // Link tracks, then all-reduce tracks, in order of their first event, as the simulator creates them.
  void add_link_and_allreduce_tracks() {
    std::sort(transfers_.begin(), transfers_.end(),
              [](const TransferRecord& a, const TransferRecord& b) { return a.start_ns < b.start_ns; });
    for (const TransferRecord& t : transfers_) {
      timeline_.transfer(layout_.position(t.from_device), layout_.position(t.to_device), t.stage, t.microbatch,
                         t.start_ns - t0_, t.end_ns - t.start_ns, layout_.replica(t.from_device));
    }
    std::sort(allreduces_.begin(), allreduces_.end());
    for (auto [start, worker] : allreduces_) {
      const StepRecord& s = workers_.at(worker).steps.at(pick_);
      timeline_.allreduce(layout_.position(worker), layout_.replica(worker), start - t0_, s.allreduce_end_ns - start);
    }
  }

  // The longest wait of a position's all-reduce after its last replica arrived.
  int64_t after_arrival() const { return after_arrival_; }

 private:
  void add_replica_events(int p, int i, const WorkerResult& w, const StepRecord& s, PositionReport& st) {
    int64_t busy = 0;
    for (const OpRecord& o : s.ops) {
      busy += o.end_ns - o.start_ns;
      timeline_.op(p, i, Op{o.kind, o.stage, o.microbatch}, o.start_ns - t0_, o.end_ns - o.start_ns);
    }
    for (const TransferRecord& t : s.transfers) {
      if (t.from_device != t.to_device) transfers_.push_back(t);
    }
    if (s.allreduce_end_ns > 0) allreduces_.emplace_back(s.allreduce_start_ns, w.device);
    timeline_.optimizer(p, i, s.optimizer_start_ns - t0_, s.optimizer_ns);
    st.busy_ns = std::max(st.busy_ns, busy);
  }

  // Activation offload (one replica): the host tracks, the host pool's series and its numbers.
  void add_host_side(int p, const StepRecord& s, PositionReport& st) {
    for (const HostTransferRecord& h : s.host_transfers) {
      timeline_.host_transfer(p, h.to_host, h.stage, h.microbatch, h.start_ns - t0_, h.end_ns - h.start_ns);
    }
    for (const auto& [time, bytes] : s.host_memory) timeline_.host_memory(p, time - t0_, bytes);
    st.offloaded_bytes = s.offloaded_bytes;
    st.host_peak_bytes = s.host_peak_bytes;
    st.offload_delay_ns = s.offload_delay_ns;
  }

  static void take_larger_bytes(const WorkerResult& w, PositionReport& st) {
    st.static_bytes = std::max(st.static_bytes, w.static_bytes);
    st.weight_bytes = std::max(st.weight_bytes, w.weight_bytes);
    st.gradient_bytes = std::max(st.gradient_bytes, w.gradient_bytes);
    st.optimizer_bytes = std::max(st.optimizer_bytes, w.optimizer_bytes);
  }

  const Plan& plan_;
  const Schedule& schedule_;
  const ReplicaLayout& layout_;
  const std::vector<WorkerResult>& workers_;
  const int pick_;
  const int64_t t0_;
  RunResult& r_;
  TimelineRecorder timeline_;
  std::vector<TransferRecord> transfers_;
  std::vector<std::pair<int64_t, int>> allreduces_;  // (start, worker) in the reported step
  int64_t after_arrival_ = 0;
};

// What was measured and how, for the report's notes.
void add_sync_notes(RunResult& r, const ReplicaLayout& layout, const RunOptions& options, int K,
                    int64_t after_arrival) {
  StepReport& rep = r.report;
  const int R = layout.replicas, steps = options.steps, warmup = options.warmup_steps();
  rep.notes.push_back(measured_setup(options, K * R, r.spin_waits) + ", median of " +
                      std::to_string(steps - warmup) + " step(s) after " + std::to_string(warmup) + " warm-up");
  if (options.model_time) rep.notes.push_back(model_time_note(options));
  if (options.offload) {
    rep.offload = to_string(options.offload->policy);
    rep.notes.push_back("offload " + rep.offload + ": each F's chosen stash bytes were copied into the worker's host "
                        "pool and freed on the device once the host link's copy ended, and copied back from the start "
                        "of the op before the one that needs them (the simulator's rule, on the run's clock)");
  }
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
}

// How much of a core the ops got: well below 1 means the stages shared cores (K > free
// cores, or other load), and measured times will exceed a prediction from a quiet profile.
void add_cpu_share(RunResult& r, const std::vector<WorkerResult>& workers, const std::vector<int>& measured) {
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
  r.report.notes.push_back(share_text);
}

}  // namespace

RunResult merge_results(const Profile& profile, const Plan& plan, const Schedule& schedule,
                        const RunOptions& options, std::vector<WorkerResult> workers, bool spin_waits) {
  if (schedule.asynchronous() || options.optimizer_step == OptimizerStep::PostValidation) {
    return merge_async_results(profile, plan, schedule, options, std::move(workers), spin_waits);
  }
  RunResult r;
  r.spin_waits = spin_waits;
  const ReplicaLayout layout = replica_layout(plan);
  const int K = schedule.positions();
  const int steps = options.steps;
  std::sort(workers.begin(), workers.end(), [](const WorkerResult& a, const WorkerResult& b) { return a.device < b.device; });
  const StepPick sp = pick_median_step(workers, steps, options.warmup_steps());
  for (int i : sp.measured) r.step_ns.push_back(sp.end[i] - sp.origin[i]);
  const int pick = sp.pick;
  const int64_t t0 = sp.origin[pick];

  r.report = measurement_header(profile, plan, schedule);
  StepReport& rep = r.report;
  rep.step_ns = sp.end[pick] - t0;
  rep.throughput_samples_per_s = rep.step_ns > 0 ? static_cast<double>(plan.batch_size) * 1e9 / rep.step_ns : 0;
  r.losses.assign(steps, 0.0);
  for (const WorkerResult& w : workers) {
    for (int i = 0; i < steps; ++i) r.losses[i] += w.steps.at(i).loss;
  }
  SyncMerge merge(plan, schedule, layout, workers, pick, t0, r);
  int64_t total_busy = 0;
  for (int p = 0; p < K; ++p) {
    rep.positions.push_back(merge.position_row(p));
    total_busy += rep.positions.back().busy_ns;
  }
  merge.add_link_and_allreduce_tracks();
  rep.bubble_fraction = bubble_fraction(static_cast<double>(total_busy), K, static_cast<double>(rep.step_ns));
  add_sync_notes(r, layout, options, K, merge.after_arrival());
  add_cpu_share(r, workers, sp.measured);
  char loss_text[64];
  std::snprintf(loss_text, sizeof loss_text, "%.6g", r.losses[pick]);
  rep.notes.push_back(std::string("training loss (mean squared error) in the reported step: ") + loss_text);
  if (options.check_gradients) r.max_gradient_error = workers_gradient_error(profile, plan, options.backend, workers);
  r.workers = std::move(workers);
  return r;
}

}  // namespace pipescope::exec
