// zb-auto's search at the size: K = 32 devices, M = 256 micro-batches, the
// issue's per-op times (T_F 18.5, T_B 18.1, T_W 9.3 ms, 0.6 ms hops). It first checks
// the result against its references (valid, at most N alive, never longer than zb-h2's
// span at N >= 2K-1), then times one search per iteration, at N = 2K-1 and 2K. Target:
// < 1 s on one core.
//   build/bin/bench_zero_bubble
#include <benchmark/benchmark.h>

#include <cstdio>
#include <stdexcept>

#include "experiments/schedule_table.h"
#include "planner/zero_bubble_search.h"
#include "sim/simulator.h"
#include "sim/stage_span.h"

namespace pipescope {
namespace {

void BM_ZeroBubbleSearch(benchmark::State& state) {
  const int K = static_cast<int>(state.range(0)), M = static_cast<int>(state.range(1));
  const int N = static_cast<int>(state.range(2));  // 2K-1 (zb-h2's cap) or 2K
  TableSetting t{K, M, 18.5, 18.1, 9.3, 0.6};
  const Schedule reference = make_zb_h2(K, M);
  const CostModel costs = table_costs(reference, t);
  const Hardware hw = table_hardware(t);
  ZeroBubbleSearchReport report;
  const Schedule s = search_zero_bubble(costs, hw, N, M, &report);
  validate_schedule(s);
  SimOptions o;
  const int64_t zb_h2 = longest_span(simulate(reference, costs, hw, o));
  if (max_alive_microbatches(s) > N || report.span_ns > zb_h2) throw std::runtime_error("zb-auto worse than zb-h2");
  std::printf("K=%d M=%d N=%d: span %.1f ms, bound %.1f ms (+%.1f%%), cap bound %.1f ms, zb-h2 %.1f ms, %d simulations, "
              "%d order moves, from %s\n",
              K, M, N, report.span_ns / 1e6, report.bound_ns / 1e6,
              100.0 * (report.span_ns - report.bound_ns) / report.bound_ns, report.cap_bound_ns / 1e6, zb_h2 / 1e6,
              report.evaluations, report.order_moves, report.start.c_str());
  for (auto _ : state) benchmark::DoNotOptimize(search_zero_bubble(costs, hw, N, M));
  state.counters["simulations"] = report.evaluations;
}
BENCHMARK(BM_ZeroBubbleSearch)
    ->Args({32, 256, 63})->Args({32, 256, 64})->Args({8, 24, 15})->Args({8, 24, 16})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipescope

BENCHMARK_MAIN();
