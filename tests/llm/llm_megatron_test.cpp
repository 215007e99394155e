// Cross-check with Megatron-LM's megatron/training/theoretical_memory_usage.py (NVIDIA/
// Megatron-LM, read at d98e8a6), its formulas restated here in our words (CI has no copy
// of it; python/tests/test_megatron_memory_oracle.py runs the real file when a mirror is
// there). Its inputs: t, p, d, v, M, SP, --recompute-granularity, the distributed
// optimizer, GQA, SwiGLU, MoE. It reports the most loaded pipeline rank (rank 0):
//   weights + optimizer = (tp-sharded / t + replicated + experts / (t ep)) on that rank x
//     bytes per parameter, 18 or 6 + 12 / d with --use-distributed-optimizer (experts:
//     the expert data-parallel size t d / (t ep));
//   activations, with SP and selective recompute: (L s b h (18 + 4 f / h) + p (8 s b +
//     s b h)) / t, x min(1, M / p) under 1F1B or x (1 + (p - 1) / (p v)) interleaved, + the
//     head's 4 s b h (1 + V / h) / t when p = 1; otherwise L s b h (10 + 24 / t) + the same
//     embedding terms undivided, + 2 (s b V / t + s b h) when p = 1, all x 1.05.
// pipescope's llm_memory agrees byte for byte except where it says so, by the stated amount:
//   - the final norm (h or 2 h) lives on the last rank; the formula spreads it over the p
//     ranks: rank 0 is (final norm / p) x bytes per parameter lower;
//   - without SP the formula adds 5% for temporaries, keeps bf16 logits and takes f = 4 h
//     (24 / t): pipescope x 1.05 equals it for p > 1 once L s b h (16 - 4 f / h) / t is
//     added (Llama-3-70B, f = 3.5 h, t 8: 1,409,286,144 bytes at M >= p);
//   - interleaved, the embedding's chunk holds min(M, 2 p) micro-batches at the peak, not
//     p (1 + (p - 1) / (p v)).
#include <gtest/gtest.h>

#include <cstdio>

#include "llm/layout_check.h"
#include "llm/memory.h"
#include "tests/llm/llm_job_grid.h"

