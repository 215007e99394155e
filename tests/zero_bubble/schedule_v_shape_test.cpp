// The controllable-memory V-shapes (v-min, v-half, v-zb; Qi et al., NeurIPS 2024) and
// PyTorch's looped schedules (looped-bfs, interleaved-zb). Uniform stages, no
// communication; V chunks each take half of a whole stage's T_F, T_B (I), T_W and
// activations. Peaks are counted in whole micro-batches: the simulator's peak activation
// bytes of a position over one whole-stage micro-batch's stash A (each chunk holds A/2),
// without weight_grad_bytes, so a chunk's stash lives from its F to its W (the paper's
// memory model: F +1, W -1). Expected numbers and why:
//   peaks, every K (even and odd), M >= 2K: v-min (K+4)/3 rounded down, v-half (K+2)/2
//     rounded down, v-zb K (the paper's section 3: about K/3, K/2 and 1F1B's K);
//   bubbles with T_F = T_B = T_W = T, M >= 2K, in chunk-op units T/2 (the longest
//     position span less M 3T): v-zb 0 (squeezed and filled, core/schedules/v_squeeze.h:
//     every position busy from its first op to its last, the paper's zero bubble, for
//     every M >= 2K-1; for K <= M < 2K-1 it is 2K-1-M, the lower bound: position 0 has
//     only M forwards of chunk 0 to run before the first forward of chunk 1 comes back to
//     it at 2K-1), v-half 3.5K-4.5 (K odd) or 3.5K-4 (even), v-min 4K-5 (4K-4 when 3
//     divides K), 1F1B 6(K-1). The v-half and v-min forms are ours, found by playing the
//     building block's order with unit ops (docs/schedules-new.md) and held here; they
//     order v-zb <= v-half <= v-min <= 1F1B for every K >= 2. As rates over 6M units:
//     1F1B (K-1)/M and v-min about 2K/3M, the paper's table (~p/m, ~2p/3m); v-half
//     7K/12M against its p/2m (its reordering pass is built for v-zb only).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "core/error.h"
#include "core/schedules/v_squeeze.h"
#include "sim/simulator.h"
#include "sim/stage_span.h"
#include "tests/support/test_support.h"

using namespace pipescope;

namespace {

constexpr int64_t kA = 1000;  // whole-stage activation bytes per micro-batch

CostModel costs(const Schedule& s, int64_t t) { return pipescope::testing::chunked_costs(s, t, t, t, kA); }

StepReport sim(const Schedule& s, int64_t t) {
  SimOptions o;
  o.record_timeline = true;
  return simulate(s, costs(s, t), Hardware::ideal(s.positions()), o);
}

constexpr ScheduleKind kV[] = {ScheduleKind::VMin, ScheduleKind::VHalf, ScheduleKind::VZeroBubble};

Schedule make(ScheduleKind kind, int K, int M) { return make_schedule({kind, K, M, required_chunks(kind) == 1 ? 1 : 2}); }

// Bubble in units of T/2 with T = 2 ns per whole-stage op.
int64_t bubble_units(ScheduleKind kind, int K, int M) {
  const Schedule s = make(kind, K, M);
  return longest_span(sim(s, 2)) - M * 3 * 2;
}

}  // namespace

TEST(VShape, EveryScheduleIsValidForManyShapes) {
  for (ScheduleKind kind : {ScheduleKind::VMin, ScheduleKind::VHalf, ScheduleKind::VZeroBubble, ScheduleKind::LoopedBFS,
                            ScheduleKind::InterleavedZeroBubble}) {
    for (int K = 1; K <= 17; ++K) {
      for (int M = 1; M <= 20; ++M) {
        for (int v : {1, 2, 3}) {
          if (required_chunks(kind) == 2 && v != 2) continue;
          if (kind == ScheduleKind::InterleavedZeroBubble && M % std::max(1, M / K) != 0) continue;
          for (bool rc : {false, true}) {
            const std::string at = to_string(kind) + " K=" + std::to_string(K) + " M=" + std::to_string(M) +
                                   " v=" + std::to_string(v) + (rc ? " recompute" : "");
            Schedule s;
            ASSERT_NO_THROW(s = make_schedule({kind, K, M, v, rc})) << at;
            EXPECT_NO_THROW(validate_schedule(s)) << at;
            EXPECT_EQ(s.num_ops(), static_cast<std::size_t>(K) * v * M * (kind == ScheduleKind::LoopedBFS ? 2 : 3) +
                                       (rc ? static_cast<std::size_t>(K) * v * M : 0))
                << at;
          }
        }
      }
    }
  }
}

