// Planner benchmarks. Each checks its result against a reference first (the optimal
// partition against the time-only bound, the search against its candidate count), then
// times. Targets: optimal partition of L = 1024 layers into K = 64
// stages under 10 ms; a full `plan` search for a 128-layer profile on 64 devices with
// N = 512 and the eight schedules of 2026-11 (kEightSchedules) under 5 s on the 2-core
// machine (3.6 s, 2026-11-30); the same search over every schedule `plan` now tries by
// default (BM_PlanSearch_AllSchedules). The eight stay pinned so that a before / after run
// times the same work: a new schedule kind grows the default search, not this case.
//   build/bin/bench_planner [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "core/schedule.h"
#include "interop/synth_profile.h"
#include "planner/dag_partition.h"
#include "planner/search.h"
#include "planner/stage_model.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

Profile random_chain(int layers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> ms(0.2, 2.0);
  Profile p;
  p.batch_sizes = {1, 2, 4, 8};
  for (int l = 0; l < layers; ++l) {
    LayerProfile layer;
    const double f = ms(rng);
    for (double b : p.batch_sizes) {
      layer.forward_ms.push_back(f * b);
      layer.backward_ms.push_back(2 * f * b);
      layer.activation_bytes.push_back(4e6 * b);
      layer.output_bytes.push_back(1e6 * b);
    }
    layer.parameter_bytes = 50'000'000;
    p.layers.push_back(layer);
  }
  return p;
}

// The schedules `plan` searched by default until the memory schedules (looped-bfs,
// interleaved-zb, v-min, v-half, v-zb) joined them.
const std::vector<ScheduleKind> kEightSchedules = {
    ScheduleKind::GPipe,        ScheduleKind::OneFOneB,    ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1,
    ScheduleKind::ZeroBubbleH2, ScheduleKind::ZeroBubbleV, ScheduleKind::DualPipeV,   ScheduleKind::ZeroBubbleAuto};

Hardware cluster(int devices) {
  Hardware h;
  h.name = "64x H200, nodes of 8";
  h.devices = devices;
  h.memory_bytes = 141'000'000'000;
  h.link = {450.0, 5.0};
  h.devices_per_node = 8;
  h.inter_node = {50.0, 10.0};
  return h;
}

