// Step-time distributions under jitter and stragglers: the step is replayed N times,
// each op's time drawn around its cost-model value, and the spread of the step time,
// the bubble and the critical path is reported.
// Invariants: sample i draws only from a generator seeded by (seed, i), so the result
// is the same bytes whatever the thread count; with every CV 0 and no straggler each
// sample is the deterministic step exactly.
//   JitterSpec j;  j.cv = 0.05;  j.samples = 1000;  j.seed = 7;
//   StepDistribution d = sample_steps(schedule, costs, hardware, j);  // d.p99_ns ...
#pragma once

#include <cstdint>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "sim/simulator.h"

namespace pipescope {

struct JitterSpec {
  int samples = 0;
  double cv = 0;                    // compute ops: lognormal, mean 1, this coefficient of variation
  std::vector<double> stage_cv;     // optional per stage (e.g. measured by the profiler); overrides cv
  double straggler_probability = 0; // per device per step: runs `straggler_slowdown` x slower
  double straggler_slowdown = 1;
  double link_cv = 0;               // transfers: lognormal factor on latency + busy time
  uint64_t seed = 0;
  int threads = 0;                  // 0: std::thread::hardware_concurrency()
  P2p p2p = P2p::Overlapped;        // as SimOptions::p2p (`simulate --p2p`)
  const RuntimeCosts* runtime = nullptr;  // as SimOptions::runtime (`simulate --runtime`)
};

struct StepDistribution {
  int samples = 0;
  int64_t deterministic_ns = 0;        // the step with no jitter
  std::vector<int64_t> step_ns;        // per sample, in sample order (asynchronous: the steady-state step)
  double mean_ns = 0, stddev_ns = 0;
  int64_t min_ns = 0, p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
  double bubble_mean = 0, bubble_p50 = 0, bubble_p99 = 0;
  // Per position: the mean share of the critical path's op time spent on it, and in
  // how many samples it held the largest share (the step's bottleneck).
  std::vector<double> critical_share;
  std::vector<int64_t> critical_counts;
};

// Throws InputError on a bad spec (samples < 1, cv < 0, probability outside [0, 1],
// slowdown < 1, stage_cv of the wrong length).
StepDistribution sample_steps(const Schedule& schedule, const CostModel& costs, const Hardware& hardware,
                              const JitterSpec& spec);

// Per model stage of `costs`, the coefficient of variation of its op times from the
// profile's measured spread per layer; throws InputError when the profile has none.
std::vector<double> stage_cv_from_profile(const Profile& profile, const CostModel& costs);

// The q-quantile (0 < q <= 1) of `sorted` by nearest rank: sorted[ceil(q n) - 1].
int64_t nearest_rank(const std::vector<int64_t>& sorted, double q);

// The "distribution" object of `simulate --json` (times in ms).
Json distribution_to_json(const StepDistribution& d, const JitterSpec& spec);

}  // namespace pipescope
