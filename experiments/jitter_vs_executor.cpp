// Predicted step-time spread against the CPU executor's (a report, no bound).
// Profiles a model on the CPU backend (which measures each op's spread: forward_cv,
// backward_cv), runs K = 2 for 30 measured steps with the threads transport, and puts
// the measured p50 / p90 / CV of the step beside the simulator's under
// `--jitter profile` (each stage's CV from the profile, sim/distribution.h).
//   jitter_vs_executor [MODEL=models/gpt-tiny.json] [M=4] [MICROBATCH_SIZE=2]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "exec/profiler/profiler.h"
#include "planner/plan_builder.h"
#include "sim/distribution.h"
#include "sim/simulator.h"
#include "tests/support/source_paths.h"

using namespace pipescope;

namespace {

struct Spread {
  double p50_ms, p90_ms, mean_ms, cv;
};

Spread spread_of(std::vector<int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  double sum = 0, sq = 0;
  for (int64_t x : ns) sum += static_cast<double>(x);
  const double mean = sum / static_cast<double>(ns.size());
  for (int64_t x : ns) sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  const double sd = ns.size() > 1 ? std::sqrt(sq / static_cast<double>(ns.size() - 1)) : 0.0;
  return {static_cast<double>(nearest_rank(ns, 0.5)) / 1e6, static_cast<double>(nearest_rank(ns, 0.9)) / 1e6,
          mean / 1e6, mean > 0 ? sd / mean : 0.0};
}

void row(const char* what, const Spread& s) {
  std::printf("%-34s %9.3f %9.3f %9.3f %7.1f%%\n", what, s.p50_ms, s.p90_ms, s.mean_ms, 100 * s.cv);
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string model_path = argc > 1 ? std::string(argv[1]) : std::string(PIPESCOPE_SOURCE_DIR) + "/models/gpt-tiny.json";
  const int K = 2, M = argc > 2 ? std::stoi(argv[2]) : 4, steps = 30;
  const double b = argc > 3 ? std::stod(argv[3]) : 2.0;

  exec::ProfileOptions po;
  po.batch_sizes = {b};
  po.repeats = 30;
  po.progress = &std::cerr;
  Profile profile = exec::profile_model(exec::load_model(model_path), po);
  profile.source = model_path;

  PlanChoice choice;
  choice.stages = K;
  choice.microbatches = M;
  choice.microbatch_size = b;
  Plan plan = make_plan(profile, choice).plan;
  const Schedule schedule = schedule_for(plan);
  const Hardware hardware = Hardware::ideal(K);
  const CostModel costs = build_cost_model(profile, plan, hardware);

  exec::RunOptions ro;
  ro.steps = steps + 1;
  ro.warmup = 1;
  const exec::RunResult run = exec::run_plan(profile, plan, schedule, ro);

  JitterSpec j;
  j.samples = 2000;
  j.seed = 1;
  j.stage_cv = stage_cv_from_profile(profile, costs);
  const StepDistribution d = sample_steps(schedule, costs, hardware, j);

  std::printf("gpt-tiny-like model %s, 1F1B K=%d M=%d micro-batch %.0f, cpu backend, %d measured steps\n",
              model_path.c_str(), K, M, b, steps);
  std::printf("stage CVs from the profile:");
  for (double cv : j.stage_cv) std::printf(" %.1f%%", 100 * cv);
  std::printf("\n%-34s %9s %9s %9s %8s\n", "", "p50 ms", "p90 ms", "mean ms", "CV");
  row("executor, measured", spread_of(run.step_ns));
  row("simulator, --jitter profile", spread_of(d.step_ns));
  std::printf("%-34s %9.3f\n", "simulator, deterministic", static_cast<double>(d.deterministic_ns) / 1e6);
  std::printf("executor ops' CPU share: %.0f%% (below 100%%: the workers shared cores)\n", 100 * run.cpu_share);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "jitter_vs_executor: " << e.what() << "\n";
  return 2;
}
