// Merges the workers' records of an asynchronous run (pipedream, 2bw), or of a flushed
// schedule's steps run back to back under post-validation, into the measurement. The
// workers ran the steps as one op list from one start barrier, filing each op under its micro-batch's step; step t ends at the latest end of
// an op of step t or of the weight update that ended one (the simulator's rule), the
// last step at the run's last event. Invariant: every time in the report is relative to
// the run's origin (the earliest post-barrier clock reading of any worker), and the
// timeline holds every step, as simulate's does for these schedules.
#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "exec/runtime/executor.h"

namespace pipescope::exec {

namespace {

// The latest end of an op of the step or of an update that ended one.
int64_t async_step_end(const StepRecord& s) {
  int64_t end = 0;
  for (const OpRecord& o : s.ops) end = std::max(end, o.end_ns);
  for (const UpdateRecord& u : s.updates) end = std::max(end, u.end_ns);
  return end;
}

// Position p's row and its timeline tracks, from one worker's records of every step.
PositionReport async_stage(const Plan& plan, const Schedule& schedule, int p, const WorkerResult& w, int64_t t0,
                        TimelineRecorder& timeline) {
  PositionReport st;
  st.index = p;
  for (int stage : schedule.stages_of(p)) st.layers.emplace_back(plan.stages[stage].first_layer, plan.stages[stage].end_layer);
  st.hardware_devices = plan.stages[p].devices;
  std::vector<MemorySample> memory;
  for (const StepRecord& s : w.steps) {
    for (const OpRecord& o : s.ops) {
      st.busy_ns += o.end_ns - o.start_ns;
      timeline.op(p, 0, Op{o.kind, o.stage, o.microbatch}, o.start_ns - t0, o.end_ns - o.start_ns);
    }
    for (const UpdateRecord& u : s.updates) timeline.optimizer(p, 0, u.start_ns - t0, u.end_ns - u.start_ns);
    memory.insert(memory.end(), s.memory.begin(), s.memory.end());
    st.peak_activation_bytes = std::max(st.peak_activation_bytes, s.peak_activation_bytes);
    st.peak_memory_bytes = std::max(st.peak_memory_bytes, s.peak_total_bytes);
  }
  std::stable_sort(memory.begin(), memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.time_ns < b.time_ns; });
  for (const MemorySample& m : memory) {
    timeline.memory(p, m.time_ns - t0, m.activation_bytes, m.transient_bytes, m.weight_version_bytes);
  }
  st.static_bytes = w.static_bytes;
  st.weight_bytes = w.weight_bytes;
  st.gradient_bytes = w.gradient_bytes;
  st.optimizer_bytes = w.optimizer_bytes;
  st.weight_versions = w.weight_versions;
  st.weight_version_bytes = w.weight_version_bytes;
  st.transient_bytes = transient_share(st);
  return st;
}

// What was measured and how, for the report's notes.
void add_async_notes(RunResult& r, const Schedule& schedule, const RunOptions& options) {
  StepReport& rep = r.report;
  const int K = schedule.positions(), T = static_cast<int>(r.step_ns.size());
  const bool post_validation = !schedule.asynchronous();
  rep.notes.push_back(measured_setup(options, K, r.spin_waits) + ", " + std::to_string(T) +
                      " step(s) run once as one op list without a flush (" +
                      (post_validation ? std::string("post-validation") : schedule.name + " is asynchronous") +
                      "; no warm-up steps): step_time_ms is their mean, the steady-state step the "
                      "median step-to-step time leaving out the first step (the fill) and, from 3 steps on, the last");
  if (options.model_time) rep.notes.push_back(model_time_note(options));
  if (std::string where = placement_note(options.backend, K); !where.empty()) rep.notes.push_back(where);
  if (post_validation) {
    std::string rolled;
    for (int t : r.rolled_back_steps) rolled += (rolled.empty() ? "" : ", ") + std::to_string(t);
    rep.notes.push_back("optimizer step: post-validation (each position steps its optimizer after its own last op of "
                        "the step, keeping a copy of its parameters and optimizer state, and runs on; the global "
                        "gradient-norm and all-finite check of step t is awaited after step t + 1's ops); " +
                        (rolled.empty() ? std::string("every check passed")
                                        : "rolled back (update skipped, the next step redone): step(s) " + rolled));
  } else {
    rep.notes.push_back(std::string("weight updates: ") +
                      (schedule.weight_update == WeightUpdate::Stash ? "after every micro-batch (weight stashing)"
                                                                     : "once per step, one step late (2BW)") +
                      ", each a copy of the version kept for later ops plus the optimizer step on the device's "
                      "track; the longest took " + format_ms(r.optimizer_ns) + " ms");
  }
  rep.notes.push_back("peak memory = largest total the tracker saw (weights, the kept weight versions, gradients, "
                      "optimizer state, stashed activations and transient buffers); transient_bytes = its excess "
                      "over static + weight versions + peak activations");
  char text[256];
  std::snprintf(text, sizeof text, "ops got %.0f%% of a core on average (thread CPU time / wall time)%s",
                100 * r.cpu_share, r.cpu_share < 0.9 ? ": the workers did not have a core each, so ops ran slower" : "");
  rep.notes.push_back(text);
  std::snprintf(text, sizeof text, "training loss (mean squared error) in the last step: %.6g", r.losses.back());
  rep.notes.push_back(text);
}

}  // namespace

