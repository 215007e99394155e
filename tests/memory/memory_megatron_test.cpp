// Cross-check with an outside formula: Megatron-LM's megatron/training/theoretical_memory_usage.py
// (NVIDIA/Megatron-LM, read at commit 00caa53; its formulas are restated here in our words,
// for t = 1, no distributed optimizer, no MoE/MTP, LayerNorm, no GQA, ffn = 4 h, untied
// embeddings, and the activation branch it takes with selective recompute + sequence
// parallelism, compute_activation_memory):
//   weight + optimizer bytes = 18 x parameters (bf16 weights 2 + fp32 gradients 4 + fp32
//     master weights, Adam m and v 12); a transformer layer has 12 h^2 + 4 h parameters
//     (no biases, two LayerNorms), the block L of them and the final LayerNorm's 2 h; the
//     most loaded shard holds block / p + V h (the embedding), the others block / p;
//   first-stage activations = L x s b h (18 + 4 ffn / h) + p (8 s b + s b h) (Korthikanti
//     et al. Table 2 with selective recompute; token ids and the embedding's dropout mask
//     for p micro-batches in flight), times min(1, M / p) without interleaving or
//     1 + (p - 1) / (p v) with it.
// The GPT profile that makes the same assumptions is
//   pipescope profile synth --kind gpt --disable-bias-linear --position-embedding-type rope
//     --recompute-granularity selective --embedding-dropout 0.1 --vocabulary 50304
// with optimizer_state_factor 7 (2 + 2 + 2 x 7 = 18 bytes per bf16 parameter). Equal, byte
// for byte: first-stage activations under 1F1B (M >= p and M < p), the layers'
// activations of the first position under interleaving, and the weight + optimizer
// bytes of the whole model. Two conventions differ, and the test states by how much:
//   - the formula spreads the final LayerNorm (2 h) over the p shards; it lives on the
//     last stage: Megatron's first and middle shards are 18 x 2 h / p = 18,432 bytes more;
//   - it scales the embedding's activations by the interleaving factor like the layers',
//     (11/8) p = 5.5 micro-batches in flight; at the peak of the interleaved schedule
//     (Megatron's warm-up of 2 (p - 1) + (v - 1) p forwards, then 1F1B) the first chunk
//     holds all M = 8: pipescope is 2.5 x (8 s b + s b h) = 10,526,720 bytes higher.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/cost_model.h"
#include "interop/synth_profile.h"
#include "tests/support/cli_run.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

constexpr int64_t L = 24, h = 2048, a = 16, s = 2048, V = 50304, b = 1;  // V padded to 128 as Megatron does
constexpr int p = 4;

// `profile synth --kind gpt` with Megatron's flags, as in the header.
Profile gpt() {
  GptSpec g;
  g.layers = static_cast<int>(L);
  g.hidden = static_cast<int>(h);
  g.heads = static_cast<int>(a);
  g.sequence = static_cast<int>(s);
  g.vocabulary = static_cast<int>(V);
  g.batch_sizes = {1};
  g.bias_linear = false;
  g.position_embedding = "rope";
  g.recompute = Recompute::Selective;
  g.embedding_dropout = 0.1;
  return make_gpt_profile(g);
}

constexpr const char* kSynthFlags =
    "profile synth --kind gpt --layers 24 --hidden 2048 --heads 16 --sequence 2048 --vocabulary 50304 "
    "--batch-sizes 1 --disable-bias-linear --position-embedding-type rope --recompute-granularity selective "
    "--embedding-dropout 0.1";

// Layers: 0 embedding, 1..L blocks, L+1 head; stage k of n holds L/n blocks, the first
// one the embedding too, the last one the head.
StepReport predict(const Profile& profile, const Schedule& schedule, int M) {
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
  std::printf("%-48s pipescope %16.0f  Megatron %16.0f  difference %8.0f\n", what, pipescope, megatron,
              pipescope - megatron);
}

