// Korthikanti et al. (2022) reproduced by llm/'s time model on the A100 GPU file
// (experiments/korthikanti_table5_data.h): each of Table 5's eight iteration times
// within 10%, each full-recompute-vs-present-work throughput increase within 3 points,
// and Table 4's per-layer forward and backward of the 22B model within 10%.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "experiments/korthikanti_table5.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

GpuModel a100() { return load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/a100-80gb.json"); }

TEST(Korthikanti, Table5IterationTimesWithinTenPercent) {
  for (const KorthikantiRow& r : korthikanti_table5(a100())) {
    EXPECT_LT(std::abs(r.full_error()), 0.10) << r.paper.name << " full recompute: paper " << r.paper.full_recompute_s
                                              << " s, ours " << r.full_s() << " s";
    EXPECT_LT(std::abs(r.present_error()), 0.10) << r.paper.name << " SP + selective: paper " << r.paper.present_work_s
                                                 << " s, ours " << r.present_s() << " s";
  }
}

TEST(Korthikanti, Table5SpeedUpsWithinThreePoints) {
  for (const KorthikantiRow& r : korthikanti_table5(a100())) {
    EXPECT_LT(std::abs(r.speedup() - r.paper_speedup()), 0.03)
        << r.paper.name << ": paper +" << 100 * r.paper_speedup() << "%, ours +" << 100 * r.speedup() << "%";
  }
}

TEST(Korthikanti, Table5LayoutsAreThePapers) {
  // Table 3 and section 6: 8 / 64 / 280 / 512 GPUs, no data parallelism, 3 chunks for
  // 175B and 530B, so 4 and 1 layers per chunk; the 1T model's 2 layers per stage.
  const std::vector<KorthikantiRow> rows = korthikanti_table5(a100());
  ASSERT_EQ(rows.size(), 4u);
  const int gpus[] = {8, 64, 280, 512}, per_chunk[] = {48, 4, 1, 2};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(korthikanti_layout(rows[i].paper, true).gpus(), gpus[i]);
    EXPECT_EQ(rows[i].present.layers_per_chunk, per_chunk[i]) << rows[i].paper.name;
  }
  EXPECT_EQ(rows[1].present.schedule, "interleaved");
  EXPECT_EQ(rows[3].present.schedule, "1f1b");
}

TEST(Korthikanti, Table4LayerTimesWithinTenPercent) {
  for (const KorthikantiLayer& l : korthikanti_table4(a100())) {
    EXPECT_LT(std::abs(l.forward_ms() / l.paper.forward_ms - 1.0), 0.10)
        << l.paper.experiment << ": forward paper " << l.paper.forward_ms << " ms, ours " << l.forward_ms();
    EXPECT_LT(std::abs(l.backward_ms() / l.paper.backward_ms - 1.0), 0.10)
        << l.paper.experiment << ": backward paper " << l.paper.backward_ms << " ms, ours " << l.backward_ms();
  }
}

}  // namespace
}  // namespace pipescope
