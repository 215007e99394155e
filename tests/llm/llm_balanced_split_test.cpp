// The balanced split of the layers (llm/balanced_split.h) and the search that tries it
// beside the even one (llm/layout_search.h): over random (L, p, v, costs) the split sums to
// L, gives every chunk a layer and no rank more than its cap, and its bottleneck is the
// brute force's least (so never above the even split's); a worked example gives the number
// by hand; on the shipped Hugging Face configs the search with balanced splits is never
// slower than the even-only search it replaced, by the wins stated below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>

#include "interop/hf_config.h"
#include "llm/balanced_split.h"
#include "llm/layout_search.h"
#include "llm/pipeline_schedule.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

GpuModel h100() { return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"); }

ParallelLayout pipeline(int p, int v, ScheduleKind kind) {
  ParallelLayout l;
  l.p = p, l.v = v, l.schedule = kind, l.microbatches = 4 * p;
  return l;
}

// The reference: every composition of L into p * v chunks of >= 1 layer (each rank at most
// its cap), the least bottleneck.
int64_t brute_force_bottleneck(int layers, const ParallelLayout& l, const SplitCosts& costs,
                               const std::vector<int>& caps) {
  const int chunks = l.p * l.v;
  std::vector<int> split(static_cast<std::size_t>(chunks), 1);
  int64_t best = -1;
  std::function<void(int, int)> walk = [&](int c, int left) {
    if (c + 1 == chunks) {
      split[static_cast<std::size_t>(c)] = left;
      const std::vector<int> ranks = rank_layer_counts(split, l);
      for (std::size_t r = 0; r < caps.size(); ++r) {
        if (ranks[r] > std::max(caps[r], l.v)) return;
      }
      const int64_t b = bottleneck_ns(split, l, costs);
      if (best < 0 || b < best) best = b;
      return;
    }
    for (int n = 1; n <= left - (chunks - c - 1); ++n) {
      split[static_cast<std::size_t>(c)] = n;
      walk(c + 1, left - n);
    }
  };
  walk(0, layers);
  return best;
}

// L = 8 on p = 2, v = 1; a layer 10 ns, the embedding 1 ns, the head 25 ns. Even (4, 4):
// rank 0 41, rank 1 40 + 25 = 65. Moving layers off the head's rank: (5, 3) gives 51 and
// 55, (6, 2) 61 and 45, so (5, 3) with a bottleneck of 55, 15% under 65.
TEST(BalancedSplit, WorkedExampleMovesALayerOffTheHeadsRank) {
  const ParallelLayout l = pipeline(2, 1, ScheduleKind::OneFOneB);
  const SplitCosts costs{10, 1, 25};
  const std::vector<int> split = balanced_chunks(8, l, costs);
  EXPECT_EQ(split, (std::vector<int>{5, 3}));
  EXPECT_EQ(bottleneck_ns(split, l, costs), 55);
  EXPECT_EQ(bottleneck_ns({4, 4}, l, costs), 65);
  EXPECT_EQ(brute_force_bottleneck(8, l, costs, {}), 55);
  EXPECT_EQ(split_text(split, l), "5,3");
  // A cap of 4 layers on rank 0 (its memory full) leaves the even split: 65.
  EXPECT_EQ(balanced_chunks(8, l, costs, {4, 8}), (std::vector<int>{4, 4}));
  // Interleaved, p = 2, v = 2: ranks hold chunks (0, 2) and (1, 3); the head's chunk 3 gets
  // the fewest layers. Ranks (5, 3) as above, rank 1's 3 split 2 + 1 (10 + 10 + 25 on the
  // head's chunk 35, the other 20: 1 + 2 would give 30 and 20 + 25 = 45).
  const ParallelLayout il = pipeline(2, 2, ScheduleKind::Interleaved);
  EXPECT_EQ(balanced_chunks(8, il, costs), (std::vector<int>{2, 2, 3, 1}));
  EXPECT_EQ(split_text({2, 2, 3, 1}, il), "5,3 (chunks 2+3, 2+1)");
}

// Random (L, p, v, schedule, costs, caps): the split is a split, respects the caps, and
// reaches the brute force's bottleneck, which is never above the even split's.
TEST(BalancedSplit, RandomSplitsAreExactAgainstBruteForce) {
  std::mt19937 rng(38);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int p = 2 + static_cast<int>(rng() % 3);
    const ScheduleKind kind = rng() % 3 == 0 ? ScheduleKind::ZeroBubbleV
                              : rng() % 2  ? ScheduleKind::Interleaved
                                           : ScheduleKind::OneFOneB;
    const int v = kind == ScheduleKind::ZeroBubbleV ? 2 : kind == ScheduleKind::Interleaved ? 2 : 1;
    const int layers = p * v + static_cast<int>(rng() % (p * v == 2 ? 10 : 6));
    const ParallelLayout l = pipeline(p, v, kind);
    const SplitCosts costs{1 + static_cast<int64_t>(rng() % 1000), static_cast<int64_t>(rng() % 1500),
                           static_cast<int64_t>(rng() % 3000)};
    std::vector<int> caps;
    if (rng() % 3 == 0) {
      for (int r = 0; r < p; ++r) caps.push_back(v + static_cast<int>(rng() % layers));
    }
    const std::string seed = "trial " + std::to_string(trial) + ": L " + std::to_string(layers) + " p " +
                             std::to_string(p) + " v " + std::to_string(v) + " " + to_string(kind);
    const std::vector<int> split = balanced_chunks(layers, l, costs, caps);
    const int64_t reference = brute_force_bottleneck(layers, l, costs, caps);
    if (reference < 0) {  // the caps leave fewer than L
      EXPECT_TRUE(split.empty()) << seed;
      continue;
    }
    ASSERT_EQ(split.size(), static_cast<std::size_t>(p * v)) << seed;
    EXPECT_EQ(std::accumulate(split.begin(), split.end(), 0), layers) << seed;
    for (int n : split) EXPECT_GE(n, 1) << seed;
    const std::vector<int> ranks = rank_layer_counts(split, l);
    for (std::size_t r = 0; r < caps.size(); ++r) EXPECT_LE(ranks[r], std::max(caps[r], v)) << seed;
    EXPECT_EQ(bottleneck_ns(split, l, costs), reference) << seed;
    if (caps.empty()) {
      std::vector<int> even = even_chunks(layers, l);
      if (even.empty()) even.assign(static_cast<std::size_t>(p * v), layers / (p * v));
      if (std::find(even.begin(), even.end(), 0) == even.end()) {
        EXPECT_LE(bottleneck_ns(split, l, costs), bottleneck_ns(even, l, costs)) << seed;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 300);  // most trials have no cap that cuts the layers short
}


struct HfCase {
  const char* config;
  int gpus;
  int p;              // 0: searched; else pinned (--pipeline-model-parallel-size)
  double win_percent; // measured: 100 (even - balanced) / even, of the best step
};

// The searched best of each shipped config on H100s (s = 4096, 512 sequences a step,
// Megatron-LM, its launch reserve kept free, flash attention, the fitted h100-sxm.json),
// even-only (the search before issue 38) against balanced. Where the head costs more than a
// decoder layer (Llama 3's 128k vocabulary on small t) the head's rank gives up a layer or
// two: measured at this commit,
//   llama-3-8b   8 H100        29.878 s -> 29.795 s  -0.28%  (p 2 v 8: 17,15)
//   llama-3-70b  64 H100       30.922 s -> 30.921 s  -0.004% (p 2 v 8: 40,40, chunks 5..6+4)
//   llama-3-8b   64 H100, p 4   4.572 s ->  4.090 s  -10.54% (v 2: 8,9,9,6)
//   llama-3-8b   64 H100, p 8   5.578 s ->  4.675 s  -16.20% (v 2: 4,4,4,4,4,5,5,2)
//   qwen2-7b     16 H100, p 4  16.638 s -> 14.784 s  -11.14% (1f1b: 7,8,8,5)
//   llama-3-70b  64 H100, p 8  32.776 s -> 32.241 s  -1.63%  (v 5: 10,...,11,9)
// (fused attention makes a decoder layer cheaper, so the head weighs more than it did with
// unfused attention: the wins grew), and where the search keeps no pipeline the even split
// stays (0%): Llama-3-8B on 64 (t 2, 3.812 s), Mixtral-8x7B on 64 (5.688 s), Qwen2-7B on 16
// (13.521 s), Mistral-7B on 32 (7.129 s), Gemma-7B on 32 (8.282 s).
TEST(BalancedSplit, ShippedConfigsAreNeverSlowerBalanced) {
  for (const HfCase& c : {HfCase{"llama-3-8b", 8, 0, 0.2772}, HfCase{"llama-3-8b", 64, 0, 0.0},
                          HfCase{"llama-3-70b", 64, 0, 0.0044}, HfCase{"mixtral-8x7b", 64, 0, 0.0},
                          HfCase{"qwen2-7b", 16, 0, 0.0}, HfCase{"mistral-7b", 32, 0, 0.0},
                          HfCase{"gemma-7b", 32, 0, 0.0}, HfCase{"llama-3-8b", 64, 4, 10.5449},
                          HfCase{"llama-3-8b", 64, 8, 16.1961}, HfCase{"qwen2-7b", 16, 4, 11.1405},
                          HfCase{"llama-3-70b", 64, 8, 1.6306}}) {
    LlmSearchRequest q;
    q.shape = load_hf_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/" + c.config + ".json").shape;
    q.shape.sequence = 4096, q.gpus = c.gpus, q.global_batch = 512, q.top = 1, q.p = c.p;
    q.balanced_split = false;
    const LlmSearchResult even = search_layouts(q, h100());
    q.balanced_split = true;
    const LlmSearchResult balanced = search_layouts(q, h100());
    const LlmCandidate& best = balanced.best.front();
    const int64_t before = even.best.front().step_ns, after = best.step_ns;
    const double win = 100.0 * static_cast<double>(before - after) / static_cast<double>(before);
    const std::string what = std::string(c.config) + " on " + std::to_string(c.gpus) + " p " + std::to_string(c.p) +
                             ": " + layout_summary(best.layout) + " " +
                             (best.balanced ? split_text(best.layout.layers_per_chunk, best.layout) : "even");
    std::printf("%s: %.3f s -> %.3f s (-%.4f%%)\n", what.c_str(), before * 1e-9, after * 1e-9, win);
    EXPECT_LE(after, before) << what;
    EXPECT_NEAR(win, c.win_percent, 0.0001) << what;
    EXPECT_EQ(best.balanced, c.win_percent > 0) << what;
  }
}


// Under memory pressure the balanced split never makes the answer worse: at every capacity
// the balanced search's best fits and is no slower than the even-only search's (a balanced
// split that overflows is balanced again with the overflowing ranks capped at their even
// count, and the search's fit check has the last word). Llama-3-8B on 64 H100s, p 4 pinned,
// as the capacity falls from 80 to 30 GB. Measured (even-only -> balanced best): 80 and 60
// GB 4.653 -> 4.396 s, 50 GB 4.653 -> 4.476, 40 GB 4.729 -> 4.476, 35 GB 4.786 -> 4.555,
// 30 GB 4.786 -> 4.636: balanced wins at every capacity, by 3.1% to 5.5%.
TEST(BalancedSplit, TightMemoryNeverMakesItWorse) {
  LlmSearchRequest q;
  q.shape = load_hf_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-8b.json").shape;
  q.shape.sequence = 4096, q.gpus = 64, q.global_batch = 512, q.top = 1, q.p = 4;
  int wins = 0;
  for (double gb : {80.0, 60.0, 50.0, 40.0, 35.0, 30.0}) {
    q.memory_bytes = gb * 1e9;
    q.balanced_split = false;
    const LlmSearchResult even = search_layouts(q, h100());
    q.balanced_split = true;
    const LlmSearchResult balanced = search_layouts(q, h100());
    const LlmCandidate& best = balanced.best.front();
    EXPECT_LE(best.peak_bytes, q.memory_bytes) << gb << " GB";
    EXPECT_LE(best.step_ns, even.best.front().step_ns) << gb << " GB";
    wins += best.step_ns < even.best.front().step_ns ? 1 : 0;
  }
  EXPECT_EQ(wins, 6);
}

}  // namespace
}  // namespace pipescope