// Megatron's terms.
constexpr double kLayerParams = 12 * h * h + 4 * h;
constexpr double kBlockParams = L * kLayerParams + 2 * h;  // + the final LayerNorm
constexpr double kLayerActivations = s * b * h * (18 + 4 * 4);  // ffn = 4 h: 34 s b h
constexpr double kEmbeddingActivations = 8 * s * b + s * b * h;  // token ids + dropout mask

TEST(MegatronCrossCheck, TheProfileIsTheOneProfileSynthWrites) {
  const testing::CliResult r = testing::run_cli(std::string(kSynthFlags) + " -o -");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(profile_to_json(profile_from_json(JsonReader::from_text(r.out, "profile synth"))), profile_to_json(gpt()));
  // Per block 12 h^2 + 4 h parameters (no biases), 34 s b h activation bytes (no
  // attention scores); the embedding V h parameters (no position table) and 8 s b + s b h.
  const Profile g = gpt();
  EXPECT_EQ(g.layers[1].parameter_bytes, 2 * kLayerParams);
  EXPECT_EQ(g.layers[1].activation_bytes[0], kLayerActivations);
  EXPECT_EQ(g.layers[0].parameter_bytes, 2 * V * h);
  EXPECT_EQ(g.layers[0].activation_bytes[0], kEmbeddingActivations);
  EXPECT_EQ(g.layers[L + 1].parameter_bytes, 2 * (V * h + 2 * h));  // output layer + final LayerNorm
  // Selective recompute runs the attention core's forward (4 b s^2 h FLOPs) again in
  // backward: at 45% of 989 TFLOP/s (445 GFLOP per ms) that is 0.0772 ms more per block.
  GptSpec plain;
  plain.layers = static_cast<int>(L);
  plain.vocabulary = static_cast<int>(V);
  plain.batch_sizes = {1};
  const Profile d = make_gpt_profile(plain);
  const double again_ms = 4.0 * b * s * s * h / (989e12 * 0.45 / 1e3);
  EXPECT_NEAR(g.layers[1].backward_input_ms[0] - d.layers[1].backward_input_ms[0], again_ms, 1e-12);
  EXPECT_NEAR(g.layers[1].backward_ms[0] - d.layers[1].backward_ms[0], again_ms, 1e-12);
  EXPECT_EQ(g.layers[1].forward_ms[0], d.layers[1].forward_ms[0]);
}

TEST(MegatronCrossCheck, SynthRefusesUnknownConventions) {
  for (const std::string bad : {"--position-embedding-type alibi", "--recompute-granularity full",
                                 "--embedding-dropout 1", "--embedding-dropout -0.1"}) {
    const testing::CliResult r = testing::run_cli("profile synth --kind gpt " + bad + " -o -");
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.out.find(bad.substr(0, bad.find(' '))), std::string::npos) << r.out;
  }
}

TEST(MegatronCrossCheck, WeightAndOptimizerBytesPerStage) {
  const StepReport r = predict(gpt(), make_1f1b(p, 8), 8);
  const double first = 18 * (kBlockParams / p + V * h);  // 7,291,127,808
  const double other = 18 * (kBlockParams / p);          // 5,436,721,152
  const double total = 18 * (kBlockParams + 2 * V * h);  // untied: embedding and output layer
  print("first stage weight + optimizer bytes", r.positions[0].static_bytes, first);
  print("middle stage weight + optimizer bytes", r.positions[1].static_bytes, other);
  EXPECT_EQ(first, 7291127808.0);
  EXPECT_EQ(other, 5436721152.0);
  // pipescope keeps the final LayerNorm on the last stage (in the head layer); the
  // formula gives each shard a p-th of it: 18 x 2 h / p = 18,432 bytes.
  EXPECT_EQ(18 * 2 * h / p, 18432);
  EXPECT_EQ(r.positions[0].static_bytes, first - 18432);
  EXPECT_EQ(r.positions[1].static_bytes, other - 18432);
  EXPECT_EQ(r.positions[2].static_bytes, other - 18432);
  EXPECT_EQ(r.positions[3].static_bytes, other - 18432 + 18 * (2 * h + V * h));  // + final LayerNorm, output layer
  int64_t sum = 0;
  for (const PositionReport& st : r.positions) {
    EXPECT_EQ(st.weight_bytes + st.gradient_bytes + st.optimizer_bytes, st.static_bytes);
    EXPECT_EQ(st.optimizer_bytes, 7 * st.weight_bytes);
    sum += st.static_bytes;
  }
  print("whole model weight + optimizer bytes", static_cast<double>(sum), total);
  EXPECT_EQ(sum, total);
}

