// bench_exec: for the small GPT-like model, runs every schedule for real on the CPU
// backend and prints measured samples/s, predicted samples/s (the simulator on the
// same profile and plan) and the error, plus the executor's overhead: the measured
// step time minus the sum of measured op times on the critical (busiest) stage.
// Verify, then measure: each plan first passes the gradient check (one step against
// one process running the whole mini-batch), then runs warm-up + measured steps.
// By default the model is profiled afresh at the micro-batch size first, so that the
// prediction and the measurement see the same machine (a shared machine's load drifts);
// --profile FILE uses a stored profile instead.
//   build/bin/bench_exec -K 2 -M 8 --microbatch-size 4
// With --post-validation, instead runs zb-h1 over --steps steps three ways (synchronized;
// post-validation; post-validation with a NaN written into the last stage's gradient in
// the middle step) after checking that the clean post-validation run ends with the
// synchronized run's parameters, and prints the mean step, the mean update (post-
// validation: the copy of parameters and optimizer state kept for a rollback, plus the
// optimizer step) and what the rollback added to the run.
// With --torch, also runs benchmarks/torch_peer.py (Debian's PyTorch, one thread) on the
// same model and micro-batches and prints our step time over PyTorch's.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "exec/backends/blas_kernels.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "exec/profiler/profiler.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

using namespace pipescope;