TEST(VShape, PeakActivationsAreThePapers) {
  // Every K from 4 to 16, even and odd: the building block is placed for any K (the gaps
  // put the six passes in distinct slots mod 6 for each residue of K), so none is refused.
  for (int K = 4; K <= 16; ++K) {
    for (int M : {2 * K, 3 * K + 1}) {
      const std::string at = "K=" + std::to_string(K) + " M=" + std::to_string(M);
      auto peak = [&](ScheduleKind kind) {
        int64_t most = 0;
        for (const PositionReport& st : sim(make(kind, K, M), 1000).positions) most = std::max(most, st.peak_activation_bytes);
        return most;
      };
      EXPECT_EQ(peak(ScheduleKind::VMin), (K + 4) / 3 * kA) << at;
      EXPECT_EQ(peak(ScheduleKind::VHalf), (K + 2) / 2 * kA) << at;
      EXPECT_EQ(peak(ScheduleKind::VZeroBubble), K * kA) << at;
      EXPECT_EQ(peak(ScheduleKind::OneFOneB), K * kA) << at;  // 1F1B's first stage, for scale
    }
  }
}

TEST(VShape, BubblesFollowTheBuildingBlocksForms) {
  for (int K = 2; K <= 16; ++K) {
    for (int M : {2 * K, 4 * K}) {
      const std::string at = "K=" + std::to_string(K) + " M=" + std::to_string(M);
      const int64_t vzb = bubble_units(ScheduleKind::VZeroBubble, K, M);
      const int64_t vhalf = bubble_units(ScheduleKind::VHalf, K, M);
      const int64_t vmin = bubble_units(ScheduleKind::VMin, K, M);
      const int64_t one = bubble_units(ScheduleKind::OneFOneB, K, M);
      EXPECT_EQ(vzb, 0) << at;
      EXPECT_EQ(2 * vhalf, K % 2 ? 7 * K - 9 : 7 * K - 8) << at;
      EXPECT_EQ(vmin, K % 3 ? 4 * K - 5 : 4 * K - 4) << at;
      EXPECT_EQ(one, 6 * (K - 1)) << at;
      EXPECT_LE(vzb, vhalf) << at;
      EXPECT_LE(vhalf, vmin) << at;
      EXPECT_LE(vmin, one) << at;
    }
  }
}

TEST(VShape, StagesSitInAV) {
  // Chunk 0 (stage d) on position d, chunk 1 (stage 2K-1-d) back from K-1 to 0.
  for (ScheduleKind kind : kV) {
    const Schedule s = make(kind, 5, 10);
    EXPECT_EQ(s.stage_position, (std::vector<int>{0, 1, 2, 3, 4, 4, 3, 2, 1, 0})) << to_string(kind);
  }
}

TEST(VShape, LoopedBfsBubbleIsInterleavings) {
  // Breadth-first with uniform stages and free communication, M >= K: the bubble fraction
  // is interleaving's, (K-1) / (v M + K-1) (Lamy-Poirier 2023; the torch oracle checks
  // the same on PyTorch's own order).
  for (int K : {2, 4, 8}) {
    for (int v : {1, 2, 3}) {
      for (int M : {K, 2 * K, 3 * K + 1}) {
        const Schedule s = make_schedule({ScheduleKind::LoopedBFS, K, M, v});
        const StepReport r = sim(s, 3 * 1000);
        const double expected = static_cast<double>(K - 1) / (v * M + K - 1);
        EXPECT_NEAR(r.bubble_fraction, expected, 1e-9) << "K=" << K << " v=" << v << " M=" << M;
      }
    }
  }
}

