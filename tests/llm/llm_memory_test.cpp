// Memory per GPU (llm/memory.h) against closed forms: Korthikanti et al. 2022 Table 2,
// row by row; the published parameter counts of Llama-3-8B (8,030,261,248) and
// Mixtral-8x7B (46,702,792,704); Megatron's bytes per parameter under each sharding;
// and the micro-batches Megatron's schedules keep in flight.
#include <gtest/gtest.h>

#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm_shapes.h"

namespace pipescope {
namespace {

using testing::gpt3_175b;

ParallelLayout tp(int t, bool sp, Recompute r) {
  ParallelLayout l;
  l.t = t, l.sequence_parallel = sp, l.recompute = r;
  l.attention = AttentionKernel::Unfused;  // Table 2 keeps the scores
  return l;
}

// Table 2, for GPT-3 175B (h 12288, a 96, s 2048, b 1; 5 a s / h = 80) at t = 8:
// sbh = 25,165,824.
TEST(LlmMemory, ActivationsPerLayerAreKorthikantiTable2) {
  const TransformerShape g = gpt3_175b();
  const double sbh = 2048.0 * 12288, as_h = 5.0 * 96 * 2048 / 12288, t = 8;
  EXPECT_EQ(as_h, 80);
  // no parallelism: sbh (34 + 5 a s / h) = 114 sbh
  EXPECT_EQ(layer_activation_bytes(g, tp(1, false, Recompute::None)), sbh * (34 + as_h));
  EXPECT_EQ(layer_activation_bytes(g, tp(1, false, Recompute::None)), 2868903936.0);
  // tensor parallel: sbh (10 + 24 / t + 5 a s / (h t)) = 23 sbh
  EXPECT_EQ(layer_activation_bytes(g, tp(8, false, Recompute::None)), sbh * (10 + 24 / t + as_h / t));
  EXPECT_EQ(layer_activation_bytes(g, tp(8, false, Recompute::None)), 578813952.0);
  // tensor + sequence parallel: sbh / t (34 + 5 a s / h) = 14.25 sbh
  EXPECT_EQ(layer_activation_bytes(g, tp(8, true, Recompute::None)), sbh / t * (34 + as_h));
  // tensor parallel + selective recompute: sbh (10 + 24 / t) = 13 sbh
  EXPECT_EQ(layer_activation_bytes(g, tp(8, false, Recompute::Selective)), sbh * (10 + 24 / t));
  // tensor + sequence parallel + selective recompute: 34 sbh / t = 4.25 sbh
  EXPECT_EQ(layer_activation_bytes(g, tp(8, true, Recompute::Selective)), 34 * sbh / t);
  EXPECT_EQ(layer_activation_bytes(g, tp(8, true, Recompute::Selective)), 106954752.0);
  // full recompute: the layer input 2 sbh, split t ways by SP
  EXPECT_EQ(layer_activation_bytes(g, tp(8, false, Recompute::Full)), 2 * sbh);
  EXPECT_EQ(layer_activation_bytes(g, tp(8, true, Recompute::Full)), 2 * sbh / t);
  // Context parallelism halves s per GPU at cp = 2: the s b h terms halve, the a s^2 b quarter.
  ParallelLayout cp = tp(1, false, Recompute::None);
  cp.cp = 2;
  EXPECT_EQ(layer_activation_bytes(g, cp), sbh / 2 * (34 + as_h / 2));
}

// What W still needs after I, per layer, from Table 2's own terms (GPT-3 175B at t = 8,
// f = 4 h, sbh = 25,165,824): the weighted layers' inputs. Whole per rank without SP:
// the two norm inputs 4 sbh, QKV's input 2 sbh and fc1's 2 sbh (8 sbh); split t ways: the
// output projection's input 2 sbh and fc2's 2 s b f = 8 sbh (10 sbh / t); SP splits all
// 18 sbh. The attention scores, Q / K / V, the GeLU input and the dropout masks are I's
// alone; selective recompute drops only I's scores; full recompute keeps the layer input,
// which W keeps whole (I frees nothing of it).
TEST(LlmMemory, WeightGradBytesPerLayerAreTheWeightedLayersInputs) {
  const TransformerShape g = gpt3_175b();
  const double sbh = 2048.0 * 12288, t = 8;
  auto w = [&](int tt, bool sp, Recompute r) { return layer_weight_grad_bytes(g, tp(tt, sp, r)); };
  EXPECT_EQ(w(1, false, Recompute::None), 18 * sbh);            // of 114 sbh
  EXPECT_EQ(w(8, false, Recompute::None), (8 + 10 / t) * sbh);  // 9.25 sbh of 23
  EXPECT_EQ(w(8, false, Recompute::None), 232783872.0);
  EXPECT_EQ(w(8, true, Recompute::None), 18 * sbh / t);         // 2.25 sbh of 14.25
  EXPECT_EQ(w(8, false, Recompute::Selective), (8 + 10 / t) * sbh);  // of 13 sbh
  EXPECT_EQ(w(8, true, Recompute::Selective), 18 * sbh / t);         // of 4.25 sbh
  EXPECT_EQ(w(8, false, Recompute::Full), 2 * sbh);
  EXPECT_EQ(w(8, true, Recompute::Full), 2 * sbh / t);
  for (int tt : {1, 2, 8}) {
    for (bool sp : {false, true}) {
      for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
        EXPECT_LE(w(tt, sp, r), layer_activation_bytes(g, tp(tt, sp, r))) << tt << sp << static_cast<int>(r);
      }
    }
  }
  // f != 4 h (Llama-3-8B: h 4096, f 14336 = 3.5 h, SwiGLU; s 8192): fc2's input 2 s b f is
  // 7 sbh, the 2 s b f of the 4 s b f layer_activation_bytes counts for the MLP: 8 + 2 + 7.
  const TransformerShape l8 = testing::llama3_8b();
  const double sbh8 = static_cast<double>(l8.sequence) * l8.hidden;
  EXPECT_EQ(layer_weight_grad_bytes(l8, tp(1, false, Recompute::None)), 17 * sbh8);
  // The embedding's W needs its token ids (8 s b of 8 s b + s b h), the head's its input
  // (4 s b h of 4 s b V / t + 4 s b h); SP splits both t ways.
  EXPECT_EQ(embedding_weight_grad_bytes(g, tp(8, false, Recompute::None)), 8 * 2048.0);
  EXPECT_EQ(embedding_weight_grad_bytes(g, tp(8, true, Recompute::None)), 8 * 2048.0 / t);
  EXPECT_EQ(head_weight_grad_bytes(g, tp(8, false, Recompute::None)), 4 * sbh);
  EXPECT_EQ(head_weight_grad_bytes(g, tp(8, true, Recompute::None)), 4 * sbh / t);
  EXPECT_LT(head_weight_grad_bytes(g, tp(8, true, Recompute::None)), head_activation_bytes(g, tp(8, true, Recompute::None)));
}

TEST(LlmMemory, ParameterCountsArePublishedOnes) {
  // Llama-3-8B, one GPU: attention 2 h^2 (1 + 8 / 32), SwiGLU 3 h f, two RMSNorms, untied
  // embedding and head 2 V h, final norm h.
  const TransformerShape l8 = testing::llama3_8b();
  EXPECT_EQ(layer_parameters(l8, false).total(), 41943040.0 + 176160768.0 + 8192.0);
  const LlmMemory one = llm_memory(l8, ParallelLayout{});
  EXPECT_EQ(one.stages[0].parameters, 8030261248.0);
  // Split over p = 4 (8 layers each) and t = 2: the ranks' parameters sum to the model / 2
  // minus the replicated norms' halves (they are whole on each of the t GPUs).
  ParallelLayout l;
  l.t = 2, l.p = 4, l.d = 1;
  double sum = 0;
  for (const RankMemory& st : llm_memory(l8, l).stages) sum += st.parameters;
  const double replicated = 32 * 8192.0 + 4096;
  EXPECT_EQ(sum, (8030261248.0 - replicated) / 2 + replicated);
  // Mixtral-8x7B: 8 experts of 3 h f + router h E per layer; ep = 8 leaves one expert per GPU.
  const TransformerShape mx = testing::mixtral_8x7b();
  EXPECT_EQ(llm_memory(mx, ParallelLayout{}).stages[0].parameters, 46702792704.0);
  ParallelLayout e;
  e.ep = 8, e.d = 8;
  const RankMemory st = llm_memory(mx, e).stages[0];
  EXPECT_EQ(st.expert_parameters, 32 * 176160768.0);
  EXPECT_EQ(st.parameters, 46702792704.0 - 7 * 32 * 176160768.0);
}

TEST(LlmMemory, BytesPerParameterUnderEachSharding) {
  // A dense stage of N parameters with d = 8 data-parallel ranks, bf16 mixed (2 + 4 + 12):
  // none 18 N; distributed optimizer 6 + 12 / d (Megatron's count); ZeRO-2 2 + 16 / d;
  // ZeRO-3 18 / d.
  const TransformerShape g = gpt3_175b();
  ParallelLayout l;
  l.t = 8, l.p = 8, l.d = 8;
  const double n = llm_memory(g, l).stages[1].parameters;  // a middle rank: 12 layers only
  EXPECT_EQ(n, 12 * (12.0 * 12288 * 12288 / 8 + 4 * 12288));
  const std::pair<Sharding, double> cases[] = {{Sharding::None, 18},
                                               {Sharding::DistributedOptimizer, 6 + 12.0 / 8},
                                               {Sharding::Zero2, 2 + 16.0 / 8},
                                               {Sharding::Zero3, 18.0 / 8}};
  for (const auto& [sharding, per] : cases) {
    l.sharding = sharding;
    EXPECT_DOUBLE_EQ(llm_memory(g, l).stages[1].static_bytes(), n * per) << to_string(sharding);
  }
  // The distributed optimizer shards over the data-and-context-parallel group (Megatron's
  // intra_dp_cp_group): cp = 2, d = 4 shards as d = 8 does.
  l.sharding = Sharding::DistributedOptimizer, l.d = 4, l.cp = 2;
  EXPECT_DOUBLE_EQ(llm_memory(g, l).stages[1].static_bytes(), n * (6 + 12.0 / 8));
}

TEST(LlmMemory, InFlightMicroBatchesFollowMegatronsWarmup) {
  ParallelLayout l;
  l.p = 8, l.microbatches = 32;
  // 1F1B: rank k keeps p - k; with M < p only M.
  for (int k = 0; k < 8; ++k) EXPECT_EQ(in_flight_chunks(l, k), 8 - k);
  l.microbatches = 3;
  EXPECT_EQ(in_flight_chunks(l, 0), 3);
  // Interleaved, v = 2: 2 (p - k - 1) + (v - 1) p + 1 chunks; rank 0 keeps 23 = p (1 + (p - 1) / (p v)) x v.
  l.microbatches = 32, l.v = 2;
  EXPECT_EQ(in_flight_chunks(l, 0), 23);
  EXPECT_EQ(in_flight_chunks(l, 7), 9);
  const TransformerShape g = gpt3_175b();
  l.t = 8, l.sequence_parallel = true, l.recompute = Recompute::Selective;
  const LlmMemory m = llm_memory(g, l);
  // Rank 0: 23 chunk-micro-batches of 6 layers, the embedding's 2 p = 16 micro-batches.
  EXPECT_DOUBLE_EQ(m.stages[0].activation_bytes,
                   23 * 6 * m.layer_activation_bytes + 16 * embedding_activation_bytes(g, l));
  // Rank 7: 9 chunk-micro-batches of 6 layers and one micro-batch of the head.
  EXPECT_DOUBLE_EQ(m.stages[7].activation_bytes, 9 * 6 * m.layer_activation_bytes + head_activation_bytes(g, l));
}

TEST(LlmMemory, UnevenChunksPutTheirLayersOnTheirRanks) {
  TransformerShape g = gpt3_175b();
  g.layers = 10;
  ParallelLayout l;
  l.p = 2, l.v = 2, l.layers_per_chunk = {1, 4, 4, 1};  // rank 0: chunks 0, 2; rank 1: chunks 1, 3
  const LlmMemory m = llm_memory(g, l);
  EXPECT_EQ(m.stages[0].layers, 5);
  EXPECT_EQ(m.stages[1].layers, 5);
  const double layer = layer_parameters(g, false).total();
  EXPECT_EQ(m.stages[0].parameters, 5 * layer + 51200.0 * 12288);
  EXPECT_EQ(m.stages[1].parameters, 5 * layer + 51200.0 * 12288 + 2 * 12288);  // tied copy + final LayerNorm
}

}  // namespace
}  // namespace pipescope
