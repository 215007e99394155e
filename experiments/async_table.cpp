// The synchronous and asynchronous schedules side by side on one model (README's table
// "Synchronous or not"): each schedule's plan is cut by the optimal partitioner and
// simulated for several steps; a row gives the steady-state step and throughput, the
// largest and smallest per-stage peak memory (weight versions included) and what the
// schedule does to the training semantics.
//   build/bin/async_table [--profile P] [--hardware H] [-K 4] [-M 16] [--microbatch-size 2] [--steps 4]
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/report.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace {

using namespace pipescope;

struct Row {
  std::string schedule;
  int chunks;
  std::string semantics;
};

// What each schedule does to the optimizer's view of training.
const Row kRows[] = {
    {"gpipe", 1, "synchronous"},
    {"1f1b", 1, "synchronous"},
    {"interleaved", 2, "synchronous"},
    {"zb-h1", 1, "synchronous"},
    {"zb-v", 2, "synchronous"},
    {"pipedream", 1, "asynchronous: weight stashing, update per micro-batch, up to K-1 updates stale"},
    {"2bw", 1, "asynchronous: 2 weight versions, gradient applied 1 step late"},
};

int usage() {
  std::cerr << "usage: async_table [--profile P] [--hardware H] [-K N] [-M N] [--microbatch-size B] [--steps S]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string profile_path = "profiles/gpt-1.3b-h200.json", hardware_path = "profiles/h200-8x-nvlink.json";
  int K = 4, M = 16, steps = 4;
  double microbatch_size = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--profile") profile_path = v;
    else if (a == "--hardware") hardware_path = v;
    else if (a == "-K") K = std::stoi(v);
    else if (a == "-M") M = std::stoi(v);
    else if (a == "--steps") steps = std::stoi(v);
    else if (a == "--microbatch-size") microbatch_size = std::stod(v);
    else return usage();
  }
  if (argc % 2 == 0) return usage();
  try {
    const Profile profile = load_profile(profile_path);
    const Hardware hardware = load_hardware(hardware_path);
    std::printf("%s on %s, K = %d, M = %d, micro-batch %g, %d steps simulated "
                "(steady state: build/bin/async_table; docs/pipedream.md)\n\n",
                profile.model.c_str(), hardware_path.c_str(), K, M, microbatch_size, steps);
    std::printf("| schedule | steady-state step | throughput | peak memory per stage (max / min) | weight versions | semantics |\n");
    std::printf("| --- | ---: | ---: | ---: | --- | --- |\n");
    for (const Row& row : kRows) {
      PlanChoice c;
      c.stages = K;
      c.microbatches = M;
      c.microbatch_size = microbatch_size;
      c.schedule = parse_schedule_kind(row.schedule);
      c.chunks = row.chunks;
      c.hardware = &hardware;
      const Plan plan = make_plan(profile, c).plan;
      const Schedule schedule = schedule_for(plan, steps);
      SimOptions o;
      o.record_timeline = false;
      o.steps = steps;
      const StepReport r = simulate(schedule, build_cost_model(profile, plan, hardware), hardware, o);
      int64_t most = 0, least = INT64_MAX;
      std::string versions;
      for (const PositionReport& st : r.positions) {
        most = std::max(most, st.peak_memory_bytes);
        least = std::min(least, st.peak_memory_bytes);
        if (!versions.empty()) versions.push_back('/');
        versions.append(std::to_string(st.weight_versions));
      }
      std::printf("| %s | %s ms | %.1f samples/s | %s / %s | %s | %s |\n", row.schedule.c_str(),
                  format_ms(r.steady_state_step_ns).c_str(), r.steady_state_throughput_samples_per_s,
                  format_bytes(static_cast<double>(most)).c_str(), format_bytes(static_cast<double>(least)).c_str(),
                  versions.c_str(), row.semantics.c_str());
    }
  } catch (const InputError& e) {
    std::cerr << "async_table: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
