// Runs a plan for real: one StageWorker per device walks the same Schedule the simulator
// replays, over a transport (threads in this process, or MPI ranks), for several steps,
// and the workers' records are merged into a StepReport of kind "measurement" with the
// prediction's keys and tracks (device tracks "device d", link tracks "link a->b").
// The reported step is the median of the measured steps (the first `warmup` are not).
// Asynchronous schedules (pipedream, 2bw) hold all their steps in one op list: it runs
// once, and the report has the simulator's step ends, mean and steady-state step.
// Replicated stages (exec/runtime/replica_layout.h) run one worker per replica: D = K x r.
// Step time, the same rule as the simulator's: from the step's start barrier to the
// latest end of any op or gradient all-reduce; the optimizer step is not included.
//   RunResult r = run_plan(profile, plan, schedule, {.steps = 5});
//   std::cout << report_table(r.report);
#pragma once

#include <map>
#include <vector>

#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "core/schedule.h"
#include "exec/runtime/run_types.h"

namespace pipescope::exec {

struct RunResult {
  bool is_root = true;             // MPI: only rank 0 holds the merged report
  StepReport report;
  double max_gradient_error = -1;  // when options.check_gradients
  std::vector<double> losses;      // every step's loss (mean squared error), warm-up included
  std::vector<int64_t> step_ns;    // every measured step, in order
  int64_t optimizer_ns = 0;        // slowest device's optimizer step in the reported step
  bool spin_waits = false;         // whether the stages' waits spun (RunOptions::wait)
  double cpu_share = 0;            // measured steps: ops' thread CPU time / their wall time
  int64_t allreduce_ns = 0;        // slowest replica's gradient all-reduce in the reported step
  bool replicas_identical = true;  // every replica of a position ended with the same parameters
  std::vector<int> rolled_back_steps;  // post-validation: steps whose global check failed (update skipped)
  std::vector<double> gradient_norms;  // post-validation: the global gradient norm of every accepted step
  std::vector<WorkerResult> workers;  // the workers' own records, by device (ops carry their weight versions)
};

// Throws InputError when the plan cannot be executed (stages with different replica
// counts, r not dividing the micro-batch, replicas off the cpu backend, layers without
// spec, a non-chain model, an unknown backend).
void check_runnable(const Profile& profile, const Plan& plan, const Schedule& schedule,
                    const RunOptions& options);

// Dispatches on options.transport (threads or mpi). Throws RunError when a worker fails.
RunResult run_plan(const Profile& profile, const Plan& plan, const Schedule& schedule,
                   const RunOptions& options);
RunResult run_threads(const Profile& profile, const Plan& plan, const Schedule& schedule,
                      const RunOptions& options);

// Rank 0 side of every transport: merges per-device records into the measurement
// (an asynchronous schedule's through merge_async_results, exec/runtime/merge_async.cpp).
RunResult merge_results(const Profile& profile, const Plan& plan, const Schedule& schedule,
                        const RunOptions& options, std::vector<WorkerResult> workers, bool spin_waits);
RunResult merge_async_results(const Profile& profile, const Plan& plan, const Schedule& schedule,
                              const RunOptions& options, std::vector<WorkerResult> workers, bool spin_waits);
// What both merges start from: a measurement's header (model, schedule, K, v, M per step,
// micro-batch, batch, re-materialisation, weight update, ops); times are left to them.
StepReport measurement_header(const Profile& profile, const Plan& plan, const Schedule& schedule);
// The note both merges open with: "measured: cpu backend (OpenBLAS ... kernels), threads
// transport (waits block, threads pinned)"; `workers` is how many threads pin_threads sees.
std::string measured_setup(const RunOptions& options, int workers, bool spin_waits);
// The measurement's note for a run in model time (RunOptions::model_time).
std::string model_time_note(const RunOptions& options);

// The reference for synchronous semantics: one process runs the whole mini-batch
// through the whole model without pipelining; returns the largest relative error
// ||g - g_ref||_2 / ||g_ref||_2 over the parameter tensors of the layers in `gradients`
// (for replicated stages: the gradients after the all-reduce, of any one replica).
double gradient_error(const Profile& profile, const Plan& plan, const std::string& backend,
                      const std::map<int, std::vector<std::vector<float>>>& gradients);
// gradient_error over the gradients the workers kept (RunOptions::check_gradients; moved
// out of them), each replica's set of layers, and the errors MPI ranks found themselves.
double workers_gradient_error(const Profile& profile, const Plan& plan, const std::string& backend,
                              std::vector<WorkerResult>& workers);

}  // namespace pipescope::exec
