// Random plans for property tests, everything drawn from one seed (print it on failure):
// 4-23 layers with random forward/backward times and stash sizes, K up to min(L/2, 6),
// any of the four schedules (interleaved with 2 chunks and M a multiple of K), random M,
// micro-batch size, re-materialisation and partitioner, on ideal links with a random
// latency of 0-49 us and no bandwidth limit (so no link contention arises).
//   const RandomPlan p = random_plan(seed);  // p.plan, p.hardware, p.choice
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "core/hardware.h"
#include "core/profile.h"
#include "planner/plan_builder.h"

namespace pipescope::testing {

struct RandomPlan {
  Profile profile;
  PlanChoice choice;
  Plan plan;
  Hardware hardware;
};

inline RandomPlan random_plan(uint64_t seed) {
  std::mt19937_64 rng(seed);
  RandomPlan r;
  Profile& p = r.profile;
  p.model = "random";
  p.batch_sizes = {1, 4};
  const int L = 4 + rng() % 20;
  for (int l = 0; l < L; ++l) {
    LayerProfile layer;
    layer.name = "l";
    layer.name += std::to_string(l);
    double f = 0.01 + (rng() % 1000) / 100.0, b = 0.01 + (rng() % 2000) / 100.0;
    layer.forward_ms = {f, 3.7 * f};
    layer.backward_ms = {b, 3.9 * b};
    layer.activation_bytes = {1000.0 * (1 + rng() % 100), 4000.0 * (1 + rng() % 100)};
    layer.output_bytes = {100.0, 400.0};
    layer.parameter_bytes = 1000;
    p.layers.push_back(layer);
  }
  PlanChoice& choice = r.choice;
  choice.stages = 1 + rng() % std::min(L / 2, 6);
  const ScheduleKind kinds[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
                                ScheduleKind::ZeroBubbleH1};
  choice.schedule = kinds[rng() % 4];
  choice.chunks = choice.schedule == ScheduleKind::Interleaved ? 2 : 1;
  choice.microbatches = choice.schedule == ScheduleKind::Interleaved ? choice.stages * (1 + rng() % 3)
                                                                      : 1 + rng() % 9;
  choice.microbatch_size = 1 + rng() % 6;
  choice.recompute = recompute_from_r_ops(rng() % 2 == 1);
  choice.partition = rng() % 2 ? PartitionKind::Uniform : PartitionKind::Optimal;
  r.plan = make_plan(p, choice).plan;
  r.hardware = Hardware::ideal(choice.stages);
  r.hardware.link = {0.0, static_cast<double>(rng() % 50)};  // bandwidth-free, random latency (us)
  return r;
}

}  // namespace pipescope::testing
