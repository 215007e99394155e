// Schedule generators and the validator.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/schedule.h"

using namespace pipescope;

namespace {
int count_leading(const std::vector<Op>& ops, OpKind kind) {
  int n = 0;
  while (n < static_cast<int>(ops.size()) && ops[n].kind == kind) ++n;
  return n;
}
}  // namespace

TEST(Schedule, EveryGeneratorIsValidOverRandomShapes) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    int K = 1 + static_cast<int>(rng() % 8), M = 1 + static_cast<int>(rng() % 12);
    bool rc = rng() % 2;
    for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1}) {
      Schedule s = make_schedule({kind, K, M, 1, rc});
      EXPECT_NO_THROW(validate_schedule(s)) << to_string(kind) << " K=" << K << " M=" << M;
      size_t per = (kind == ScheduleKind::ZeroBubbleH1 ? 3 : 2) + (rc ? 1 : 0);
      EXPECT_EQ(s.num_ops(), per * K * M);
    }
    int v = 1 + static_cast<int>(rng() % 3);
    Schedule s = make_interleaved(K, K * (1 + M % 3), v, rc);
    EXPECT_NO_THROW(validate_schedule(s)) << "interleaved K=" << K << " v=" << v;
  }
}

TEST(Schedule, OneFOneBWarmupIsMegatrons) {
  // Stage s runs min(K - s - 1, M) forwards before its first backward, then one more F.
  Schedule s = make_1f1b(4, 8);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(count_leading(s.position_ops[d], OpKind::Forward), 4 - d);
  Schedule few = make_1f1b(4, 2);
  EXPECT_EQ(count_leading(few.position_ops[0], OpKind::Forward), 2);
}

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwardsInOrder) {
  Schedule s = make_gpipe(3, 4);
  for (const auto& ops : s.position_ops) {
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(ops[m].kind, OpKind::Forward);
      EXPECT_EQ(ops[m].microbatch, m);
      EXPECT_EQ(ops[4 + m].kind, OpKind::Backward);
      EXPECT_EQ(ops[4 + m].microbatch, m);
    }
  }
}

TEST(Schedule, InterleavedRefusesMNotMultipleOfK) {
  try {
    make_interleaved(4, 6, 2);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of the number of stages"), std::string::npos);
  }
  Schedule s = make_interleaved(2, 4, 3);
  EXPECT_EQ(s.stages(), 6);
  EXPECT_EQ(s.stage_position[5], 1);  // stage s lives on device s % K
}

TEST(Schedule, RecomputeComesRightBeforeEachBackward) {
  Schedule s = make_1f1b(3, 5, true);
  for (const auto& ops : s.position_ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::Backward) {
        ASSERT_GT(i, 0u);
        EXPECT_EQ(ops[i - 1], (Op{OpKind::Recompute, ops[i].stage, ops[i].microbatch}));
      }
    }
  }
}

TEST(Schedule, ValidatorRejectsMissingDuplicatedAndDeadlockedOps) {
  Schedule s = make_1f1b(2, 2);
  Schedule missing = s;
  missing.position_ops[1].pop_back();
  EXPECT_THROW(validate_schedule(missing), InputError);
  Schedule dup = s;
  dup.position_ops[0].push_back(dup.position_ops[0][0]);
  EXPECT_THROW(validate_schedule(dup), InputError);
  // Device 0 runs B(0,0) before F(0,0): it waits on a gradient that needs its own forward.
  Schedule dead = s;
  std::swap(dead.position_ops[0].front(), dead.position_ops[0].back());
  try {
    validate_schedule(dead);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot make progress"), std::string::npos) << e.what();
  }
}

TEST(Schedule, ZeroBubbleKeepsAtMostKMicrobatchesAlivePerStage) {
  for (int K : {2, 4, 8}) {
    for (int M : {1, 4, 16}) {
      Schedule s = make_zb_h1(K, M);
      for (int d = 0; d < K; ++d) {
        int alive = 0, peak = 0;
        for (const Op& op : s.position_ops[d]) {
          if (op.kind == OpKind::Forward) peak = std::max(peak, ++alive);
          if (op.kind == OpKind::BackwardWeight) --alive;
        }
        EXPECT_LE(peak, std::min(K, M)) << "K=" << K << " M=" << M << " device " << d;
      }
    }
  }
}

TEST(Schedule, DiagramShowsOneRowPerDevice) {
  std::string d = schedule_diagram(make_gpipe(2, 2));
  EXPECT_NE(d.find("device 0 |"), std::string::npos);
  EXPECT_NE(d.find("device 1 |"), std::string::npos);
  EXPECT_NE(d.find("F1"), std::string::npos);
}