void BM_OptimalPartition_L1024_K64(benchmark::State& state) {
  const Profile p = random_chain(1024, 1);
  const Hardware h = cluster(64);
  const Schedule s = make_schedule({ScheduleKind::OneFOneB, 64, 64, 1, false});
  StageModelSpec spec;
  spec.microbatch_size = 4;
  const StageModel model(p, h, s, spec);
  // Verify: the optimum is at least the average and at most the equal-count cut's time.
  const MinMaxResult best = optimal_partition(model);
  const int64_t average = model.time_bound_ns(0, 0, 1024) / 64;
  const int64_t equal_counts = model.bottleneck_ns(uniform_partition(1024, 64));
  if (best.ranges.size() != 64 || best.value < average || best.value > equal_counts) {
    state.SkipWithError("optimal partition failed its check");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(optimal_partition(model));
  state.counters["slowest_stage_ms"] = static_cast<double>(best.value) / 1e6;
  state.counters["equal_counts_ms"] = static_cast<double>(equal_counts) / 1e6;
}
BENCHMARK(BM_OptimalPartition_L1024_K64)->Unit(benchmark::kMillisecond);

// Arg(0) = threads, Arg(1) = the new dimensions (per-stage replication; placement by
// speed adds nothing on equal speeds) off / on.
SearchRequest gpt128_search(int threads, std::vector<ScheduleKind> schedules) {
  GptSpec g;
  g.layers = 126;  // + embedding + head = 128 layers
  g.name = "gpt-128-layers";
  SearchRequest q;
  q.profile = make_gpt_profile(g);
  q.profile_path = "gpt-128.json";
  q.hardware = cluster(64);
  q.devices = 64;
  q.batch = 512;
  q.threads = threads;
  q.exact_top = 10;  // as `plan` does: zb-auto's order searched where it can rank in the first 10
  q.schedules = std::move(schedules);
  return q;
}

void run_search(benchmark::State& state, const SearchRequest& q) {
  const std::size_t expected = enumerate_candidates(q).size();
  SearchResult r;
  for (auto _ : state) {
    r = search_plans(q);
    benchmark::DoNotOptimize(r);
  }
  if (r.candidates.size() != expected || r.ranking.empty()) {
    state.SkipWithError("search failed its check");
    return;
  }
  state.counters["candidates"] = static_cast<double>(r.candidates.size());
  state.counters["fitting"] = static_cast<double>(r.ranking.size());
  state.counters["winner_samples_per_s"] = winner(r).throughput_samples_per_s;
  std::printf("winner: %s, %.1f samples/s\n", winner(r).label().c_str(), winner(r).throughput_samples_per_s);
}

void BM_PlanSearch_128Layers_64Devices_N512(benchmark::State& state) {
  SearchRequest q = gpt128_search(static_cast<int>(state.range(0)), kEightSchedules);
  q.per_stage_replication = state.range(1) != 0;
  q.memory_aware_interleaving = state.range(1) != 0;
  run_search(state, q);
}
BENCHMARK(BM_PlanSearch_128Layers_64Devices_N512)
    ->Args({1, 0})->Args({1, 1})->Args({2, 0})->Args({2, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// The same search over every schedule `plan` tries by default, new dimensions on.
// Arg(0) = threads.
void BM_PlanSearch_AllSchedules(benchmark::State& state) {
  SearchRequest q = gpt128_search(static_cast<int>(state.range(0)), default_search_schedules());
  q.per_stage_replication = true;
  q.memory_aware_interleaving = true;
  run_search(state, q);
}
BENCHMARK(BM_PlanSearch_AllSchedules)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1);

// Before / after the search's new dimensions, in one run: the same search on a cluster
// whose nodes alternate speed 1.0 and 1.5, with them off (before: every position on
// devices [p r, (p + 1) r), r on every position) and on (after: also placed fastest first
// and slowest first, and a replica count per position). Arg(0) = threads, Arg(1) = on.
void BM_PlanSearch_HeterogeneousPlacement(benchmark::State& state) {
  GptSpec g;
  g.layers = 126;
  g.name = "gpt-128-layers";
  SearchRequest q;
  q.profile = make_gpt_profile(g);
  q.profile_path = "gpt-128.json";
  q.hardware = cluster(64);
  for (int d = 0; d < 64; ++d) q.hardware.speed.push_back((d / 8) % 2 ? 1.5 : 1.0);
  q.devices = 64;
  q.batch = 512;
  q.threads = static_cast<int>(state.range(0));
  q.schedules = kEightSchedules;
  q.place_by_speed = state.range(1) != 0;
  q.per_stage_replication = state.range(1) != 0;
  q.memory_aware_interleaving = state.range(1) != 0;
  SearchResult r;
  for (auto _ : state) {
    r = search_plans(q);
    benchmark::DoNotOptimize(r);
  }
  if (r.candidates.size() != enumerate_candidates(q).size() || r.ranking.empty()) {
    state.SkipWithError("search failed its check");
    return;
  }
  state.counters["candidates"] = static_cast<double>(r.candidates.size());
  state.counters["winner_samples_per_s"] = winner(r).throughput_samples_per_s;
  std::printf("new dimensions %s: winner %s, %.1f samples/s\n", q.place_by_speed ? "on" : "off",
              winner(r).label().c_str(), winner(r).throughput_samples_per_s);
}
BENCHMARK(BM_PlanSearch_HeterogeneousPlacement)
    ->Args({1, 0})->Args({1, 1})->Args({2, 0})->Args({2, 1})
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// The downset partitioner on PipeDream's Inception-v3 (325 layers, 221,565 downsets) and
// NASNet-A large (1,250 layers), K = 8, free links: checked against PipeDream-free facts
// (Inception's exact optimum 91.970 ms), then timed, lattices included.
void BM_DagPartition_PipeDream(benchmark::State& state, const char* model, double expect_ms) {
  const Profile p = load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/pipedream/" + model + ".json");
  const Schedule s = make_schedule({ScheduleKind::OneFOneB, 8, 1, 1, false});
  StageModelSpec spec;
  spec.microbatch_size = p.batch_sizes.front();
  const DagPartition best = graph_optimal_partition(p, Hardware::ideal(8), s, spec);
  if (std::abs(static_cast<double>(best.value) / 1e6 - expect_ms) > 1e-6) {
    state.SkipWithError("downset partition failed its check");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(graph_optimal_partition(p, Hardware::ideal(8), s, spec));
  state.counters["slowest_stage_ms"] = static_cast<double>(best.value) / 1e6;
  state.counters["exact"] = best.exact;
}
BENCHMARK_CAPTURE(BM_DagPartition_PipeDream, inception_v3_K8, "inception_v3", 91.970)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DagPartition_PipeDream, nasnetalarge_K8, "nasnetalarge", 82.390)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipescope

BENCHMARK_MAIN();