RunResult merge_async_results(const Profile& profile, const Plan& plan, const Schedule& schedule,
                              const RunOptions& options, std::vector<WorkerResult> workers, bool spin_waits) {
  RunResult r;
  r.spin_waits = spin_waits;
  const int K = schedule.positions();
  const int T = schedule.asynchronous() ? schedule.steps : options.steps;
  std::sort(workers.begin(), workers.end(), [](const WorkerResult& a, const WorkerResult& b) { return a.device < b.device; });
  if (static_cast<int>(workers.size()) != K) throw RunError("asynchronous run: expected one worker per position");
  int64_t t0 = INT64_MAX;
  for (const WorkerResult& w : workers) t0 = std::min(t0, w.steps.at(0).origin_ns);
  std::vector<int64_t> ends(static_cast<std::size_t>(T), 0);
  int64_t run_end = 0;
  for (const WorkerResult& w : workers) {
    for (int t = 0; t < T; ++t) {
      const StepRecord& s = w.steps.at(t);
      ends[t] = std::max(ends[t], async_step_end(s) - t0);
      for (const TransferRecord& x : s.transfers) run_end = std::max(run_end, x.end_ns - t0);
    }
  }
  ends.back() = std::max(ends.back(), run_end);  // the last step ends with the run, as simulated

  r.report = measurement_header(profile, plan, schedule);
  StepReport& rep = r.report;
  set_step_ends(rep, ends);
  for (int t = 0; t < T; ++t) r.step_ns.push_back(ends[t] - (t > 0 ? ends[t - 1] : 0));
  r.losses.assign(static_cast<std::size_t>(T), 0.0);
  TimelineRecorder timeline(rep.timeline, K);
  int64_t total_busy = 0, cpu = 0, wall = 0;
  std::vector<TransferRecord> transfers;
  for (int p = 0; p < K; ++p) {
    const WorkerResult& w = workers[p];
    PositionReport st = async_stage(plan, schedule, p, w, t0, timeline);
    st.bubble_fraction = bubble_fraction(static_cast<double>(st.busy_ns), 1, static_cast<double>(rep.total_ns));
    total_busy += st.busy_ns;
    for (int t = 0; t < T; ++t) {
      const StepRecord& s = w.steps[t];
      r.losses[t] += s.loss;
      for (const UpdateRecord& u : s.updates) r.optimizer_ns = std::max(r.optimizer_ns, u.end_ns - u.start_ns);
      for (const TransferRecord& x : s.transfers) {
        if (x.from_device != x.to_device) transfers.push_back(x);
      }
      for (const OpRecord& o : s.ops) cpu += o.cpu_ns, wall += o.end_ns - o.start_ns;
    }
    rep.positions.push_back(std::move(st));
  }
  std::sort(transfers.begin(), transfers.end(),
            [](const TransferRecord& a, const TransferRecord& b) { return a.start_ns < b.start_ns; });
  for (const TransferRecord& x : transfers) {
    timeline.transfer(x.from_device, x.to_device, x.stage, x.microbatch, x.start_ns - t0, x.end_ns - x.start_ns);
  }
  rep.bubble_fraction = bubble_fraction(static_cast<double>(total_busy), K, static_cast<double>(rep.total_ns));
  r.cpu_share = wall > 0 ? static_cast<double>(cpu) / wall : 0;

  if (options.check_gradients) r.max_gradient_error = workers_gradient_error(profile, plan, options.backend, workers);
  r.rolled_back_steps = workers.front().rolled_back_steps;
  r.gradient_norms = workers.front().gradient_norms;
  add_async_notes(r, schedule, options);
  r.workers = std::move(workers);
  return r;
}

}  // namespace pipescope::exec