TEST(MegatronCrossCheck, FirstStageActivationsUnder1F1B) {
  // M >= p: the first stage holds p micro-batches of its L/p layers and the embedding.
  const StepReport r = predict(gpt(), make_1f1b(p, 8), 8);
  const double megatron = L * kLayerActivations + p * kEmbeddingActivations;
  print("first stage activation bytes, 1F1B, M = 8", r.positions[0].peak_activation_bytes, megatron);
  EXPECT_EQ(megatron, 3439394816.0);
  EXPECT_EQ(r.positions[0].peak_activation_bytes, megatron);
  // M < p: the formula's min(1, M / p); the first stage holds M micro-batches.
  const StepReport few = predict(gpt(), make_1f1b(p, 2), 2);
  print("first stage activation bytes, 1F1B, M = 2", few.positions[0].peak_activation_bytes, megatron * 2 / p);
  EXPECT_EQ(few.positions[0].peak_activation_bytes, megatron * 2 / p);
}

TEST(MegatronCrossCheck, FirstPositionActivationsUnderInterleaving) {
  // v = 2: 8 stages of 3 layers; position 0 holds stages 0 (with the embedding) and 4.
  const int v = 2, M = 8;
  const StepReport r = predict(gpt(), make_interleaved(p, M, v), M);
  const double factor = 1.0 + (p - 1.0) / (p * v);  // 11/8
  const double megatron = factor * (L * kLayerActivations + p * kEmbeddingActivations);
  print("first position activation bytes, interleaved", r.positions[0].peak_activation_bytes, megatron);
  EXPECT_EQ(megatron, 4729167872.0);
  // The layers: 11 micro-batch-chunks of L/(p v) layers each = factor x L layers, as the
  // formula. The embedding: position 0 warms up with 2 (p - 1) + (v - 1) p = 10 forwards
  // (chunk 0: 0-5, chunk 1: 0-3), then alternates F, B: F chunk 0 mb 6, B chunk 1 mb 0,
  // F chunk 0 mb 7; at that peak the first chunk (the embedding's) holds all 8
  // micro-batches and chunk 1 holds 3, where the formula gives the embedding 5.5.
  EXPECT_EQ(r.positions[0].peak_activation_bytes, factor * L * kLayerActivations + 8 * kEmbeddingActivations);
  EXPECT_EQ(r.positions[0].peak_activation_bytes - megatron, (8 - factor * p) * kEmbeddingActivations);
  EXPECT_EQ(r.positions[0].peak_activation_bytes - megatron, 10526720);  // 2.5 x (8 s b + s b h)
  // Without the embedding's activations the first position holds exactly the formula's
  // factor x L layers (and so does the formula with them taken out).
  Profile no_embedding = gpt();
  for (double& bytes : no_embedding.layers[0].activation_bytes) bytes = 0;
  const StepReport layers_only = predict(no_embedding, make_interleaved(p, M, v), M);
  EXPECT_EQ(layers_only.positions[0].peak_activation_bytes, factor * L * kLayerActivations);  // 4,706,009,088
}

}  // namespace
}  // namespace pipescope
