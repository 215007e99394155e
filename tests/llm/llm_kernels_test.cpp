// Today's kernels in the time and memory model, each against its closed form: fused
// attention's FLOPs, curve and bytes (llm/layer_time.h, llm/memory.h), fp8 linears at
// their class's peak with their casts, the TP overlap, eager against fused elementwise
// ops, torchtitan's per-op selective recompute, and the d x cp gradient group
// (llm/collectives.h). Random shapes are seeded and the seed printed on failure.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "core/error.h"
#include "llm/collectives.h"
#include "llm/gpu_model.h"
#include "llm/layer_time.h"
#include "llm/job.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/step_time.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

GpuModel h100() { return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"); }

TransformerShape llama(int layers, int hidden, int heads, int kv, int ffn, int sequence) {
  TransformerShape s;
  s.name = "llama";
  s.layers = layers, s.hidden = hidden, s.heads = heads, s.kv_heads = kv, s.ffn_hidden = ffn;
  s.sequence = sequence, s.vocabulary = 128256, s.swiglu = true, s.rms_norm = true, s.bias_linear = false;
  s.tied_embeddings = false;
  return s;
}

TransformerShape llama8b(int sequence) { return llama(32, 4096, 32, 8, 14336, sequence); }

int64_t ns(double seconds) { return static_cast<int64_t>(std::ceil(seconds * 1e9)); }

// Flash attention's forward is one kernel over the causal half: 4 b (a / t) hd s^2 / 2
// FLOPs at the file's forward efficiency x s / (s + seq_half); unfused runs the whole
// square as GEMMs. So at one layout the two layers differ exactly by the attention core.
TEST(LlmKernels, FlashForwardIsTheCausalHalfAtTheKernelsCurve) {
  const GpuModel g = h100();
  ParallelLayout l;
  l.micro_batch = 2;
  for (int s : {2048, 8192, 32768}) {
    const TransformerShape shape = llama8b(s);
    const double flops = 4.0 * 2 * 32 * 128 * static_cast<double>(s) * s / 2;
    const double e = g.flash.forward_efficiency * s / (s + g.flash.seq_half);
    EXPECT_EQ(flash_attention_ns(g, flops, s, false), ns(flops / (g.peak_tflops * 1e12 * e))) << "s " << s;
    ParallelLayout unfused = l;
    unfused.attention = AttentionKernel::Unfused;
    const LayerTime f = transformer_layer_time(shape, l, g), u = transformer_layer_time(shape, unfused, g);
    // The linears are the same GEMMs under either kernel: the difference is the core alone,
    // Korthikanti's Q K^T and context GEMMs with 9 bytes per score of softmax and dropout.
    const int64_t batch = 2 * 32;
    const int64_t unfused_core = gemm_ns(g, {s, s, 128, batch}) + gemm_ns(g, {s, 128, s, batch}) +
                                 memory_ns(g, 9.0 * static_cast<double>(batch) * s * s);
    EXPECT_EQ(f.forward_gemm_ns - flash_attention_ns(g, flops, s, false), u.forward_gemm_ns - unfused_core) << "s " << s;
    EXPECT_LT(f.forward_ns, u.forward_ns) << "s " << s;
    // Model FLOPs (MFU) keep Megatron's whole square whatever the kernel.
    EXPECT_DOUBLE_EQ(f.model_flops, u.model_flops);
  }
}

// The backward runs five GEMMs where the forward runs two (the scores recomputed): 2.5 x
// the forward's FLOPs at the backward efficiency.
TEST(LlmKernels, FlashBackwardIsTwoAndAHalfForwardsAtItsOwnEfficiency) {
  const GpuModel g = h100();
  const double flops = 1e12;
  const int64_t s = 8192;
  const double curve = static_cast<double>(s) / (s + g.flash.seq_half);
  EXPECT_EQ(flash_attention_ns(g, 2.5 * flops, s, true),
            ns(2.5 * flops / (g.peak_tflops * 1e12 * g.flash.backward_efficiency * curve)));
}

// Korthikanti et al.'s Table 2 keeps 5 a s^2 b bytes of scores per layer without recompute;
// a fused kernel keeps one fp32 log-sum-exp per head and query instead. Over random shapes
// the two counts differ by exactly that.
TEST(LlmKernels, FlashKeepsNoScores) {
  const unsigned seed = 20261208;
  std::mt19937 rng(seed);
  for (int i = 0; i < 200; ++i) {
    const int heads = 8 << (rng() % 4), hd = 64 << (rng() % 2), s = 512 << (rng() % 7);
    TransformerShape shape = llama(4, heads * hd, heads, heads, 4 * heads * hd, s);
    ParallelLayout l;
    l.t = 1 << (rng() % 3), l.cp = 1 << (rng() % 2), l.micro_batch = 1 + static_cast<int>(rng() % 4);
    l.sequence_parallel = l.t > 1 && rng() % 2;
    ParallelLayout u = l;
    u.attention = AttentionKernel::Unfused;
    const double sl = static_cast<double>(s) / l.cp, b = l.micro_batch;
    const double expected = 5.0 * heads * sl * sl * b / l.t - 4.0 * heads * sl * b / l.t;
    EXPECT_NEAR(layer_activation_bytes(shape, u) - layer_activation_bytes(shape, l), expected, 1e-6 * expected)
        << "seed " << seed << " case " << i;
  }
}

// An fp8 linear runs at the fp8 peak x its class's efficiency (the wave and k terms as
// bf16's) on 1-byte operands: a large square GEMM is exactly peak ratio x efficiency ratio
// faster, rounding aside.
TEST(LlmKernels, Fp8GemmRunsAtItsClassPeak) {
  const GpuModel g = h100();
  const GemmShape big{16384, 16384, 16384};
  const double bf16 = static_cast<double>(gemm_ns(g, big)), fp8 = static_cast<double>(gemm_ns(g, big, GemmClass::Fp8TensorScaled));
  const double ratio = (g.peak_dense_tflops.at("fp8") * g.fp8_tensor_efficiency) / (g.peak_tflops * g.gemm.max_efficiency);
  EXPECT_NEAR(bf16 / fp8, ratio, 1e-6 * ratio);
  // A GPU file without the class refuses it, naming the file and the field.
  GpuModel a100 = load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/a100-80gb.json");
  try {
    gemm_ns(a100, big, GemmClass::Fp8RowScaled);
    FAIL() << "A100 has no fp8 GEMM";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a100-80gb.json: gpu.gemm_fp8.row_scaled"), std::string::npos) << e.what();
  }
}

// The casts of a recipe move cast_bytes per element of x, W and dy over a linear's three
// GEMMs: delayed (4) and tensorwise (8) share a GEMM class and differ only by their casts.
TEST(LlmKernels, Fp8RecipesDifferByTheirCasts) {
  const GpuModel g = h100();
  const TransformerShape shape = llama8b(8192);
  ParallelLayout l;
  l.micro_batch = 2;
  auto at = [&](Fp8Recipe r) {
    ParallelLayout x = l;
    x.fp8 = r;
    return transformer_layer_time(shape, x, g);
  };
  const LayerTime bf16 = at(Fp8Recipe::None), delayed = at(Fp8Recipe::Delayed), tensorwise = at(Fp8Recipe::Tensorwise);
  EXPECT_LT(delayed.total_ns(), tensorwise.total_ns());  // same GEMM class, half the cast bytes
  EXPECT_LT(tensorwise.total_ns(), bf16.total_ns());     // fp8 pays for its casts on an 8B layer
  EXPECT_EQ(fp8_recipe_info(Fp8Recipe::Delayed).gemm, fp8_recipe_info(Fp8Recipe::Tensorwise).gemm);
  EXPECT_DOUBLE_EQ(fp8_recipe_info(Fp8Recipe::Tensorwise).cast_bytes, 8.0);
}

// --tp-comm-overlap hides each TP collective behind the GEMM it feeds: never slower than
// the exposed collectives, and with t = 8 on NVLink strictly faster.
TEST(LlmKernels, TensorParallelOverlapHidesCollectivesBehindGemms) {
  const GpuModel g = h100();
  const TransformerShape shape = llama8b(8192);
  ParallelLayout l;
  l.t = 8, l.sequence_parallel = true, l.micro_batch = 4;
  ParallelLayout o = l;
  o.tp_comm_overlap = true;
  const LayerTime plain = transformer_layer_time(shape, l, g), overlapped = transformer_layer_time(shape, o, g);
  EXPECT_LT(overlapped.forward_comm_ns, plain.forward_comm_ns);
  EXPECT_LE(overlapped.backward_comm_exposed_ns, plain.backward_comm_exposed_ns);
  EXPECT_EQ(overlapped.forward_gemm_ns, plain.forward_gemm_ns);
}

// Eager PyTorch moves more bytes than fused kernels (torchtitan's RMSNorm 36 vs 4 per element
// forward, RoPE 20 vs 4, SwiGLU 10 vs 6, the residual add 6 vs a bias-dropout-add's 7): at
// one layout the forward's memory-bound time grows by exactly that.
TEST(LlmKernels, EagerElementwiseMovesTheBytesOfEachOp) {
  GpuModel g = h100();
  const TransformerShape shape = llama8b(4096);
  ParallelLayout l;
  l.micro_batch = 1;
  ParallelLayout eager = l;
  eager.fused_elementwise = false;
  const double token = 4096.0 * 4096, act = 4096.0 * 14336, rope = 4096.0 * (32 + 8) * 128;
  const double fused = 22 * token + 6 * act + 4 * rope, unfused = (2 * 36 + 2 * 6) * token + 10 * act + 20 * rope;
  EXPECT_EQ(transformer_layer_time(shape, l, g).forward_memory_ns, memory_ns(g, fused));
  EXPECT_EQ(transformer_layer_time(shape, eager, g).forward_memory_ns, memory_ns(g, unfused));
}

// torchtitan's per-op selective recompute re-runs k's share of QKV, the output projection,
// w3 and the elementwise forward; Megatron's re-runs the attention core. validate_job sets
// the policy from the framework.
TEST(LlmKernels, SelectiveRecomputeIsTheFrameworks) {
  const GpuModel g = h100();
  const TransformerShape shape = llama8b(8192);
  ParallelLayout l;
  l.micro_batch = 2, l.d = 8, l.recompute = Recompute::Selective;
  auto validated = [&](Framework f) {
    Job job;
    job.shape = shape, job.layout = l, job.framework = f, job.cluster = {"h100-sxm", 8};
    validate_job(job, 8);
    return job.layout;
  };
  const ParallelLayout megatron = validated(Framework::Megatron), torch = validated(Framework::Torch);
  EXPECT_EQ(megatron.selective, SelectivePolicy::CoreAttention);
  EXPECT_EQ(torch.selective, SelectivePolicy::EveryOtherMatmul);
  const LayerTime m = transformer_layer_time(shape, megatron, g), t = transformer_layer_time(shape, torch, g);
  ParallelLayout none = megatron;
  none.recompute = Recompute::None;
  const LayerTime n = transformer_layer_time(shape, none, g);
  const double core = 4.0 * 2 * 32 * 128 * 8192.0 * 8192 / 2;  // b 2, a 32, hd 128, s 8192, the causal half
  EXPECT_EQ(m.recompute_ns, flash_attention_ns(g, core, 8192, false));
  EXPECT_GT(t.recompute_ns, m.recompute_ns);  // three matmuls of an 8B layer outweigh its attention at 8k
  EXPECT_LT(t.recompute_ns, n.forward_ns);
  // And it keeps less than Megatron's selective stash.
  EXPECT_LT(layer_activation_bytes(shape, torch), layer_activation_bytes(shape, megatron));
}

// The context-parallel ranks hold the same weights: the gradient group is d x cp, so a
// layout of d = 1 and cp = 8 under ZeRO-3 still all-gathers and reduce-scatters over 8 ranks.
TEST(LlmKernels, GradientGroupSpansContextParallelRanks) {
  const GpuModel g = h100();
  ParallelLayout l;
  l.cp = 8, l.d = 1, l.sharding = Sharding::Zero3;
  const GroupLink group = gradient_group_link(g, l);
  EXPECT_EQ(group.size, 8);
  EXPECT_FALSE(group.crosses_nodes);
  EXPECT_GT(sharding_extra_ns(g, l, 1'000'000'000, 0, 0, 0, {}, 32), 0);
  EXPECT_EQ(sharded_parameters(800, l), 100);
  l.cp = 1;
  EXPECT_EQ(sharding_extra_ns(g, l, 1'000'000'000, 0, 0, 0, {}, 32), 0);  // d x cp = 1: nothing to shard
}

// NCCL's ring latency: of a ring's n - 1 steps, the nodes - 1 that cross nodes pay the
// network's latency, the rest NVLink's (src/graph/tuning.cc).
TEST(LlmKernels, RingLatencyCountsNetworkStepsAsNcclDoes) {
  const GpuModel g = h100();
  ParallelLayout l;
  l.d = 64;
  const GroupLink dp = group_link(g, l, Group::Dp);  // 8 nodes of 8
  ASSERT_TRUE(dp.crosses_nodes);
  ASSERT_EQ(dp.nodes, 8);
  const int64_t expected = dp.ring.busy_ns(63) + 7 * dp.ring.latency_ns() + 56 * dp.in_node.latency_ns();
  EXPECT_EQ(allgather_group_ns(dp, 64), expected);
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

GpuModel bundled(const std::string& name) {
  return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/" + name + ".json");
}

// GPU files without published runs derive their curves from H100's fit by the rules their
// "sources" state (docs/llm-scale.md): H200 (the same GH100 chip and clocks) and B200 (no
// fitted Blackwell run: H100's fractions of its own peaks) carry H100's fitted fractions;
// A100 and MI300X carry H100's flash / GEMM ratio on their own GEMM efficiency.
TEST(GpuFiles, DerivedCurvesFollowTheirStatedRule) {
  const GpuModel h100 = bundled("h100-sxm");
  for (const char* name : {"h200", "b200"}) {
    const GpuModel g = bundled(name);
    EXPECT_EQ(g.gemm.max_efficiency, h100.gemm.max_efficiency) << name;
    EXPECT_EQ(g.gemm.k_half, h100.gemm.k_half) << name;
    EXPECT_EQ(g.fp8_tensor_efficiency, h100.fp8_tensor_efficiency) << name;
    EXPECT_EQ(g.flash.forward_efficiency, h100.flash.forward_efficiency) << name;
    EXPECT_EQ(g.flash.backward_efficiency, h100.flash.backward_efficiency) << name;
    EXPECT_EQ(g.flash.seq_half, h100.flash.seq_half) << name;
    EXPECT_EQ(g.memory_efficiency, h100.memory_efficiency) << name;
    EXPECT_EQ(g.collective_efficiency, h100.collective_efficiency) << name;
  }
  EXPECT_EQ(bundled("b200").mxfp8_efficiency, h100.fp8_tensor_efficiency);
  EXPECT_GT(bundled("h200").hbm_gb_per_s, h100.hbm_gb_per_s);  // its own memory, not H100's
  for (const char* name : {"a100-80gb", "mi300x"}) {
    const GpuModel g = bundled(name);
    const double f = h100.flash.forward_efficiency / h100.gemm.max_efficiency * g.gemm.max_efficiency;
    const double b = h100.flash.backward_efficiency / h100.gemm.max_efficiency * g.gemm.max_efficiency;
    EXPECT_NEAR(g.flash.forward_efficiency, f, 5e-4) << name;  // rounded to 3 decimals in the file
    EXPECT_NEAR(g.flash.backward_efficiency, b, 5e-4) << name;
    EXPECT_EQ(g.fp8_tensor_efficiency, 0) << name;  // no fp8 GEMM class stated: refused by gemm_ns
  }
}

}  // namespace
}  // namespace pipescope
