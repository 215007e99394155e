// The LLM-scale time model against closed forms: which link each group rings over
// (llm/collectives.h), a layer's FLOPs and what SP and recompute change
// (llm/layer_time.h), and a one-rank step that is the sum of its parts (llm/step_time.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "core/error.h"
#include "core/op_rules.h"
#include "llm/collectives.h"
#include "llm/framework.h"
#include "llm/layer_time.h"
#include "llm/step_time.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

GpuModel a100() { return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/a100-80gb.json"); }

// The flat model (no "gpu.gemm"): 0.45 of 100 TFLOP/s, no wave or k term.
GpuModel flat_gpu() {
  GpuModel g = a100();
  g.flat = true;
  g.gemm = GemmCurve{};
  g.peak_tflops = 100;
  g.memory_efficiency = g.collective_efficiency = 0.45;
  return g;
}

TransformerShape gpt(int layers, int hidden, int heads, int sequence) {
  TransformerShape s;
  s.name = "gpt";
  s.layers = layers, s.hidden = hidden, s.heads = heads, s.sequence = sequence, s.vocabulary = 51200;
  return s;
}

// Korthikanti et al.'s 22B layer: h 6144, a 64, s 2048, at t 8 and b 4.
TransformerShape gpt_22b() { return gpt(48, 6144, 64, 2048); }
ParallelLayout t8_b4() {
  ParallelLayout l;
  l.t = 8, l.micro_batch = 4;
  l.attention = AttentionKernel::Unfused;  // the paper's scores as GEMMs
  return l;
}

std::string error_of(const GpuModel& g, const ParallelLayout& l, Group group) {
  try {
    group_link(g, l, group);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LlmCollectives, MegatronOrderPutsTensorParallelInsideTheNode) {
  const GpuModel g = a100();  // 8 GPUs per node, NVLink 300 GB/s, 25 GB/s per GPU port
  ParallelLayout l;
  l.t = 8, l.d = 4, l.p = 2;
  const GroupLink tp = group_link(g, l, Group::Tp), dp = group_link(g, l, Group::Dp), pp = group_link(g, l, Group::Pp);
  EXPECT_FALSE(tp.crosses_nodes);
  EXPECT_DOUBLE_EQ(tp.ring.bandwidth_gb_per_s, 300.0 * g.collective_efficiency);
  EXPECT_EQ(dp.stride, 8);
  EXPECT_EQ(dp.per_node, 1);  // one rank of each dp group per node: one port
  EXPECT_DOUBLE_EQ(dp.ring.bandwidth_gb_per_s, 25.0 * g.collective_efficiency);
  EXPECT_EQ(pp.stride, 32);
  EXPECT_TRUE(pp.crosses_nodes);
  EXPECT_DOUBLE_EQ(pp.p2p.bandwidth_gb_per_s, 25.0);  // a send runs at the raw port
  // dp first: 2 dp ranks per node, then tp of stride 2 has 4 ranks per node and rings
  // through 4 ports: min(300, 4 x 25) GB/s.
  l.t = 8, l.d = 2, l.p = 1, l.order = "dp-tp-cp-ep-pp";
  EXPECT_FALSE(group_link(g, l, Group::Dp).crosses_nodes);
  const GroupLink tp2 = group_link(g, l, Group::Tp);
  EXPECT_EQ(tp2.per_node, 4);
  EXPECT_DOUBLE_EQ(tp2.ring.bandwidth_gb_per_s, 100.0 * g.collective_efficiency);
}

TEST(LlmCollectives, RingCostsAreOpRulesFormulas) {
  const GpuModel g = a100();
  ParallelLayout l;
  l.t = 8;
  const GroupLink tp = group_link(g, l, Group::Tp);
  const int64_t bytes = 100000000;
  // All-reduce: 2 (n-1)/n of the buffer, 2 (n-1) latencies; all-gather: half of each.
  EXPECT_EQ(allreduce_group_ns(tp, bytes), tp.ring.busy_ns(2 * 7 * bytes / 8) + 14 * tp.ring.latency_ns());
  EXPECT_EQ(allgather_group_ns(tp, bytes), tp.ring.busy_ns(7 * bytes / 8) + 7 * tp.ring.latency_ns());
  EXPECT_EQ(allreduce_group_ns(tp, bytes), allreduce_ns(tp.ring, bytes, 8));
  EXPECT_EQ(alltoall_group_ns(tp, bytes), allgather_group_ns(tp, bytes));
  ParallelLayout one;
  EXPECT_EQ(allreduce_group_ns(group_link(g, one, Group::Tp), bytes), 0);
}

// A data-parallel group of 1024 ranks, one per node (t = 8 fills each node first):
// the ring pays 2 x 1023 network latencies, NCCL's tree 2 x ceil(log2 1024) = 20 but
// moves 2 x the bytes at 0.9 of the bandwidth. Below the crossover
//   S* = (2 (n-1) - 2 log2 N) a / (2 / (0.9 B) - 2 (n-1) / (n B))
// the tree is faster, above it the ring: all-reduce is the faster of the two.
TEST(LlmCollectives, AllReducePicksTheTreeBelowTheCrossoverAndTheRingAbove) {
  const GpuModel g = a100();
  ParallelLayout l;
  l.t = 8, l.d = 1024;
  const GroupLink dp = group_link(g, l, Group::Dp);
  ASSERT_TRUE(dp.crosses_nodes);
  EXPECT_EQ(dp.per_node, 1);
  EXPECT_EQ(dp.nodes, 1024);
  const double a = dp.ring.latency_ns(), b = dp.ring.bandwidth_gb_per_s;  // ns, bytes per ns
  const double n = 1024;
  const double crossover = (2 * (n - 1) - 2 * 10) * a / (2 / (0.9 * b) - 2 * (n - 1) / (n * b));
  const auto below = static_cast<int64_t>(crossover / 2), above = static_cast<int64_t>(crossover * 2);
  EXPECT_EQ(allreduce_algorithm(dp, below), CollectiveAlgorithm::Tree);
  EXPECT_EQ(allreduce_algorithm(dp, above), CollectiveAlgorithm::Ring);
  Link tree = dp.ring;
  tree.bandwidth_gb_per_s *= 0.9;
  EXPECT_EQ(tree_allreduce_group_ns(dp, below), tree.busy_ns(2 * below) + 2 * 10 * dp.ring.latency_ns());
  EXPECT_EQ(allreduce_group_ns(dp, below), tree_allreduce_group_ns(dp, below));
  EXPECT_EQ(allreduce_group_ns(dp, above), ring_allreduce_group_ns(dp, above));
  EXPECT_EQ(ring_allreduce_group_ns(dp, above), allreduce_ns(dp.ring, above, 1024));
  // Two ranks per node (t = 4): each node's pair is a chain over NVLink, 512 nodes a tree.
  l.t = 4;
  const GroupLink dp2 = group_link(g, l, Group::Dp);
  EXPECT_EQ(dp2.per_node, 2);
  EXPECT_EQ(dp2.nodes, 512);
  Link tree2 = dp2.ring;
  tree2.bandwidth_gb_per_s *= 0.9;
  EXPECT_EQ(tree_allreduce_group_ns(dp2, 1000000),
            tree2.busy_ns(2000000) + 2 * (g.node.link.latency_ns() + 9 * dp2.ring.latency_ns()));
}

// Inside one node NCCL's all-reduce is the ring (no tree; NVLS is not modelled).
TEST(LlmCollectives, AllReduceInsideANodeIsTheRing) {
  const GpuModel g = a100();
  ParallelLayout l;
  l.t = 8;
  const GroupLink tp = group_link(g, l, Group::Tp);
  EXPECT_EQ(tree_allreduce_group_ns(tp, 1000), -1);
  for (int64_t bytes : {int64_t{1}, int64_t{1} << 20, int64_t{1} << 34}) {
    EXPECT_EQ(allreduce_algorithm(tp, bytes), CollectiveAlgorithm::Ring);
    EXPECT_EQ(allreduce_group_ns(tp, bytes), ring_allreduce_group_ns(tp, bytes));
  }
}

// Over random groups and sizes: the all-reduce is never slower than either algorithm.
TEST(LlmCollectives, AllReduceIsTheMinimumOfRingAndTree) {
  const GpuModel g = a100();
  std::mt19937 rng(28);
  for (int i = 0; i < 500; ++i) {
    ParallelLayout l;
    l.t = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    l.d = 1 << std::uniform_int_distribution<int>(0, 12)(rng);
    const int64_t bytes = int64_t{1} << std::uniform_int_distribution<int>(0, 36)(rng);
    const GroupLink dp = group_link(g, l, Group::Dp);
    const int64_t ring = ring_allreduce_group_ns(dp, bytes), tree = tree_allreduce_group_ns(dp, bytes);
    EXPECT_EQ(tree >= 0, dp.crosses_nodes);
    EXPECT_EQ(allreduce_group_ns(dp, bytes), tree >= 0 ? std::min(ring, tree) : ring) << l.t << " " << l.d;
  }
}

TEST(LlmCollectives, BadOrderNamesTheField) {
  const GpuModel g = a100();
  ParallelLayout l;
  l.order = "tp-cp-dp-pp";
  EXPECT_NE(error_of(g, l, Group::Tp).find("order"), std::string::npos);
  l.order = "tp-tp-cp-dp-pp";
  EXPECT_NE(error_of(g, l, Group::Tp).find("named twice"), std::string::npos);
  l.order = "tp-cp-ep-xp-pp";
  EXPECT_NE(error_of(g, l, Group::Tp).find("\"xp\""), std::string::npos);
}

// Narayanan et al. (SC 2021) eq. 3 per layer: 24 b s h^2 + 4 b s^2 h forward FLOPs,
// twice that backward, split t ways; over random shapes.
TEST(LlmLayerTime, FlopsAreTheClosedFormOverRandomShapes) {
  std::mt19937 rng(20220510);
  const GpuModel g = flat_gpu();
  for (int trial = 0; trial < 50; ++trial) {
    const int t = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    const int heads = t * std::uniform_int_distribution<int>(1, 8)(rng);
    const int hidden = heads * 64 * std::uniform_int_distribution<int>(1, 2)(rng);
    const int s = 256 * std::uniform_int_distribution<int>(1, 8)(rng);
    ParallelLayout l;
    l.t = t, l.micro_batch = std::uniform_int_distribution<int>(1, 4)(rng);
    const double b = l.micro_batch, h = hidden;
    const double expected = 3.0 * (24.0 * b * s * h * h + 4.0 * b * s * s * h);
    const LayerTime x = transformer_layer_time(gpt(4, hidden, heads, s), l, g);
    EXPECT_DOUBLE_EQ(x.model_flops * t, expected) << "seed 20220510 trial " << trial << " t " << t;
  }
}

// --kv-channels c (head dimension) other than h / a widens the query, key and value
// projections to a c, kv c, kv c and the output projection's input to a c, as Megatron's
// query_projection_size = kv_channels x heads does; the attention core's GEMMs run at c.
// Going from c0 = h / a to c adds, per layer and micro-batch of m = b s tokens (t = 1):
//   parameters  h (a + 2 kv) (c - c0) + h a (c - c0) + (a + 2 kv) (c - c0) (the QKV bias: GPT's biases)
//   FLOPs       3 x 2 m x that  +  3 x 2 x 2 b a s s (c - c0)   (forward + 2 x backward)
TEST(LlmLayerTime, KvChannelsWidensTheAttentionProjectionsAndCore) {
  const GpuModel g = flat_gpu();
  TransformerShape s = gpt(2, 4096, 32, 2048);
  s.kv_heads = 8;
  ParallelLayout l;
  l.micro_batch = 2;
  const LayerTime base = transformer_layer_time(s, l, g);
  s.kv_channels = 256;  // c0 = 128
  const LayerTime wide = transformer_layer_time(s, l, g);
  const int64_t h = 4096, a = 32, kv = 8, dc = 128, m = 2 * 2048;
  ASSERT_TRUE(s.bias_linear);
  EXPECT_EQ(wide.parameters - base.parameters, h * (a + 2 * kv) * dc + h * a * dc + (a + 2 * kv) * dc);
  EXPECT_DOUBLE_EQ(wide.model_flops - base.model_flops,
                   3.0 * 2 * m * (h * (a + 2 * kv) * dc + h * a * dc) + 3.0 * 2 * 2 * 2 * a * 2048.0 * 2048 * dc);
  EXPECT_GT(wide.forward_ns, base.forward_ns);
}

TEST(LlmLayerTime, RecomputeAddsTheForwardOrTheAttentionCore) {
  const GpuModel g = a100();
  const TransformerShape shape = gpt_22b();
  ParallelLayout l = t8_b4();
  const LayerTime none = transformer_layer_time(shape, l, g);
  l.recompute = Recompute::Full;
  const LayerTime full = transformer_layer_time(shape, l, g);
  EXPECT_EQ(full.input_grad_ns - none.input_grad_ns, none.forward_ns);
  EXPECT_EQ(full.recompute_ns, none.forward_ns);
  EXPECT_EQ(full.weight_grad_ns, none.weight_grad_ns);
  l.recompute = Recompute::Selective;
  const LayerTime sel = transformer_layer_time(shape, l, g);
  // Scores (Q K^T) and attention over V, batched over b a / t = 32, and 9 bytes per score.
  const int64_t core = gemm_ns(g, {2048, 2048, 96, 32}) + gemm_ns(g, {2048, 96, 2048, 32}) +
                       memory_ns(g, 9.0 * 32 * 2048 * 2048);
  EXPECT_EQ(sel.recompute_ns, core);
  EXPECT_EQ(sel.input_grad_ns - none.input_grad_ns, core);
}

TEST(LlmLayerTime, SequenceParallelSplitsTheTokenWiseOpsAndKeepsTheBytes) {
  const GpuModel g = a100();
  const TransformerShape shape = gpt_22b();
  ParallelLayout l = t8_b4();
  const LayerTime tp = transformer_layer_time(shape, l, g);
  l.sequence_parallel = true;
  const LayerTime sp = transformer_layer_time(shape, l, g);
  // RoPE reads and writes each query and key element of the rank's heads (4 bytes each).
  const double mh = 4.0 * 2048 * 6144, gelu = 4.0 * 4 * 2048 * 4 * 6144 / 8, rope = 4.0 * 4 * 2048 * (64 + 64) * 96 / 8;
  EXPECT_EQ(tp.forward_memory_ns, memory_ns(g, 22.0 * mh + gelu + rope));
  EXPECT_EQ(sp.forward_memory_ns, memory_ns(g, 22.0 * mh / 8 + gelu + rope));
  // No SP: 2 all-reduces of the b s h bf16 activations; SP: 2 all-gathers + 2
  // reduce-scatters of the same buffer, which a ring sends as the same bytes.
  const GroupLink link = group_link(g, l, Group::Tp);
  const int64_t bytes = 4LL * 2048 * 6144 * 2;
  EXPECT_EQ(tp.forward_comm_ns, 2 * allreduce_group_ns(link, bytes));
  EXPECT_EQ(sp.forward_comm_ns, 4 * allgather_group_ns(link, bytes));
  EXPECT_EQ(sp.forward_gemm_ns, tp.forward_gemm_ns);
}

TEST(LlmLayerTime, ExpertParallelAddsTwoAllToAllsEachWay) {
  const GpuModel g = a100();
  TransformerShape shape = gpt(8, 4096, 32, 4096);
  shape.experts = 8, shape.moe_topk = 2;
  ParallelLayout l;
  l.t = 2, l.d = 4, l.ep = 4, l.micro_batch = 1;
  const LayerTime moe = transformer_layer_time(shape, l, g, true);
  l.ep = 1;
  const LayerTime local = transformer_layer_time(shape, l, g, true);
  l.ep = 4;
  // Dispatch and combine of s b topk tokens of h bf16 over the ep group (ranks 2 apart).
  const int64_t a2a = alltoall_group_ns(group_link(g, l, Group::Ep), 4096LL * 2 * 4096 * 2);
  EXPECT_EQ(moe.forward_comm_ns - local.forward_comm_ns, 2 * a2a);
  EXPECT_EQ(moe.backward_comm_exposed_ns - local.backward_comm_exposed_ns, 2 * a2a);
  // The routed MLP runs topk experts' GEMMs per token: 2 x the dense MLP's FLOPs here.
  const LayerTime dense = transformer_layer_time(shape, l, g, false);
  const double b = 1, s = 4096, h = 4096;
  const double mlp = 3.0 * 16.0 * b * s * h * h / 2;  // per GPU at t = 2
  EXPECT_NEAR(moe.model_flops - dense.model_flops, mlp + 3.0 * 2 * s * 8 * h, 1.0);
}

TEST(LlmStepTime, OneRankStepIsTheSumOfItsLayers) {
  const GpuModel g = a100();
  const TransformerShape shape = gpt(8, 2048, 16, 2048);
  ParallelLayout l;
  l.t = 8, l.micro_batch = 2, l.microbatches = 3;
  const StepTime st = step_time(shape, l, g);
  // One pipeline rank: M x (embedding + L layers + head) F and B back to back, then Adam
  // over every parameter; each op's time passes through the profile in ms (+-1 ns).
  const int64_t per_mb = st.embedding.total_ns() + 8 * st.layer.total_ns() + st.head.total_ns();
  const int64_t params = st.embedding.parameters + 8 * st.layer.parameters + st.head.parameters;
  const int64_t opt = optimizer_step_ns(g, st.embedding.parameters) + 8 * optimizer_step_ns(g, st.layer.parameters) +
                      optimizer_step_ns(g, st.head.parameters);
  EXPECT_NEAR(static_cast<double>(st.step_ns), static_cast<double>(3 * per_mb + opt), 3 * 30 + 10);
  EXPECT_NEAR(static_cast<double>(st.optimizer_ns), static_cast<double>(optimizer_step_ns(g, params)), 12);
  EXPECT_EQ(st.dp_exposed_ns, 0);
  EXPECT_GT(st.mfu, 0.0);
  EXPECT_LT(st.mfu, 1.0);
}

TEST(LlmStepTime, InterleavingShrinksTheBubble) {
  const GpuModel g = a100();
  const TransformerShape shape = gpt(16, 4096, 32, 2048);
  ParallelLayout l;
  l.t = 8, l.p = 4, l.microbatches = 8, l.sequence_parallel = true;
  const StepTime one = step_time(shape, l, g);
  l.v = 2;
  const StepTime two = step_time(shape, l, g);
  EXPECT_EQ(one.schedule, "1f1b");
  EXPECT_EQ(two.schedule, "interleaved");
  // Megatron's bubble (p - 1) / (v M): 3/8 of a step's work with v = 1, 3/16 with v = 2.
  EXPECT_LT(two.bubble, one.bubble);
  EXPECT_LT(two.step_ns, one.step_ns);
}

TEST(LlmStepTime, DataParallelTailIsReduceScatterPlusAllGather) {
  const GpuModel g = a100();
  const TransformerShape shape = gpt(8, 2048, 16, 2048);
  ParallelLayout l;
  l.t = 8, l.d = 4, l.microbatches = 4, l.sharding = Sharding::DistributedOptimizer;
  const StepTime st = step_time(shape, l, g);
  const int64_t params = st.embedding.parameters + 8 * st.layer.parameters + st.head.parameters;
  const GroupLink dp = group_link(g, l, Group::Dp);
  // fp32 gradients reduce-scattered, bf16 parameters all-gathered, neither overlapped.
  EXPECT_NEAR(static_cast<double>(st.dp_exposed_ns),
              static_cast<double>(reduce_scatter_group_ns(dp, params * 4) + allgather_group_ns(dp, params * 2)), 4);
  const StepTime overlapped = step_time(shape, l, g, {.overlap_grad_reduce = true, .overlap_param_gather = true});
  EXPECT_LT(overlapped.dp_exposed_ns, st.dp_exposed_ns);
}

// ZeRO-3 keeps its updated parameters sharded: the tail is the gradient reduce-scatter
// alone (its gathers are the 2 M before each forward and backward, counted by the search).
TEST(LlmStepTime, ZeroThreeTailHasNoParameterGather) {
  const GpuModel g = a100();
  const TransformerShape shape = gpt(8, 2048, 16, 2048);
  ParallelLayout l;
  l.t = 8, l.d = 4, l.microbatches = 4, l.sharding = Sharding::Zero3;
  const StepTime st = step_time(shape, l, g);
  const int64_t params = st.embedding.parameters + 8 * st.layer.parameters + st.head.parameters;
  EXPECT_NEAR(static_cast<double>(st.dp_exposed_ns),
              static_cast<double>(reduce_scatter_group_ns(group_link(g, l, Group::Dp), params * 4)), 4);
}

// What each framework overlaps (llm/framework.h): Megatron-LM only what is asked, the
// gather only under the distributed optimizer; torch always (DDP buckets, FSDP2 hooks and
// prefetch); DeepSpeed the reduce when asked, both under ZeRO-3 (overlap_comm's default).
TEST(LlmFramework, DataParallelOverlapIsWhatTheFrameworkDoes) {
  struct Row {
    Framework f;
    Sharding s;
    bool ask_grad, ask_gather, grad, gather;
  };
  const Row rows[] = {
      {Framework::Megatron, Sharding::None, false, false, false, false},
      {Framework::Megatron, Sharding::None, true, true, true, false},
      {Framework::Megatron, Sharding::DistributedOptimizer, true, true, true, true},
      {Framework::Megatron, Sharding::DistributedOptimizer, false, true, false, true},
      {Framework::Torch, Sharding::None, false, false, true, false},
      {Framework::Torch, Sharding::Zero2, false, false, true, true},
      {Framework::Torch, Sharding::Zero3, false, false, true, true},
      {Framework::DeepSpeed, Sharding::DistributedOptimizer, false, false, false, false},
      {Framework::DeepSpeed, Sharding::DistributedOptimizer, true, true, true, false},
      {Framework::DeepSpeed, Sharding::Zero2, true, false, true, false},
      {Framework::DeepSpeed, Sharding::Zero3, false, false, true, true},
  };
  for (const Row& r : rows) {
    ParallelLayout l;
    l.sharding = r.s;
    set_framework_overlap(r.f, r.ask_grad, r.ask_gather, l);
    const std::string what = to_string(r.f) + " " + to_string(r.s);
    EXPECT_EQ(l.overlap_grad_reduce, r.grad) << what;
    EXPECT_EQ(l.overlap_param_gather, r.gather) << what;
    // Asking for a gather the framework cannot overlap is what param_gather_refusal names.
    if (r.ask_gather) {
      EXPECT_EQ(param_gather_refusal(r.f, r.s).empty(), l.overlap_param_gather) << what;
    }
  }
}

TEST(LlmStepTime, LayersThatDoNotFillTheChunksNameTheFlag) {
  const GpuModel g = a100();
  ParallelLayout l;
  l.p = 4, l.microbatches = 8;
  try {
    step_time(gpt(10, 1024, 16, 1024), l, g);
    FAIL() << "10 layers on 4 ranks accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--num-layers"), std::string::npos) << e.what();
  }
  l.v = 2, l.microbatches = 6;
  try {
    step_time(gpt(16, 1024, 16, 1024), l, g);
    FAIL() << "interleaved with M = 6 on p = 4 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--global-batch-size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope
