// The layout search (llm/layout_search.h): the enumerator yields exactly the ordered
// factorizations (counted by formula), the bound never exceeds the exact step, branch and
// bound returns what the exhaustive search returns, each framework gets only what its
// table offers, the reasons quote the search's own numbers, bad requests name the flag,
// and Llama-3-405B on 16,384 H100s gets a sane layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "core/error.h"
#include "llm/collectives.h"
#include "llm/framework.h"
#include "llm/layout_search.h"
#include "llm/memory.h"
#include "llm_shapes.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

GpuModel h100() { return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"); }

// Ordered factorizations of n into 4 factors: the product over n's primes p^e of C(e + 3, 3).
int64_t ordered_factorizations(int n) {
  int64_t out = 1;
  for (int prime = 2; n > 1; ++prime) {
    int e = 0;
    while (n % prime == 0) n /= prime, ++e;
    out *= static_cast<int64_t>(e + 3) * (e + 2) * (e + 1) / 6;
  }
  return out;
}

// Small enough to search exhaustively: every dimension divides everywhere.
TransformerShape small_dense() {
  TransformerShape s;
  s.name = "small";
  s.layers = 8, s.hidden = 1024, s.heads = 16, s.kv_heads = 4, s.ffn_hidden = 4096, s.swiglu = true;
  s.bias_linear = false, s.rms_norm = true, s.tied_embeddings = false, s.vocabulary = 32000, s.sequence = 2048;
  return s;
}

LlmSearchRequest request(const TransformerShape& shape, int gpus, int batch, Framework f = Framework::Megatron) {
  LlmSearchRequest q;
  q.shape = shape, q.gpus = gpus, q.global_batch = batch, q.framework = f;
  return q;
}

TEST(LlmLayoutSearch, DegreeTuplesAreExactlyTheOrderedFactorizations) {
  for (int n = 1; n <= 300; ++n) {
    const auto tuples = degree_tuples(n);
    ASSERT_EQ(static_cast<int64_t>(tuples.size()), ordered_factorizations(n)) << n;
    for (std::size_t i = 0; i < tuples.size(); ++i) {
      const auto [t, cp, d, p] = tuples[i];
      EXPECT_EQ(t * cp * d * p, n);
      if (i > 0) {
        EXPECT_NE(tuples[i], tuples[i - 1]);
      }
    }
  }
  EXPECT_EQ(degree_tuples(16384).size(), 680U);  // 2^14: C(17, 3)
  EXPECT_EQ(degree_tuples(1 << 20).size(), 1771U);  // 2^20, the GPU limit: C(23, 3)
  // 2^31 - 1 is prime: the 4 places of the one factor. Before, the divisor loop's int k
  // overflowed past it and the process died dividing by zero.
  EXPECT_EQ(degree_tuples(2147483647).size(), 4U);
}

TEST(LlmLayoutSearch, SearchCountsTheFactorizationsAndHonoursPins) {
  LlmSearchRequest q = request(small_dense(), 16, 64);
  EXPECT_EQ(search_layouts(q, h100()).factorizations, 35);  // 2^4: C(7, 3)
  q.t = 2;                                                  // (cp, d, p) with product 8: C(5, 2)
  const LlmSearchResult r = search_layouts(q, h100());
  EXPECT_EQ(r.factorizations, 10);
  for (const LlmCandidate& c : r.best) EXPECT_EQ(c.layout.t, 2);
}

TEST(LlmLayoutSearch, UnevenRanksLoseLayersAtTheEnds) {
  const std::vector<int> ranks = rank_layers(126, 16);  // Llama 3 405B: 7, 8 x 14, 7
  ASSERT_EQ(ranks.size(), 16U);
  EXPECT_EQ(ranks.front(), 7);
  EXPECT_EQ(ranks.back(), 7);
  for (int r = 1; r < 15; ++r) EXPECT_EQ(ranks[static_cast<std::size_t>(r)], 8);
  const std::vector<int> chunks = layout_chunks(126, 16, 2);  // rank 0: 3 then 4; rank 1: 4 and 4
  ASSERT_EQ(chunks.size(), 32U);
  EXPECT_EQ(chunks[0], 3);
  EXPECT_EQ(chunks[16], 4);
  EXPECT_EQ(chunks[1], 4);
  int sum = 0;
  for (int c : chunks) sum += c;
  EXPECT_EQ(sum, 126);
  EXPECT_EQ(rank_layers(10, 4), (std::vector<int>{2, 3, 3, 2}));
  EXPECT_TRUE(layout_chunks(10, 4, 3).empty());  // ranks of 2 layers cannot hold 3 chunks
}

// Random small problems: every fitting layout's bound <= its exact step, and branch and
// bound's top 5 == the exhaustive search's top 5, layout for layout.
TEST(LlmLayoutSearch, BoundNeverExceedsTheStepAndBranchAndBoundIsExact) {
  std::mt19937 rng(7);
  const GpuModel gpu = h100();
  const int gpu_counts[] = {4, 8, 16, 32};
  int64_t checked = 0, pruned = 0;
  for (int trial = 0; trial < 12; ++trial) {
    TransformerShape s = small_dense();
    s.layers = 4 * (1 + static_cast<int>(rng() % 3));
    if (trial % 3 == 2) s.experts = 4, s.moe_topk = 2, s.moe_ffn_hidden = 1024;
    const Framework f = static_cast<Framework>(trial % 3);
    LlmSearchRequest q = request(s, gpu_counts[rng() % 4], 32, f);
    q.options.overlap_grad_reduce = trial % 2 == 1;
    q.memory_bytes = 2e9 + 1e9 * static_cast<double>(rng() % 4);
    q.headroom_bytes = trial % 2 == 1 ? 0.25e9 : 0;  // kept free: the fit is against memory less it
    LlmSearchRequest all = q;
    all.exhaustive = true, all.top = 1 << 20;
    const LlmSearchResult every = search_layouts(all, gpu);
    ASSERT_EQ(static_cast<int64_t>(every.best.size()), every.fitting) << trial;
    for (const LlmCandidate& c : every.best) {
      ASSERT_LE(c.bound_ns, c.step_ns) << trial << ": " << layout_summary(c.layout);
      EXPECT_LE(c.peak_bytes, q.memory_bytes - q.headroom_bytes);
    }
    const LlmSearchResult bb = search_layouts(q, gpu);
    ASSERT_EQ(bb.best.size(), std::min<std::size_t>(5, every.best.size())) << trial;
    for (std::size_t i = 0; i < bb.best.size(); ++i) {
      EXPECT_EQ(layout_summary(bb.best[i].layout), layout_summary(every.best[i].layout)) << trial << " #" << i;
      EXPECT_EQ(bb.best[i].step_ns, every.best[i].step_ns) << trial << " #" << i;
    }
    EXPECT_LE(bb.simulated, every.simulated);
    checked += every.fitting, pruned += every.simulated - bb.simulated;
  }
  std::printf("checked %lld layouts, branch and bound skipped %lld\n", static_cast<long long>(checked),
              static_cast<long long>(pruned));
  EXPECT_GT(checked, 1000);  // the property held over many layouts, not a handful
  EXPECT_GT(pruned, checked / 2);
}

// ZeRO-3 with both overlaps on: its 2 M parameter gathers, the M - 1 reduce-scatters after
// the earlier micro-batches and the step's last one share one data-parallel link, so
// together they hide behind the rank's compute at most once. One rank (p = 1) of 64
// data-parallel GPUs over 8 nodes, M = 2, s = 256:
//   exposed = max(RS - B, 0) + max((M - 1) RS + 2 M AG + (RS - max(RS - B, 0)) - M (F + B), 0)
// with F, B one micro-batch's forward and backward of the rank; and at least, per layer
// (FSDP gathers layer i + 1 under layer i's compute), M x 8 x (max(AG(P / 8) - F / 8, 0) +
// max(AG(P / 8) + RS(P / 8) - B / 8, 0)) for the rank's 8 layers.
TEST(LlmLayoutSearch, ShardedCollectivesShareOneLink) {
  const GpuModel gpu = h100();
  TransformerShape shape = small_dense();
  shape.sequence = 256;  // few tokens per parameter: the link is busier than the rank
  ParallelLayout l;
  l.d = 64, l.micro_batch = 1, l.microbatches = 2, l.sharding = Sharding::Zero3;
  l.overlap_grad_reduce = l.overlap_param_gather = true;
  const LlmCandidate c = time_layout(shape, l, gpu, step_options(l));
  const StepTime st = step_time(shape, l, gpu, step_options(l));
  const int64_t f = st.embedding.forward_ns + 8 * st.layer.forward_ns + st.head.forward_ns;
  const int64_t b = st.embedding.backward_ns() + 8 * st.layer.backward_ns() + st.head.backward_ns();
  const int64_t params = st.embedding.parameters + 8 * st.layer.parameters + st.head.parameters;
  const GroupLink dp = group_link(gpu, l, Group::Dp);
  const int64_t rs = reduce_scatter_group_ns(dp, params * 4), ag = allgather_group_ns(dp, params * 2);
  const int64_t tail = std::max<int64_t>(rs - b, 0);
  const int64_t total = std::max<int64_t>(rs + 4 * ag + (rs - tail) - 2 * (f + b), 0);
  const int64_t ag1 = allgather_group_ns(dp, params / 8 * 2), rs1 = reduce_scatter_group_ns(dp, params / 8 * 4);
  const int64_t per_layer = 8 * (std::max<int64_t>(ag1 - f / 8, 0) + std::max<int64_t>(ag1 + rs1 - b / 8, 0));
  const int64_t extra = std::max(total, 2 * per_layer);
  EXPECT_NEAR(static_cast<double>(c.dp_exposed_ns), static_cast<double>(tail), 8);
  EXPECT_NEAR(static_cast<double>(c.sharding_ns), static_cast<double>(extra), 8);
  EXPECT_GT(c.sharding_ns, 0);  // the case the rule is for: the link is busier than the rank
  EXPECT_LE(c.bound_ns, c.step_ns);
}

TEST(LlmLayoutSearch, EachFrameworkGetsOnlyWhatItRuns) {
  for (Framework f : {Framework::Megatron, Framework::Torch, Framework::DeepSpeed}) {
    LlmSearchRequest q = request(small_dense(), 16, 64, f);
    q.exhaustive = true, q.top = 1 << 20;
    const LlmSearchResult r = search_layouts(q, h100());
    const FrameworkOffer& offer = framework_offer(f);
    ASSERT_GT(r.best.size(), 0U);
    for (const LlmCandidate& c : r.best) {
      const ParallelLayout& l = c.layout;
      const auto& shardings = offer.shardings_for(l.p);
      EXPECT_NE(std::find(shardings.begin(), shardings.end(), l.sharding), shardings.end()) << layout_summary(l);
      EXPECT_NE(std::find(offer.recomputes.begin(), offer.recomputes.end(), l.recompute), offer.recomputes.end());
      if (f == Framework::DeepSpeed) {
        EXPECT_EQ(l.v, 1);
        EXPECT_EQ(l.cp, 1);
        EXPECT_FALSE(l.sequence_parallel);
        if (l.p > 1) {
          EXPECT_TRUE(l.sharding == Sharding::None || l.sharding == Sharding::DistributedOptimizer);
        }
      }
      if (f == Framework::Torch && l.t > 1) {  // torchtitan's norms
        EXPECT_TRUE(l.sequence_parallel);
      }
      if (f == Framework::Megatron) {
        EXPECT_TRUE(l.sharding == Sharding::None || l.sharding == Sharding::DistributedOptimizer);
      }
    }
  }
  EXPECT_FALSE(framework_offer(Framework::DeepSpeed).runs(ScheduleKind::Interleaved));
  EXPECT_TRUE(framework_offer(Framework::Torch).runs(ScheduleKind::InterleavedZeroBubble));
  EXPECT_FALSE(framework_offer(Framework::Megatron).runs(ScheduleKind::ZeroBubbleH1));
  // torchtitan's AC modes: none, full (FullAC) and its per-op selective AC, which llm/ counts
  // under its own policy (llm/layout.h's SelectivePolicy::EveryOtherMatmul).
  EXPECT_EQ(framework_offer(Framework::Torch).recomputes,
            (std::vector<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full}));
  EXPECT_EQ(selective_policy(Framework::Torch), SelectivePolicy::EveryOtherMatmul);
  EXPECT_EQ(selective_policy(Framework::Megatron), SelectivePolicy::CoreAttention);
  EXPECT_EQ(framework_offer(Framework::Megatron).recomputes.size(), 3U);
}

// Expert parallelism as torchtitan and DeepSpeed's AutoEP run it (llm/framework.cpp's
// expert_parallel_refusal): experts whole on each rank, so ep > 1 only with t = 1; torchtitan's
// ep divides dp_shard * cp, dp_shard = d under FSDP2 (zero-2 / zero-3) and 1 under DDP. Every
// candidate of an exhaustive 16-GPU search of an 8-expert model keeps to that, and ep > 1 is
// still searched (ep 2, 4, 8 all divide d cp = 16 at t = 1).
TEST(LlmLayoutSearch, ExpertParallelIsOfferedAsTorchAndDeepSpeedRunIt) {
  TransformerShape moe = small_dense();
  moe.experts = 8, moe.moe_topk = 2;
  for (Framework f : {Framework::Torch, Framework::DeepSpeed}) {
    LlmSearchRequest q = request(moe, 16, 64, f);
    q.exhaustive = true, q.top = 1 << 20;
    const LlmSearchResult r = search_layouts(q, h100());
    int most_ep = 1;
    for (const LlmCandidate& c : r.best) {
      const ParallelLayout& l = c.layout;
      most_ep = std::max(most_ep, l.ep);
      if (l.ep == 1) continue;
      EXPECT_EQ(l.t, 1) << layout_summary(l);
      const bool fsdp = l.sharding == Sharding::Zero2 || l.sharding == Sharding::Zero3;
      if (f == Framework::Torch) {
        EXPECT_EQ((fsdp ? l.d : 1) * l.cp % l.ep, 0) << layout_summary(l);
      }
    }
    EXPECT_EQ(most_ep, 8) << to_string(f);
  }
  // Pinned to t 2, ep 2, torch has nothing to search, and says why.
  LlmSearchRequest pinned = request(moe, 16, 64, Framework::Torch);
  pinned.t = 2, pinned.ep = 2;
  try {
    search_layouts(pinned, h100());
    ADD_FAILURE() << "t 2, ep 2 searched under torch";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(0 enumerated); the framework refuses the others, e.g. "
                                         "--expert-model-parallel-size: ep = 2 with t = 2"),
              std::string::npos)
        << e.what();
  }
  ParallelLayout l;
  l.t = 2, l.ep = 2, l.d = 8, l.sharding = Sharding::Zero3, l.microbatches = 8;
  EXPECT_EQ(runtime_refusal(framework_offer(Framework::Torch), l),
            "--expert-model-parallel-size: ep = 2 with t = 2: torch (torchtitan) keeps each expert whole on its rank "
            "(torchtitan's expert mesh spans tp), llm/ splits experts t ways as Megatron does; plan with t = 1");
  EXPECT_EQ(expert_parallel_refusal(framework_offer(Framework::DeepSpeed), l),
            "ep = 2 with t = 2: DeepSpeed keeps each expert whole on its rank (AutoEP refuses tensor parallelism "
            "from mpu), llm/ splits experts t ways as Megatron does; plan with t = 1");
  EXPECT_EQ(runtime_refusal(framework_offer(Framework::Megatron), l), "");  // --expert-tensor-parallel-size = t
  l.t = 1, l.cp = 2, l.ep = 4;  // FSDP2: dp_shard cp = 16, ep 4 divides it; DDP: dp_shard cp = 2
  EXPECT_EQ(runtime_refusal(framework_offer(Framework::Torch), l), "");
  l.sharding = Sharding::None;
  EXPECT_EQ(expert_parallel_refusal(framework_offer(Framework::Torch), l),
            "ep = 4 does not divide torchtitan's dp_shard * cp * tp = 1 * 2 * 1 (sharding none is DDP: dp_shard = 1, "
            "the experts spread over the cp ranks only)");
  EXPECT_EQ(runtime_refusal(framework_offer(Framework::DeepSpeed), l), "");  // AutoEP at t = 1, any ZeRO stage
}