namespace {

int bench_post_validation(const Profile& profile, int K, int M, double microbatch_size, int steps) {
  PlanChoice c;
  c.stages = K;
  c.microbatches = M;
  c.microbatch_size = microbatch_size;
  c.schedule = ScheduleKind::ZeroBubbleH1;
  const Plan plan = make_plan(profile, c).plan;
  const Schedule schedule = schedule_for(plan);
  auto run = [&](OptimizerStep step, bool nan) {
    exec::RunOptions o;
    o.steps = steps;
    o.warmup = step == OptimizerStep::Synchronized ? 1 : -1;
    o.optimizer_step = step;
    o.keep_parameters = true;
    if (nan) o.poison_gradient = exec::PoisonGradient{K - 1, steps / 2};
    return exec::run_threads(profile, plan, schedule, o);
  };
  auto params = [](const exec::RunResult& r) {
    std::map<int, std::vector<std::vector<float>>> all;
    for (const exec::WorkerResult& w : r.workers) all.insert(w.parameters.begin(), w.parameters.end());
    return all;
  };
  const exec::RunResult sync = run(OptimizerStep::Synchronized, false);
  const exec::RunResult post = run(OptimizerStep::PostValidation, false);
  const exec::RunResult rolled = run(OptimizerStep::PostValidation, true);
  if (params(sync) != params(post)) throw RunError("post-validation's parameters differ from synchronized training's");
  if (rolled.rolled_back_steps.size() != 1) throw RunError("the NaN did not roll a step back");
  auto mean_update = [](const exec::RunResult& r) {
    int64_t sum = 0, n = 0;
    for (const exec::WorkerResult& w : r.workers) {
      for (const exec::StepRecord& s : w.steps) sum += s.optimizer_ns, ++n;
    }
    return n > 0 ? sum / 1e6 / static_cast<double>(n) : 0.0;
  };
  std::printf("%s, zb-h1, K = %d, M = %d, micro-batch %g, %d steps, cpu backend, threads\n", profile.model.c_str(), K, M,
              microbatch_size, steps);
  std::printf("%-28s %12s %14s %12s\n", "run", "step ms", "update ms", "run ms");
  const double sync_run = sync.report.step_ns / 1e6 * steps;
  std::printf("%-28s %12.3f %14.4f %12.2f\n", "synchronized (median step)", sync.report.step_ns / 1e6,
              sync.optimizer_ns / 1e6, sync_run);
  std::printf("%-28s %12.3f %14.4f %12.2f\n", "post-validation (steady)", post.report.steady_state_step_ns / 1e6,
              mean_update(post), post.report.total_ns / 1e6);
  std::printf("%-28s %12.3f %14.4f %12.2f\n", "post-validation, 1 rollback", rolled.report.steady_state_step_ns / 1e6,
              mean_update(rolled), rolled.report.total_ns / 1e6);
  std::printf("update: the optimizer step (post-validation: with the copy of parameters and optimizer state\n"
              "kept until the check passes); the rollback's cost is the last column's difference: the restore\n"
              "and the redone step\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  exec::use_native_blas_kernels(argv);  // may re-execute this program once
  CLI::App app{"bench_exec: measured vs predicted throughput of every schedule on the CPU backend"};
  std::string profile_path, model_path = "models/gpt-tiny.json";
  int K = 2, M = 8, steps = 6;
  double microbatch_size = 4;
  bool torch = false, post_validation = false;
  app.add_option("--profile", profile_path, "Executable profile (default: profile --model now)");
  app.add_option("--model", model_path, "Model file")->capture_default_str();
  app.add_option("-K,--stages", K, "Pipeline stages")->capture_default_str();
  app.add_option("-M,--microbatches", M, "Micro-batches")->capture_default_str();
  app.add_option("--microbatch-size", microbatch_size, "Samples per micro-batch")->capture_default_str();
  app.add_option("--steps", steps, "Steps per schedule (the first is warm-up)")->capture_default_str();
  app.add_flag("--post-validation", post_validation, "Time post-validation's check and a rollback (zb-h1)");
  app.add_flag("--torch", torch, "Also time the same model step in PyTorch (one thread)");
  CLI11_PARSE(app, argc, argv);
  try {
    Profile profile;
    if (profile_path.empty()) {
      exec::ProfileOptions po;
      po.batch_sizes = {microbatch_size};
      profile = exec::profile_model(exec::load_model(model_path), po);
      std::printf("profiled %s at micro-batch %g (%s of %d rounds)\n", model_path.c_str(), microbatch_size, exec::to_string(po.statistic).c_str(),
                  po.repeats);
    } else {
      profile = load_profile(profile_path);
    }
    std::printf("%s, K = %d, M = %d, micro-batch %g, %d steps (1 warm-up), cpu backend, threads\n",
                profile.model.c_str(), K, M, microbatch_size, steps);
    if (post_validation) return bench_post_validation(profile, K, M, microbatch_size, steps);
    std::printf("%-12s %10s %10s %9s %12s %12s %12s %9s %6s\n", "schedule", "measured", "predicted", "error",
                "step ms", "critical ms", "overhead ms", "grad err", "core");
    for (std::string name : {"gpipe", "1f1b", "interleaved", "zb-h1"}) {
      PlanChoice c;
      c.stages = K;
      c.microbatches = M;
      c.microbatch_size = microbatch_size;
      c.schedule = parse_schedule_kind(name);
      c.chunks = required_chunks(c.schedule) == 0 ? 2 : 1;  // interleaved: 2 chunks
      c.profile_path = profile_path;
      if (!microbatch_refusal(c.schedule, K, M).empty()) continue;  // interleaved: M a multiple of K
      Plan plan = make_plan(profile, c).plan;
      Schedule schedule = schedule_for(plan);
      Hardware hw = Hardware::ideal(K);
      StepReport predicted = simulate(schedule, build_cost_model(profile, plan, hw), hw);
      exec::RunOptions check;
      check.steps = 1;
      check.check_gradients = true;
      double grad_error = exec::run_threads(profile, plan, schedule, check).max_gradient_error;
      if (!(grad_error < 1e-5)) throw RunError(name + ": gradient check failed (" + std::to_string(grad_error) + ")");
      exec::RunOptions o;
      o.steps = steps;
      exec::RunResult m = exec::run_threads(profile, plan, schedule, o);
      int64_t critical = 0;
      for (const PositionReport& s : m.report.positions) critical = std::max(critical, s.busy_ns);
      const double err = (m.report.throughput_samples_per_s - predicted.throughput_samples_per_s) /
                         predicted.throughput_samples_per_s;
      std::printf("%-12s %10.2f %10.2f %+8.1f%% %12.2f %12.2f %12.2f %9.1e %5.0f%%\n", name.c_str(),
                  m.report.throughput_samples_per_s, predicted.throughput_samples_per_s, 100 * err,
                  m.report.step_ns / 1e6, critical / 1e6, (m.report.step_ns - critical) / 1e6, grad_error,
                  100 * m.cpu_share);
    }
    std::printf("samples/s: measured and predicted throughput of one training step (optimizer excluded);\n"
                "overhead: measured step time - sum of measured op times on the busiest stage\n"
                "(for K > 1 this includes the pipeline bubble, which the prediction also has);\n"
                "core: thread CPU time / wall time of the ops (100%% = every worker had a core to itself).\n");
    if (torch) {
      PlanChoice c;
      c.stages = 1;
      c.microbatches = M;
      c.microbatch_size = microbatch_size;
      c.schedule = ScheduleKind::GPipe;
      Plan plan = make_plan(profile, c).plan;
      Schedule schedule = schedule_for(plan);
      exec::RunOptions o;
      o.steps = steps;
      exec::RunResult one = exec::run_threads(profile, plan, schedule, o);
      std::printf("pipescope (1 thread, K = 1): step %.2f ms, %.2f samples/s (optimizer excluded, as below)\n",
                  one.report.step_ns / 1e6, one.report.throughput_samples_per_s);
      std::string cmd = ".venv/bin/python benchmarks/torch_peer.py --model " + model_path + " -M " +
                        std::to_string(M) + " --microbatch-size " + std::to_string(static_cast<int>(microbatch_size)) +
                        " --steps " + std::to_string(steps);
      std::fflush(stdout);
      int rc = std::system(cmd.c_str());
      if (rc != 0) std::printf("(torch peer failed with status %d)\n", rc);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_exec: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
