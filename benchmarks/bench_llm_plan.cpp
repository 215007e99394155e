// The LLM-scale layout search (llm/layout_search.h) on Llama-3-405B's shape (126 layers,
// h 16384, 128 heads, 8 KV groups, FFN 53248, SwiGLU, RMSNorm, V 128256, s 8192,
// untied) over 16,384 H100s (profiles/gpus/h100-sxm.json) with a global batch of 2048
// sequences, for each framework. Target: under 2 s wall each on the 2-core machine (issue
// #37; docs/llm-scale.md has the last measurement). Each case first checks its answer: the
// best layout uses every GPU, keeps the global batch, fits in 80 GB and (Megatron, torch)
// keeps its TP group inside a node; the counters report what the search did.
//   build/bin/bench_llm_plan [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <string>

#include "llm/collectives.h"
#include "llm/layout_search.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

TransformerShape llama3_405b() {
  TransformerShape s;
  s.name = "llama-3-405b";
  s.layers = 126, s.hidden = 16384, s.heads = 128, s.kv_heads = 8, s.ffn_hidden = 53248;
  s.swiglu = true, s.rms_norm = true, s.bias_linear = false, s.tied_embeddings = false;
  s.vocabulary = 128256, s.sequence = 8192;
  return s;
}

void BM_LlmPlan_Llama405b_16384H100(benchmark::State& state, Framework framework) {
  const GpuModel gpu = load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json");
  LlmSearchRequest q;
  q.shape = llama3_405b(), q.gpus = 16384, q.global_batch = 2048, q.framework = framework;
  LlmSearchResult r;
  for (auto _ : state) {
    r = search_layouts(q, gpu);
    benchmark::DoNotOptimize(r.best.data());
  }
  const ParallelLayout& l = r.best.front().layout;
  // DeepSpeed has neither SP nor ring CP: its best may take t = 16 across two nodes.
  const bool tp_in_node = framework == Framework::DeepSpeed || !group_link(gpu, l, Group::Tp).crosses_nodes;
  if (l.gpus() != 16384 || l.global_batch() != 2048 || r.best.front().peak_bytes > 80e9 || !tp_in_node) {
    state.SkipWithError("the best layout failed its check");
    return;
  }
  state.counters["factorizations"] = static_cast<double>(r.factorizations);
  state.counters["enumerated"] = static_cast<double>(r.enumerated);
  state.counters["valid"] = static_cast<double>(r.valid);
  state.counters["fitting"] = static_cast<double>(r.fitting);
  state.counters["simulated"] = static_cast<double>(r.simulated);
  state.counters["step_s"] = static_cast<double>(r.best.front().step_ns) / 1e9;
  state.SetLabel(layout_summary(l));
}
BENCHMARK_CAPTURE(BM_LlmPlan_Llama405b_16384H100, megatron, Framework::Megatron)
    ->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_LlmPlan_Llama405b_16384H100, torch, Framework::Torch)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_LlmPlan_Llama405b_16384H100, deepspeed, Framework::DeepSpeed)
    ->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace pipescope

BENCHMARK_MAIN();