TEST(LlmLayoutSearch, ReasonsQuoteTheSearchsNumbers) {
  // Llama-3-70B on 64 H100s at 40 GB: t = 1 cannot hold 70 B parameters' 18 bytes / p.
  LlmSearchRequest q = request(testing::llama3_70b(), 64, 64);
  q.memory_bytes = 40e9;
  const LlmSearchResult r = search_layouts(q, h100());
  ASSERT_FALSE(r.best.empty());
  const LlmCandidate& best = r.best.front();
  ASSERT_FALSE(r.why.empty());
  const std::string& t_line = r.why.front();
  EXPECT_EQ(t_line.rfind("t = " + std::to_string(best.layout.t), 0), 0U) << t_line;
  if (best.layout.t <= 8) {
    EXPECT_NE(t_line.find("inside one NVLink node (8 GPUs)"), std::string::npos) << t_line;
  }
  const DimensionValue& t1 = r.dimensions.at("t").at(1);
  ASSERT_EQ(t1.fitting, 0);
  char need[64];
  // against the usable 36.0 GB: 40 GB less Megatron-LM's reserve, 0.5 + 1.5 GB and 5 % (llm/framework.cpp)
  EXPECT_DOUBLE_EQ(r.usable(), 36e9);
  std::snprintf(need, sizeof need, "t = 1 does not fit: %.1f GB > 36.0 GB", t1.min_need / 1e9);
  EXPECT_NE(t_line.find(need), std::string::npos) << t_line;
  ASSERT_EQ(r.lost.size(), r.best.size() - 1);
  for (std::size_t i = 0; i < r.lost.size(); ++i) {
    EXPECT_EQ(r.lost[i].rfind(layout_summary(r.best[i + 1].layout), 0), 0U) << r.lost[i];
    EXPECT_NE(r.lost[i].find("instead of"), std::string::npos) << r.lost[i];
  }
}

