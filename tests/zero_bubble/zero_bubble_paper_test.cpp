// zb-auto on the zero-bubble paper's own settings (experiments/zero_bubble_paper.h):
// its Table 6 times, a transformer layer's stash M_F = 34 h s b + 5 a s^2 b of which W
// keeps M_W = 32 h s b, optimizer post-validation. The numbers expected are the paper's
// Table 5 (experiments/zero_bubble_paper_data.h):
//   - at a byte budget of 2 p M_F, zb-auto's bubble is within 0.0015 of ZB-2p's or lower;
//   - at p M_F, at least as good as ZB-1p (to the paper's four digits);
//   - the handcrafted 1F1B, ZB-H1 and ZB-H2 reproduce Table 5 to one unit of its fourth digit on the
//     same times (a check of both transcriptions and of the simulator), except 1.5B at
//     m = 64, where all three come out 0.001-0.007 lower: one of that row's transcribed
//     times (T_comm, most likely) is not the paper's;
//   - no order is below the cap bound, and the bound sits at or below the paper's ZB-2p.
#include <gtest/gtest.h>

#include <cmath>

#include "experiments/zero_bubble_paper.h"

using namespace pipescope;

namespace {

constexpr double kTolerance = 0.0015;  // the paper's ILP-refined ZB-2p may lead a heuristic search by this much
constexpr double kDigits = 0.00005;    // half a unit of Table 5's fourth digit
constexpr double kOneUnit = 0.0001;    // one unit of it: the paper's times are rounded to 1 us too

const std::vector<PaperRow>& rows() {
  static const std::vector<PaperRow> table = zero_bubble_paper_table();
  return table;
}

std::string label(const PaperSetting& p) { return std::string(p.model->name) + " m=" + std::to_string(p.microbatches); }
std::string label(const PaperRow& r) { return label(r.paper); }

}  // namespace

