// Simulated ops per second for 1F1B at K in {8, 64}, M in {32, 1024}.
// Verify first: the step must equal the closed form (M + K - 1)(t_f + t_b) for uniform
// stages; then time the simulation alone (schedule built once, outside the loop).
// BM_SampleSteps: step-time distributions (samples/s), 1 and 2 threads.
#include <benchmark/benchmark.h>

#include <stdexcept>

#include "core/schedule.h"
#include "sim/distribution.h"
#include "sim/simulator.h"

using namespace pipescope;

static CostModel uniform(int K) {
  CostModel c;
  for (int s = 0; s < K; ++s) {
    StageCost st;
    st.first_layer = s;
    st.end_layer = s + 1;
    st.forward_ns = 1000;
    st.backward_ns = 2000;
    st.activation_bytes = 1 << 20;
    st.send_bytes = 1 << 16;
    c.stages.push_back(st);
    c.position_device.push_back(s);
    c.position_devices.push_back({s});
  }
  return c;
}

static void BM_Simulate1F1B(benchmark::State& state) {
  const int K = static_cast<int>(state.range(0)), M = static_cast<int>(state.range(1));
  Schedule s = make_1f1b(K, M);
  CostModel c = uniform(K);
  Hardware h = Hardware::ideal(K);
  h.link = {450.0, 5.0};  // NVLink-like: transfers on every boundary, with latency
  SimOptions o;
  o.record_timeline = false;
  StepReport check = simulate(s, c, Hardware::ideal(K), o);
  if (check.step_ns != static_cast<int64_t>(M + K - 1) * 3000) throw std::runtime_error("closed form violated");
  for (auto _ : state) {
    StepReport r = simulate(s, c, h, o);
    benchmark::DoNotOptimize(r.step_ns);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.num_ops()));
  state.counters["ops"] = static_cast<double>(s.num_ops());
}
BENCHMARK(BM_Simulate1F1B)->Args({8, 32})->Args({8, 1024})->Args({64, 32})->Args({64, 1024})
    ->Unit(benchmark::kMillisecond);

static void BM_Simulate1F1BWithTimeline(benchmark::State& state) {
  const int K = static_cast<int>(state.range(0)), M = static_cast<int>(state.range(1));
  Schedule s = make_1f1b(K, M);
  CostModel c = uniform(K);
  Hardware h = Hardware::ideal(K);
  for (auto _ : state) {
    StepReport r = simulate(s, c, h, {});
    benchmark::DoNotOptimize(r.timeline.events.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.num_ops()));
}
BENCHMARK(BM_Simulate1F1BWithTimeline)->Args({64, 1024})->Unit(benchmark::kMillisecond);

// The budget: 1000 samples of K = 8, M = 32 under 0.5 s on 2 cores. Verified
// first: with CV 0 every sample is the deterministic step.
static void BM_SampleSteps(benchmark::State& state) {
  const int K = 8, M = 32;
  Schedule s = make_1f1b(K, M);
  CostModel c = uniform(K);
  Hardware h = Hardware::ideal(K);
  h.link = {450.0, 5.0};
  JitterSpec j;
  j.samples = 8;
  StepDistribution check = sample_steps(s, c, h, j);
  if (check.p99_ns != check.deterministic_ns) throw std::runtime_error("CV 0 must replay the deterministic step");
  j.samples = 1000;
  j.cv = 0.1;
  j.link_cv = 0.1;
  j.threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    StepDistribution d = sample_steps(s, c, h, j);
    benchmark::DoNotOptimize(d.p99_ns);
  }
  state.SetItemsProcessed(state.iterations() * j.samples);  // samples/s
}
BENCHMARK(BM_SampleSteps)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