TEST(VShape, InterleavedZbRefusesWhatPyTorchRefuses) {
  // ScheduleInterleavedZeroBubble: rounds = max(1, M / K), M a multiple of them; K = 4,
  // M = 9 gives 2 rounds and 9 % 2 = 1.
  try {
    make_schedule({ScheduleKind::InterleavedZeroBubble, 4, 9, 2});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("microbatches"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_schedule({ScheduleKind::VMin, 4, 8, 3}), InputError);  // a V holds 2 chunks
}


TEST(VShape, VzbIsZeroBubbleFromTwoKMinusOneMicrobatches) {
  // Zero bubble (the longest position span is a position's busy time, M 3T) for every
  // M >= 2K-1; below, 2K-1-M units of T/2, position 0's warm-up lower bound (header).
  for (int K = 2; K <= 16; ++K) {
    for (int M = K; M <= 5 * K; ++M) {
      const std::string at = "K=" + std::to_string(K) + " M=" + std::to_string(M);
      EXPECT_EQ(bubble_units(ScheduleKind::VZeroBubble, K, M), std::max(0, 2 * K - 1 - M)) << at;
      // The squeeze keeps 1F1B's memory on every position, not only the first: at most K
      // whole micro-batches (the cap of 2K chunk stashes).
      for (const PositionReport& st : sim(make(ScheduleKind::VZeroBubble, K, M), 1000).positions) {
        EXPECT_LE(st.peak_activation_bytes, K * kA) << at << " position " << st.index;
      }
    }
  }
}

TEST(VShape, SqueezeKeepsTheCapAndTheOps) {
  // The pass on PyTorch's ZB-V order (zb-v) with the cap 2K chunk stashes (K whole micro-
  // batches, zb-v's own peak): the same ops, valid, the peak still K, and zb-v's zero bubble
  // kept (0 units for M >= 2K-1). On v-zb's own result it changes nothing (a fixed point:
  // the play re-starts every op when v-zb started it).
  for (int K = 2; K <= 12; ++K) {
    for (int M : {2 * K - 1, 2 * K, 3 * K + 1}) {
      const std::string at = "K=" + std::to_string(K) + " M=" + std::to_string(M);
      const Schedule zbv = make_schedule({ScheduleKind::ZeroBubbleV, K, M, 2});
      const Schedule sq = squeeze_v_block(zbv, 2 * K);
      ASSERT_NO_THROW(validate_schedule(sq)) << at;
      EXPECT_EQ(sq.num_ops(), zbv.num_ops()) << at;
      int64_t most = 0;
      for (const PositionReport& st : sim(sq, 1000).positions) most = std::max(most, st.peak_activation_bytes);
      EXPECT_EQ(most, K * kA) << at;
      EXPECT_EQ(longest_span(sim(sq, 2)), M * 3 * 2) << at;
      const Schedule vzb = make(ScheduleKind::VZeroBubble, K, M);
      EXPECT_EQ(squeeze_v_block(vzb, 2 * K).position_ops, vzb.position_ops) << at;
    }
  }
  // Only split backward: a B op is refused.
  EXPECT_THROW(squeeze_v_block(make_1f1b(2, 2), 4), InputError);
}

TEST(VShape, VzbHasTheLeastBubbleForRandomUnequalTimes) {
  // Property: with T_F, T_I, T_W drawn apart (each 5..15 x 200 ns per whole stage, within a
  // factor 3 of each other, the same on every stage, free links), v-zb's bubble (longest
  // span less the busy time M (T_F + T_I + T_W)) is at most v-half's, v-min's and 1F1B's.
  // The rest of the equal-time order (v-half <= v-min <= 1F1B) does not survive unequal
  // times: the v-min and v-half blocks keep their fixed slots, delta - 1 slots of slack
  // per hop (docs/schedules-new.md), and v-min's bubble passes 1F1B's in most draws here
  // (printed, not asserted). Fixed seeds, printed.
  int ordered = 0;
  for (unsigned seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(5, 15), depth(2, 10);
    const int64_t f = 200 * pick(rng), i = 200 * pick(rng), w = 200 * pick(rng);
    const int K = depth(rng);
    const int M = 2 * K + static_cast<int>(rng() % 8);
    auto bubble = [&](ScheduleKind kind) {
      const Schedule s = make(kind, K, M);
      SimOptions o;
      o.record_timeline = true;
      const StepReport r = simulate(s, pipescope::testing::chunked_costs(s, f, i, w, kA), Hardware::ideal(K), o);
      return longest_span(r) - M * (f + i + w);
    };
    const int64_t vzb = bubble(ScheduleKind::VZeroBubble), vhalf = bubble(ScheduleKind::VHalf);
    const int64_t vmin = bubble(ScheduleKind::VMin), one = bubble(ScheduleKind::OneFOneB);
    const std::string at = "seed=" + std::to_string(seed) + " K=" + std::to_string(K) + " M=" + std::to_string(M) +
                           " F=" + std::to_string(f) + " I=" + std::to_string(i) + " W=" + std::to_string(w);
    std::printf("%s: v-zb %lld, v-half %lld, v-min %lld, 1f1b %lld ns\n", at.c_str(), static_cast<long long>(vzb),
                static_cast<long long>(vhalf), static_cast<long long>(vmin), static_cast<long long>(one));
    EXPECT_LE(vzb, vhalf) << at;
    EXPECT_LE(vzb, vmin) << at;
    EXPECT_LE(vzb, one) << at;
    ordered += vzb <= vhalf && vhalf <= vmin && vmin <= one;
  }
  std::printf("v-zb <= v-half <= v-min <= 1f1b in %d of 100 draws\n", ordered);
}
