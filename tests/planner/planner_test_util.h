// Random small instances for the planner's property tests: profiles with random
// per-layer costs and random skip edges, hardware with random speeds, links and
// memory, and the brute-force optimum every exact partitioner must equal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>

#include "core/hardware.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "planner/partition.h"
#include "planner/stage_model.h"

namespace pipescope::testing {

inline Profile random_profile(std::mt19937_64& rng, int layers, bool with_edges) {
  std::uniform_real_distribution<double> ms(0.05, 3.0);
  std::uniform_int_distribution<int64_t> bytes(1 << 10, 1 << 24);
  Profile p;
  p.model = "random";
  p.source = "random.json";
  p.batch_sizes = {1, 2, 4};
  for (int l = 0; l < layers; ++l) {
    LayerProfile layer;
    layer.name = "layer." + std::to_string(l);
    const double f = ms(rng), b = ms(rng);
    const double act = static_cast<double>(bytes(rng)), out = static_cast<double>(bytes(rng));
    for (double s : p.batch_sizes) {
      layer.forward_ms.push_back(f * s);
      layer.backward_ms.push_back(b * s);
      layer.activation_bytes.push_back(act * s);
      layer.output_bytes.push_back(out * s);
    }
    layer.parameter_bytes = bytes(rng);
    p.layers.push_back(layer);
  }
  if (with_edges) {
    for (int l = 0; l + 1 < layers; ++l) p.edges.emplace_back(l, l + 1);
    std::uniform_int_distribution<int> pick(0, layers - 1);
    for (int e = 0; e < layers / 2; ++e) {
      int a = pick(rng), b = pick(rng);
      if (a > b) std::swap(a, b);
      if (b > a + 1) p.edges.emplace_back(a, b);
    }
    std::sort(p.edges.begin(), p.edges.end());
    p.edges.erase(std::unique(p.edges.begin(), p.edges.end()), p.edges.end());
  }
  return p;
}

inline Hardware random_hardware(std::mt19937_64& rng, int devices, int64_t memory_bytes) {
  std::uniform_real_distribution<double> speed(0.5, 2.0), bandwidth(1.0, 100.0), latency(0.0, 50.0);
  Hardware h;
  h.name = "random";
  h.source = "random-hw.json";
  h.devices = devices;
  h.memory_bytes = memory_bytes;
  h.link = {bandwidth(rng), latency(rng)};
  h.devices_per_node = 2;
  h.inter_node = {bandwidth(rng) / 4, latency(rng) * 2};
  for (int d = 0; d < devices; ++d) h.speed.push_back(speed(rng));
  return h;
}

// min over all partitions of [0, L) into S non-empty contiguous stages of
// max_s cost(s, first, end), by enumerating every cut.
inline int64_t brute_force_min_max(int L, int S, const std::function<int64_t(int, int, int)>& cost) {
  int64_t best = kInfeasible;
  std::function<void(int, int, int64_t)> go = [&](int s, int first, int64_t worst) {
    if (s == S - 1) {
      best = std::min(best, std::max(worst, cost(s, first, L)));
      return;
    }
    for (int end = first + 1; end <= L - (S - 1 - s); ++end) {
      go(s + 1, end, std::max(worst, cost(s, first, end)));
    }
  };
  go(0, 0, 0);
  return best;
}

// The same minimum by the plain O(S L^2) dynamic programme, without any pruning: the
// reference for instances too large to enumerate.
inline int64_t plain_dp_min_max(int L, int S, const std::function<int64_t(int, int, int)>& cost) {
  std::vector<std::vector<int64_t>> best(S, std::vector<int64_t>(L + 1, kInfeasible));
  for (int j = 1; j <= L; ++j) best[0][j] = cost(0, 0, j);
  for (int s = 1; s < S; ++s) {
    for (int j = s + 1; j <= L; ++j) {
      for (int i = s; i < j; ++i) {
        if (best[s - 1][i] == kInfeasible) continue;
        best[s][j] = std::min(best[s][j], std::max(best[s - 1][i], cost(s, i, j)));
      }
    }
  }
  return best[S - 1][L];
}

// A random partitioning problem: a profile on hardware under a schedule, with the stage
// model's micro-batch size and replication.
struct Instance {
  Profile profile;
  Hardware hardware;
  Schedule schedule;
  StageModelSpec spec;
};

// The schedule side of a random instance for L layers, drawn in this order: one of the
// first `kinds` of gpipe, 1f1b, zb-h1, interleaved (v = 2, M a multiple of K); K; M;
// re-materialisation; replicas r.
struct RandomChoice {
  ScheduleKind kind;
  int K, v, M;
  bool recompute;
  int r;
};
inline RandomChoice random_choice(std::mt19937_64& rng, int L, int kinds) {
  const ScheduleKind all[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1,
                              ScheduleKind::Interleaved};
  RandomChoice c{all[rng() % kinds], 1 + static_cast<int>(rng() % std::min(L, 4)), 1, 1, false, 1};
  if (c.kind == ScheduleKind::Interleaved) {
    c.K = std::max(2, std::min(c.K, L / 2));
    c.v = 2;
    if (c.K * c.v > L) c.kind = ScheduleKind::OneFOneB, c.v = 1;
  }
  c.M = 1 + static_cast<int>(rng() % 6);
  if (c.kind == ScheduleKind::Interleaved) c.M = c.K * (1 + static_cast<int>(rng() % 3));
  c.recompute = rng() % 2;
  c.r = 1 + static_cast<int>(rng() % 3);
  return c;
}

// The rest of a random instance once its profile is drawn: device memory between "almost
// nothing fits" and "everything fits" (unbounded one time in five), the schedule, and a
// micro-batch of r x 1..4 samples.
inline void finish_instance(std::mt19937_64& rng, const RandomChoice& c, Instance& in) {
  const int64_t memory = (int64_t{1} << 26) + static_cast<int64_t>(rng() % (int64_t{1} << 29));
  in.hardware = random_hardware(rng, c.K * c.r, rng() % 5 == 0 ? 0 : memory);
  in.schedule = make_schedule({c.kind, c.K, c.M, c.v, c.recompute});
  in.spec.microbatch_size = static_cast<double>(c.r * (1 + rng() % 4));
  in.spec.replicas = c.r;
}

}  // namespace pipescope::testing