TEST(ZeroBubblePaper, LayerStashIsTheTransformerFormula) {
  // 1.5B: h = 2304, a = 24, s = 1024, b = 6: 34 h s b + 5 a s^2 b = 481,296,384 + 754,974,720.
  EXPECT_EQ(paper_layer_stash_bytes(kPaper1_5B), 1'236'271'104);
  EXPECT_EQ(paper_layer_weight_grad_bytes(kPaper1_5B), int64_t{32} * 2304 * 1024 * 6);
  // A stage holds layers / p layers: 22 / 8 of them on the 1.5B model.
  const CostModel c = paper_costs(kPaperSettings[0]);
  ASSERT_EQ(c.stages.size(), 8u);
  EXPECT_EQ(c.stages[3].activation_bytes, std::llround(1'236'271'104.0 * 22 / 8));
  EXPECT_EQ(c.stages[3].activation_bytes - c.stages[3].freed_at_input_bytes,
            std::llround(32.0 * 2304 * 1024 * 6 * 22 / 8));
}

TEST(ZeroBubblePaper, WithinZb2pAtTwoPStashes) {
  ASSERT_EQ(rows().size(), 12u);
  for (const PaperRow& r : rows()) {
    EXPECT_LE(r.zb_2p, r.paper.bubble_zb_2p + kTolerance) << label(r);
  }
}

TEST(ZeroBubblePaper, AtLeastZb1pAtPStashes) {
  for (const PaperRow& r : rows()) {
    EXPECT_LE(r.zb_1p, r.paper.bubble_zb_1p + kDigits) << label(r);
    EXPECT_LE(r.zb_1p, r.ours_zb_h1 + 1e-12) << label(r) << ": zb-h1 is one of the candidates";
  }
}

TEST(ZeroBubblePaper, HandcraftedOrdersReproduceTable5) {
  for (const PaperRow& r : rows()) {
    if (r.paper.model == &kPaper1_5B && r.paper.microbatches == 64) {
      EXPECT_LT(r.ours_1f1b, r.paper.bubble_1f1b) << "the known mismatch of this row's transcription";
      continue;
    }
    EXPECT_NEAR(r.ours_1f1b, r.paper.bubble_1f1b, kOneUnit) << label(r);
    EXPECT_NEAR(r.ours_zb_h1, r.paper.bubble_zb_h1, kOneUnit) << label(r);
    EXPECT_NEAR(r.ours_zb_h2, r.paper.bubble_zb_h2, kOneUnit) << label(r);
  }
}

TEST(ZeroBubblePaper, CapBoundHolds) {
  for (const PaperRow& r : rows()) {
    EXPECT_LE(r.bound_2p, r.zb_2p_span + 1e-12) << label(r);
    EXPECT_LE(r.zb_2p_span, r.zb_2p + 1e-12) << label(r) << ": the steady step is at least the longest span";
    EXPECT_LE(r.bound_2p, r.paper.bubble_zb_2p + kDigits) << label(r);
  }
}

// The measured comparison (Tables 4, 6, 10) predicted on the paper's runtime, batched p2p.

const std::vector<PaperThroughput>& throughputs() {
  static const std::vector<PaperThroughput> table = zero_bubble_paper_throughputs();
  return table;
}

TEST(ZeroBubblePaperThroughput, OneF1BIsMicrobatchesPlusFillOverFreeLinks) {
  // Free links (T_comm = 0): batched p2p waits for nothing, and 1F1B with a fused
  // backward (B = I + W) runs (m + p - 1)(T_F + T_B + T_W) per step on uniform stages,
  // each step flushed and synchronized. 1.5B, m = 24: 31 x 45.945 ms = 1424.295 ms for
  // 24 x 6 samples on 8 GPUs: 144 / 1.424295 / 8 = 12.6378 samples per GPU per second.
  PaperSetting free = kPaperSettings[0];
  free.comm_ms = 0;
  const PaperThroughput r = zero_bubble_paper_throughput(free);
  EXPECT_NEAR(r.f1b1, 144.0 / 1.424295 / 8, 1e-3);
  // ZB-2p's post-validation gain is its synchronized step over the steady one.
  EXPECT_GT(r.zb_2p, r.zb_2p_synchronized);
}

TEST(ZeroBubblePaperThroughput, InterleavedRunsOneLayerPerChunk) {
  // --num-layers-per-virtual-pipeline-stage 1 with the embedding and head as layers.
  ASSERT_EQ(throughputs().size(), 12u);
  EXPECT_EQ(throughputs()[0].interleaved_chunks, 3);   // 1.5B: 24 / 8
  EXPECT_EQ(throughputs()[3].interleaved_chunks, 4);   // 6.2B: 32 / 8
  EXPECT_EQ(throughputs()[6].interleaved_chunks, 3);   // 14.6B: 48 / 16
  EXPECT_EQ(throughputs()[9].interleaved_chunks, 2);   // 28.3B: 64 / 32
}

TEST(ZeroBubblePaperThroughput, PostValidationNeverLoses) {
  // It only removes the step's barrier: the same order can only get faster.
  for (const PaperThroughput& r : throughputs()) {
    EXPECT_GE(r.zb_2p, r.zb_2p_synchronized - 1e-9) << label(r.paper);
  }
}

TEST(ZeroBubblePaperThroughput, MeasuredRankingsHold) {
  // The paper's Tables 4 and 6 (shared/reference/zero-bubble-measured.md): every ranking
  // it reports holds on the prediction from its own times. Table 10's gain is reported,
  // not asserted: the prediction is 3 points above the measured gain on three models and
  // 3.5 below on 1.5B (docs/schedules-new.md).
  for (const PaperClaim& c : paper_claims(throughputs())) {
    if (c.claim.rfind("Table 10", 0) == 0) {
      EXPECT_EQ(c.of, 4);
      continue;
    }
    EXPECT_TRUE(c.holds) << c.claim << ": " << c.detail;
    EXPECT_GT(c.of, 0) << c.claim;
  }
}

TEST(ZeroBubblePaperThroughput, ClaimsCountDisagreements) {
  // A made-up table where 1F1B beats ZB-1p on one setting: that claim names it.
  std::vector<PaperThroughput> rows = throughputs();
  rows[1].f1b1 = rows[1].zb_1p * 2;
  for (const PaperClaim& c : paper_claims(rows)) {
    if (c.claim == "Table 4: ZB-1p is faster than 1F1B") {
      EXPECT_EQ(c.agree, 11);
      EXPECT_EQ(c.of, 12);
      EXPECT_FALSE(c.holds);
      EXPECT_EQ(c.detail, "not on 1.5B m=32");
    }
  }
}