namespace pipescope {
namespace {

// theoretical_memory_usage.py in our words, for rank 0 (cp = 1, no MTP, no MLA, no biases).
struct Megatron {
  double weights_and_optimizer = 0, activations = 0;
};

Megatron megatron(const TransformerShape& s, const ParallelLayout& l) {
  const double h = s.hidden, a = s.heads, g = s.kv_heads == 0 ? a : s.kv_heads, t = l.t, p = l.p;
  const double f = s.ffn_hidden == 0 ? default_ffn_hidden(s.hidden, s.swiglu) : s.ffn_hidden;
  const double gated = s.swiglu ? 1.5 : 1.0, norm = s.rms_norm ? 1 : 2, E = s.experts;
  const double attention = 2 * h * h * (1 + g / a), mlp = 2 * h * f * gated;
  const double expert = 2 * h * (s.moe_ffn_hidden == 0 ? f : s.moe_ffn_hidden) * E * gated;
  double moe_layers = 0;
  for (int i = 0; i < s.layers; ++i) moe_layers += is_moe_layer(s, i) ? 1 : 0;
  const double dense_layers = s.layers - moe_layers, vh = static_cast<double>(s.vocabulary) * h;
  const double tp_block = (attention + mlp) * dense_layers + attention * moe_layers;
  const double replicated = 2 * norm * h * s.layers + h * E * moe_layers + norm * h;
  double tp_rank0 = (tp_block / p + vh) / t;
  if (!s.tied_embeddings && l.p == 1) tp_rank0 += vh / t;
  const double experts_rank0 = expert * moe_layers / p / (t * l.ep);
  const auto per_param = [&](double dp) { return l.sharding == Sharding::DistributedOptimizer ? 6 + 12 / dp : 18; };
  Megatron m;
  m.weights_and_optimizer = (tp_rank0 + replicated / p) * per_param(l.d) + experts_rank0 * per_param(l.d / l.ep);
  const double sb = static_cast<double>(s.sequence) * l.micro_batch, sbh = sb * h, V = s.vocabulary;
  const bool sp_path = l.sequence_parallel && l.recompute == Recompute::Selective;
  double act = s.layers * sbh * (sp_path ? 18 + 4 * f / h : 10 + 24 / t) + 8 * sb * p + sbh * p;
  if (l.v > 1) act *= 1 + (p - 1) / (p * l.v);
  if (l.v == 1 && l.p > 1) act *= std::min(1.0, l.microbatches / p);
  if (sp_path) {
    if (l.p == 1) act += sbh * 4 * (1 + V / h);
    m.activations = act / t;
  } else {
    if (l.p == 1) act += (sb * V / t + sbh) * 2;
    m.activations = act * 1.05;
  }
  return m;
}

ParallelLayout layout(int t, bool sp, int d, int p, Sharding z) {
  ParallelLayout l;
  l.t = t, l.sequence_parallel = sp, l.d = d, l.p = p, l.sharding = z;
  l.recompute = Recompute::Selective, l.microbatches = 8;
  return l;
}

// Compares rank 0 with the restated formula under the stated differences.
void expect_agrees(const TransformerShape& s, const ParallelLayout& l, const std::string& what) {
  const ParallelLayout ok = validate_layout(s, l, l.gpus());
  const RankMemory r0 = llm_memory(s, ok).stages[0];
  const Megatron m = megatron(s, ok);
  const double norm = (s.rms_norm ? 1.0 : 2.0) * s.hidden;
  const double per = ok.sharding == Sharding::DistributedOptimizer ? 6 + 12.0 / ok.d : 18;
  const double final_norm_share = ok.p > 1 ? norm / ok.p * per : 0;
  std::printf("%-40s weights+optimizer %16.0f (Megatron %16.0f)  activations %16.0f (Megatron %16.0f)\n",
              what.c_str(), r0.static_bytes(), m.weights_and_optimizer, r0.activation_bytes, m.activations);
  EXPECT_NEAR(r0.static_bytes() + final_norm_share, m.weights_and_optimizer, 1e-6 * m.weights_and_optimizer) << what;
  const bool sp_path = ok.sequence_parallel && ok.recompute == Recompute::Selective;
  // Without SP the formula's 24 / t is 8 + 4 f / h at f = 4 h whatever --ffn-hidden-size says.
  const double f = s.ffn_hidden == 0 ? default_ffn_hidden(s.hidden, s.swiglu) : s.ffn_hidden;
  const double sbh = static_cast<double>(s.sequence) * ok.micro_batch * s.hidden;
  const double ffn_term = s.layers * sbh * (16 - 4 * f / s.hidden) / ok.t * std::min(1.0, ok.microbatches / double(ok.p));
  const double ours = sp_path ? r0.activation_bytes : (r0.activation_bytes + ffn_term) * 1.05;
  if (sp_path || ok.p > 1) {
    EXPECT_NEAR(ours, m.activations, 1e-9 * m.activations) << what;
  }
}

TEST(LlmMegatronCrossCheck, GptAtEveryTensorParallelSize) {
  TransformerShape s = testing::gpt3_175b();
  s.layers = 16, s.hidden = 4096, s.heads = 32;  // LayerNorm, f = 4 h, no biases
  for (int t : {1, 2, 4, 8}) {
    for (bool sp : {false, true}) {
      for (Sharding z : {Sharding::None, Sharding::DistributedOptimizer}) {
        const std::string what = "gpt t" + std::to_string(t) + (sp ? " sp " : " ") + to_string(z);
        expect_agrees(s, layout(t, sp, 2, 4, z), what);
      }
    }
  }
}

TEST(LlmMegatronCrossCheck, Llama70bGqaSwigluOn64Gpus) {
  // t 8, p 8, SP, selective: 18 + 4 f / h = 18 + 4 x 3.5 = 32 s b h / t per layer.
  TransformerShape s = testing::llama3_70b();
  s.vocabulary = padded_vocabulary(128256, 8);
  expect_agrees(s, layout(8, true, 1, 8, Sharding::DistributedOptimizer), "llama-3-70b t8 p8 sp dist-opt");
  expect_agrees(s, layout(8, false, 1, 8, Sharding::None), "llama-3-70b t8 p8");
  const ParallelLayout no_sp = layout(8, false, 1, 8, Sharding::None);
  EXPECT_DOUBLE_EQ(megatron(s, no_sp).activations - 1.05 * llm_memory(s, no_sp).stages[0].activation_bytes,
                   1409286144.0);  // 80 x 8192 x 8192 x (16 - 14) / 8 x 1.05
}

TEST(LlmMegatronCrossCheck, MixtralExpertParallel) {
  TransformerShape s = testing::mixtral_8x7b();
  ParallelLayout l = layout(2, true, 4, 2, Sharding::DistributedOptimizer);
  l.ep = 4;  // expert data-parallel size t d / (t ep) = 1
  expect_agrees(s, l, "mixtral t2 ep4 d4 p2 sp dist-opt");
  l.ep = 2;
  expect_agrees(s, l, "mixtral t2 ep2 d4 p2 sp dist-opt");
}

TEST(LlmMegatronCrossCheck, OneStageIncludesTheHead) {
  // p = 1: the formula adds the head's 4 s b h (1 + V / h) / t under SP; so does pipescope.
  const TransformerShape s = testing::llama3_8b();
  expect_agrees(s, layout(4, true, 16, 1, Sharding::DistributedOptimizer), "llama-3-8b t4 p1 sp dist-opt");
  const RankMemory r0 = llm_memory(s, layout(4, true, 16, 1, Sharding::DistributedOptimizer)).stages[0];
  EXPECT_DOUBLE_EQ(megatron(s, layout(4, true, 16, 1, Sharding::DistributedOptimizer)).activations,
                   r0.activation_bytes);
}

TEST(LlmMegatronCrossCheck, InterleavedDiffersOnlyInTheEmbeddingsMicroBatches) {
  TransformerShape s = testing::gpt3_175b();
  s.layers = 32, s.hidden = 4096, s.heads = 32;
  ParallelLayout l = layout(4, true, 1, 4, Sharding::None);
  l.v = 2, l.microbatches = 16;
  const ParallelLayout ok = validate_layout(s, l, 16);
  const RankMemory r0 = llm_memory(s, ok).stages[0];
  const double factor = 1 + 3.0 / 8;  // 1 + (p - 1) / (p v)
  const double emb = embedding_activation_bytes(s, ok);
  // pipescope: 2 p = 8 micro-batches of the embedding; Megatron: factor x p = 5.5.
  EXPECT_DOUBLE_EQ(r0.activation_bytes - megatron(s, ok).activations, (8 - factor * 4) * emb);
  EXPECT_DOUBLE_EQ(emb, (8.0 * 2048 + 2048.0 * 4096) / 4);
}

// Issue #37's grid (tests/llm/llm_job_grid.h): for each Megatron job, the three best
// layouts the search picks agree with the formula on rank 0 under the stated differences,
// and one more the formula's inputs lack: the distributed optimizer shards over the
// data-parallel group with context parallelism, d x cp ranks (Megatron-Core's
// get_data_parallel_group(with_context_parallel=True)); the formula's data_parallel_size
// is d alone, so it is given d cp here. Its activations assume selective recompute with
// SP and no cp (cp splits the sequence: s / cp per GPU), so they are compared where the
// layout is that (interleaved: with the embedding difference above). The other best
// layouts use no recompute, which the formula does not count (it assumes selective).
TEST(LlmMegatronCrossCheck, EveryMegatronJobOfTheGridsBestLayouts) {
  int weights = 0, activations = 0;
  for (const testing::GridJob& g : testing::job_grid()) {
    if (g.framework != Framework::Megatron) continue;
    LlmSearchRequest q = testing::request_of(g);
    const LlmSearchResult r = search_layouts(q, testing::gpu_file(g.gpu));
    for (const LlmCandidate& c : r.best) {
      TransformerShape s = g.shape;
      s.vocabulary = c.vocabulary;
      const std::string what = g.label + ": " + layout_summary(c.layout);
      // The formula gives rank 0 its L / p layers: a balanced split (llm/balanced_split.h)
      // is compared as the even split the search tried beside it.
      ParallelLayout even = c.layout;
      even.layers_per_chunk = even_chunks(s.layers, even);
      const RankMemory r0 = llm_memory(s, even).stages[0];
      ParallelLayout as_formula = even;
      as_formula.d = c.layout.d * c.layout.cp, as_formula.cp = 1;
      const Megatron m = megatron(s, as_formula);
      const double per = c.layout.sharding == Sharding::DistributedOptimizer ? 6 + 12.0 / as_formula.d : 18;
      const double final_norm_share = c.layout.p > 1 ? (s.rms_norm ? 1.0 : 2.0) * s.hidden / c.layout.p * per : 0;
      EXPECT_NEAR(r0.static_bytes() + final_norm_share, m.weights_and_optimizer, 1e-9 * m.weights_and_optimizer) << what;
      ++weights;
      if (c.layout.sequence_parallel && c.layout.recompute == Recompute::Selective && c.layout.cp == 1) {
        // Interleaved: the embedding's chunk holds min(M, 2 p) micro-batches, not (1 + (p - 1) / (p v)) p.
        const double p = c.layout.p, v = c.layout.v;
        const double embedding_chunk =
            v > 1 ? (std::min<double>(c.layout.microbatches, 2 * p) - (1 + (p - 1) / (p * v)) * p) *
                        embedding_activation_bytes(s, even)
                  : 0;
        EXPECT_NEAR(r0.activation_bytes - embedding_chunk, m.activations, 1e-9 * m.activations) << what;
        std::printf("activations compared: %s\n", what.c_str());
        ++activations;
      }
    }
  }
  EXPECT_EQ(weights, 30);  // 10 Megatron jobs x top 3
  // selective with SP and no cp: gpt3-175b on 64 (t 8 p 8 v 6 b 2) and on 1024 (t 8 p 8 v 6
  // b 4), both with the TP overlap (fused attention and the fitted H100 file; before them
  // three layouts of gpt3-175b on 64)
  EXPECT_EQ(activations, 2);
  std::printf("grid: %d layouts' weights + optimizer, %d layouts' activations agree with the formula\n", weights,
              activations);
}

}  // namespace
}  // namespace pipescope