// What the search throws for q ("no error" when it plans).
std::string search_error(const LlmSearchRequest& q) {
  try {
    search_layouts(q, h100());
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

TEST(LlmLayoutSearch, BadRequestsNameTheFlag) {
  LlmSearchRequest q = request(small_dense(), 16, 64);
  q.t = 3;
  EXPECT_EQ(search_error(q), "--gpus: the pinned t * cp * p = 3 * 1 * 1 = 3 does not divide 16 GPUs");
  q = request(small_dense(), 16, 64);
  q.memory_bytes = 1e6;
  const std::string none = search_error(q);
  EXPECT_EQ(none.rfind("--gpu: no layout fits 0.0 GB per GPU (0.0 GB less 2.0 GB headroom, --memory-headroom): the "
                       "smallest need found is ", 0), 0U) << none;
  q = request(small_dense(), 16, 64);
  q.headroom_bytes = 100e9;  // asked for: it must leave memory to search
  EXPECT_EQ(search_error(q), "--memory-headroom: expected less than the 80.00 GB per GPU, got 100.00 GB");
  q.headroom_bytes = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(search_error(q).rfind("--memory-headroom: expected less than the 80.00 GB per GPU, got ", 0), 0U);
  q = request(small_dense(), 16, 0);
  EXPECT_EQ(search_error(q), "--global-batch-size: expected a positive integer, got 0");
}

// The request checks every number itself (every front end's refusal is this one): a
// pin is 0 (search) or in range, never negative; counts stop at llm/layout_check.h's
// limits before a loop or a product uses them; memory is finite.
TEST(LlmLayoutSearch, EveryNumberOfTheRequestIsInItsRange) {
  LlmSearchRequest q = request(small_dense(), 16, 64);
  q.t = -4;
  EXPECT_EQ(search_error(q), "--tensor-model-parallel-size: expected 0 to 1048576, got -4");
  q = request(small_dense(), 16, 64);
  q.v = 65;
  EXPECT_EQ(search_error(q), "--virtual-pipeline-size: expected 0 to 64, got 65");
  q = request(small_dense(), 2147483647, 64);
  EXPECT_EQ(search_error(q), "--gpus: expected 1 to 1048576, got 2147483647");
  q = request(small_dense(), 16, 64);
  q.micro_batch = 2147483647;  // before: b doubled past 2^31 and the search never ended
  EXPECT_EQ(search_error(q), "--micro-batch-size: expected 0 to 1073741824, got 2147483647");
  q = request(small_dense(), 16, 64);
  q.max_micro_batch = 0;
  EXPECT_EQ(search_error(q), "--max-micro-batch-size: expected 1 to 1073741824, got 0");
  q = request(small_dense(), 16, 64);
  q.memory_bytes = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(search_error(q), "--memory-gb: expected a finite number of GB >= 0 (0: the GPU file's), got nan");
  q.memory_bytes = std::numeric_limits<double>::infinity();
  EXPECT_EQ(search_error(q), "--memory-gb: expected a finite number of GB >= 0 (0: the GPU file's), got inf");
  q = request(small_dense(), 16, 64);
  q.order = "tp-dp";
  EXPECT_EQ(search_error(q), "order: \"tp-dp\": expected a permutation of tp, cp, ep, dp, pp");
  // A pinned b need not be a power of two: 48 = 3 x 16 runs with b = 3 alone.
  q = request(small_dense(), 16, 48);
  q.micro_batch = 3;
  const LlmSearchResult r = search_layouts(q, h100());
  ASSERT_FALSE(r.best.empty());
  for (const LlmCandidate& c : r.best) EXPECT_EQ(c.layout.micro_batch, 3);
}

TEST(LlmLayoutSearch, Llama405bOn16kH100sIsSane) {
  TransformerShape s = testing::llama3(126, 16384, 128, 53248);
  const GpuModel gpu = h100();
  const LlmSearchResult r = search_layouts(request(s, 16384, 2048), gpu);
  ASSERT_FALSE(r.best.empty());
  const LlmCandidate& best = r.best.front();
  const ParallelLayout& l = best.layout;
  EXPECT_EQ(l.gpus(), 16384);
  EXPECT_EQ(l.global_batch(), 2048);
  EXPECT_LE(l.t, 8);
  EXPECT_FALSE(group_link(gpu, l, Group::Tp).crosses_nodes);
  s.vocabulary = best.vocabulary;
  EXPECT_EQ(llm_memory(s, l).peak(), best.peak_bytes);
  EXPECT_LE(best.peak_bytes, 80e9);
  EXPECT_EQ(time_layout(s, l, gpu, {}).step_ns, best.step_ns);
  EXPECT_LT(r.simulated, r.fitting);  // the bound pruned
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

// Issue 54's job: Llama-3-8B, s 8192, 128 H100s, global batch 1024, Megatron-LM. With fused
// attention there is no score matrix to dodge, so context parallelism no longer wins (the
// unfused model picked cp 4 to keep 80 of its 112 bytes per s b h off the GPU): the winner is
// t 2 with SP and the TP overlap, cp 1, d 64, no pipeline (8.904 s), its two runner-ups p 2
// interleaved at t 1 (+0.8%), and "why" names the TP overlap it chose.
TEST(LlmLayoutSearch, Llama3_8bAt8kOn128H100sNeedsNoContextParallelism) {
  const TransformerShape s = testing::llama3_8b();  // s 8192
  const LlmSearchResult r = search_layouts(request(s, 128, 1024), h100());
  ASSERT_GE(r.best.size(), 3U);
  const ParallelLayout& l = r.best.front().layout;
  EXPECT_EQ(l.cp, 1);
  EXPECT_EQ(l.t, 2);
  EXPECT_TRUE(l.tp_comm_overlap);
  EXPECT_EQ(r.best.front().step_ns, 8904034916) << layout_summary(l);
  EXPECT_EQ(r.lost.size(), r.best.size() - 1);
  bool named = false;
  for (const std::string& w : r.why) named = named || w.rfind("tp-comm-overlap = on: the TP collectives run under", 0) == 0;
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace pipescope
