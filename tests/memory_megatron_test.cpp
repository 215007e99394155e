// Cross-check with an outside formula: Megatron-LM's megatron/training/theoretical_memory_usage.py
// (NVIDIA/Megatron-LM, read at commit 00caa53; its formulas are restated here in our words,
// with t = 1, no distributed optimizer, no MoE/MTP, untied embeddings):
//   weight + optimizer bytes = 18 x parameters (bf16 weights 2 + fp32 gradients 4 + fp32
//     master weights, Adam m and v 12); the most loaded shard holds L/p transformer layers
//     (12 h^2 + 4 h each, the final LayerNorm's 2 h spread over p) and one embedding V h;
//   first-stage activations (compute_activation_memory, Korthikanti et al. Table 2 with
//     selective recompute) = L x s b h (18 + 4 ffn / h) + p (8 s b + s b h), times the
//     interleaving factor 1 + (p - 1) / (p v), or min(1, M / p) without interleaving.
// pipescope predicts the same quantities for a GPT profile from `profile synth --kind gpt`
// with optimizer_state_factor 7 (2 + 2 + 2 x 7 = 18 bytes per bf16 parameter). The two
// differ by terms each side leaves out, and the test states them in bytes, exactly:
//   parameters: the synth counts the linear layers' biases (9 h per layer) and a learned
//     position embedding (s h); Megatron's formula leaves both out;
//   activations: the synth keeps the attention scores (5 a s^2 b per layer, Table 2
//     without selective recompute); Megatron's formula has a dropout mask (s b h) in the
//     embedding that the synth does not model.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/cost_model.h"
#include "core/synth_profile.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

constexpr int64_t L = 24, h = 2048, a = 16, s = 2048, V = 50304, b = 1;  // V padded to 128 as Megatron does
constexpr int p = 4, M = 8;

Profile gpt() {
  GptSpec g;
  g.layers = static_cast<int>(L);
  g.hidden = static_cast<int>(h);
  g.heads = static_cast<int>(a);
  g.sequence = static_cast<int>(s);
  g.vocabulary = static_cast<int>(V);
  g.batch_sizes = {1};
  return make_gpt_profile(g);
}

// Layers: 0 embedding, 1..L blocks, L+1 head; stage k of n holds L/n blocks, the first
// one the embedding too, the last one the head.
StepReport predict(const Profile& profile, const Schedule& schedule) {
  const int n = schedule.stages();
  LayerRanges ranges;
  for (int k = 0; k < n; ++k) {
    ranges.emplace_back(k == 0 ? 0 : 1 + k * (L / n), k + 1 == n ? L + 2 : 1 + (k + 1) * (L / n));
  }
  Plan plan;
  plan.microbatches = M;
  plan.batch_size = b * M;
  plan.chunks = n / p;
  plan.optimizer_state_factor = 7.0;
  place_stages(plan, schedule, ranges, 1);
  const Hardware hw = Hardware::ideal(p);
  return simulate(schedule, build_cost_model(profile, plan, hw), hw);
}

void print(const char* what, double pipescope, double megatron) {
  std::printf("%-44s pipescope %16.0f  Megatron %16.0f  difference %14.0f\n", what, pipescope, megatron,
              pipescope - megatron);
}

TEST(MegatronCrossCheck, WeightAndOptimizerBytesPerStage) {
  const StepReport r = predict(gpt(), make_1f1b(p, M));
  const double block_params = L * (12 * h * h + 4 * h) + 2 * h;  // Megatron's transformer block
  const double most_loaded = 18 * (block_params / p + V * h);
  const double other = 18 * (block_params / p);
  print("first stage weight + optimizer bytes", r.stages[0].static_bytes, most_loaded);
  print("middle stage weight + optimizer bytes", r.stages[1].static_bytes, other);
  // Biases 9 h per layer, the position embedding s h; Megatron spreads the final LayerNorm's 2 h.
  EXPECT_EQ(r.stages[0].static_bytes - most_loaded, 18 * (9 * h * L / p + s * h - 2 * h / p));
  EXPECT_EQ(r.stages[1].static_bytes - other, 18 * (9 * h * L / p - 2 * h / p));
  EXPECT_EQ(r.stages[0].weight_bytes + r.stages[0].gradient_bytes + r.stages[0].optimizer_bytes,
            r.stages[0].static_bytes);
}

TEST(MegatronCrossCheck, FirstStageActivationsUnder1F1B) {
  const StepReport r = predict(gpt(), make_1f1b(p, M));
  const double megatron = L * s * b * h * (18 + 4 * 4) + p * (8 * s * b + s * b * h);  // ffn = 4 h, M >= p
  print("first stage activation bytes, 1F1B", r.stages[0].peak_activation_bytes, megatron);
  EXPECT_EQ(r.stages[0].peak_activation_bytes - megatron, 5 * a * s * s * b * L - p * s * b * h);
}

TEST(MegatronCrossCheck, FirstStageActivationsUnderInterleavingHaveMegatronsFactor) {
  // The factor is about the transformer layers: without the embedding's few bytes the
  // first position holds (1 + (p - 1) / (p v)) x L layers' activations exactly.
  Profile profile = gpt();
  for (double& bytes : profile.layers[0].activation_bytes) bytes = 0;
  const int v = 2;
  const StepReport plain = predict(profile, make_1f1b(p, M));
  const StepReport inter = predict(profile, make_interleaved(p, M, v));
  const double block = s * b * h * (34 + 5 * a * s / h);  // the synth's Table 2 value
  const double factor = 1.0 + (p - 1.0) / (p * v);        // 11/8
  const double megatron = factor * L * s * b * h * (18 + 4 * 4);
  print("first position activation bytes, interleaved", inter.stages[0].peak_activation_bytes, megatron);
  EXPECT_EQ(plain.stages[0].peak_activation_bytes, L * block);
  EXPECT_EQ(inter.stages[0].peak_activation_bytes, factor * L * block);
  EXPECT_EQ(inter.stages[0].peak_activation_bytes - megatron, factor * L * 5 * a * s * s * b);
}

}  // namespace
}  // namespace pipescope
