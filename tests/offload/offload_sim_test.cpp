// The simulator's activation offload (sim/offload.h): the numbers each test expects and why.
//   An infinitely fast host link (bandwidth 0, latency 0: core/hardware.h's Link) keeps the
//   step time exactly; on 1F1B every position but the last then holds at most two stashes
//   (the F running and the reload for the B after it), the last one (F then its own B) one.
//   A slow link delays B by hand-computed amounts; selective delays nothing by construction.
#include <gtest/gtest.h>

#include <random>

#include "core/op_rules.h"
#include "sim/offload.h"
#include "sim/simulator.h"
#include "tests/support/test_support.h"

namespace pipescope {
namespace {

using testing::uniform_costs;


// uniform_costs with what build_cost_model's memory rules give F and R without
// transients (core/op_rules.h's stage_memory): F leaves its stash held, R its activations.
CostModel costs(int stages, int64_t f, int64_t b, int64_t activation_bytes = 1000) {
  CostModel c = uniform_costs(stages, stages, f, b, activation_bytes);
  for (StageCost& st : c.stages) {
    for (int rc = 0; rc < 2; ++rc) {
      const int64_t stash = stash_bytes(st, rc == 1);
      st.memory[rc].op[static_cast<std::size_t>(OpKind::Forward)] = {stash, stash};
      st.memory[rc].op[static_cast<std::size_t>(OpKind::Recompute)] = {st.activation_bytes, st.activation_bytes};
    }
  }
  return c;
}

Hardware host_linked(int devices, Link to_host, Link to_device) {
  Hardware h = Hardware::ideal(devices);
  h.host_link = HostLink{to_host, to_device};
  return h;
}

StepReport sim(const Schedule& s, const CostModel& c, const Hardware& h, Offload offload) {
  SimOptions o;
  o.offload = std::move(offload);
  return simulate(s, c, h, o);
}

TEST(OffloadSim, InfinitelyFastLinkKeepsTheStepAndHoldsTwoStashes) {
  // 1F1B, K = 4, M = 8, F = 1000 ns, B = 2000 ns, A = 1000 bytes of stash per F.
  // Without offload position d holds K - d stashes at its peak: 4A, 3A, 2A, A.
  // With all of it offloaded instantly: 2A, 2A, 2A, A (position 3 runs F then its own B:
  // the stash never leaves). Every position sends M A = 8000 bytes to the host.
  const int K = 4, M = 8;
  const CostModel c = costs(K, 1000, 2000, 1000);
  const Schedule s = make_1f1b(K, M);
  const Hardware h = host_linked(K, {0, 0}, {0, 0});
  const StepReport base = sim(s, c, h, {});
  const StepReport off = sim(s, c, h, {OffloadPolicy::All, {}});
  EXPECT_EQ(off.step_ns, base.step_ns);
  EXPECT_EQ(off.offload, "all");
  const int64_t expect_base[] = {4000, 3000, 2000, 1000}, expect_off[] = {2000, 2000, 2000, 1000};
  for (int d = 0; d < K; ++d) {
    EXPECT_EQ(base.positions[d].peak_activation_bytes, expect_base[d]) << "position " << d;
    EXPECT_EQ(off.positions[d].peak_activation_bytes, expect_off[d]) << "position " << d;
    EXPECT_EQ(off.positions[d].offloaded_bytes, M * 1000) << "position " << d;
    EXPECT_EQ(off.positions[d].offload_delay_ns, 0);
  }
}

TEST(OffloadSim, SlowLinkDelaysByHandComputedAmounts) {
  // 1F1B, K = 2, M = 2, F = B = 1000 ns, free p2p, A = 3000 bytes; to host 2 GB/s (1500 ns
  // per stash), to device 3 GB/s (1000 ns), no latency. Offload all:
  //   d0: F0 0-1000, off F0 1000-2500; F1 1000-2000, off F1 2500-4000. B0's reload is
  //       started by F1 (at 1000): max(1000, 2500) = 2500-3500.
  //   d1: F0 1000-2000, off 2000-3500, its own B0 next: reload 3500-4500, B0 4500-5500
  //       (2500 late); F1 5500-6500, off 6500-8000, reload 8000-9000, B1 9000-10000 (2500
  //       late): d1 loses 5000 ns.
  //   d0: B0's gradient at 5500 (its reload ended 3500): B0 5500-6500, which starts B1's
  //       reload at max(5500, 4000) = 5500-6500; B1's gradient at 10000: B1 10000-11000.
  // Step 11000 ns (6000 without offload). Each position held one stash on the host at a time.
  const CostModel c = costs(2, 1000, 1000, 3000);
  const Hardware h = host_linked(2, {2.0, 0}, {3.0, 0});
  const Schedule s = make_1f1b(2, 2);
  EXPECT_EQ(sim(s, c, h, {}).step_ns, 6000);
  const StepReport off = sim(s, c, h, {OffloadPolicy::All, {}});
  EXPECT_EQ(off.step_ns, 11000);
  EXPECT_EQ(off.positions[0].offload_delay_ns, 0);
  EXPECT_EQ(off.positions[1].offload_delay_ns, 5000);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(off.positions[d].offloaded_bytes, 6000);
    EXPECT_EQ(off.positions[d].host_peak_bytes, 3000);
  }
  // The timeline has the host tracks, with each transfer's time.
  int offloads = 0, reloads = 0;
  for (const TimelineEvent& e : off.timeline.events) {
    const std::string& track = off.timeline.tracks[e.track];
    if (e.category == "offload") {
      ++offloads;
      EXPECT_EQ(e.duration_ns, 1500);
      EXPECT_TRUE(track == host_track(0, true) || track == host_track(1, true)) << track;
    }
    if (e.category == "reload") {
      ++reloads;
      EXPECT_EQ(e.duration_ns, 1000);
      EXPECT_TRUE(track == "host ->0" || track == "host ->1") << track;
    }
  }
  EXPECT_EQ(offloads, 4);
  EXPECT_EQ(reloads, 4);
  EXPECT_FALSE(off.timeline.host_memory.empty());
}

TEST(OffloadSim, SelectiveTakesOnlyWhatFitsItsGap) {
  // The case above under selective. d1 (the last stage) runs each B right after its F: no
  // gap, nothing goes. d0: F0 alone would be back at 3500 for B0 at 3000: not taken; F1
  // (off 2000-3500, reload from B0's start 3000: 3500-4500, by B1 at 5000) is. So d0 sends
  // one stash, 3000 bytes, and the step stays 6000 ns.
  const CostModel c = costs(2, 1000, 1000, 3000);
  const Hardware h = host_linked(2, {2.0, 0}, {3.0, 0});
  const StepReport sel = sim(make_1f1b(2, 2), c, h, {OffloadPolicy::Selective, {}});
  EXPECT_EQ(sel.step_ns, 6000);
  EXPECT_EQ(sel.positions[0].offloaded_bytes, 3000);
  EXPECT_EQ(sel.positions[1].offloaded_bytes, 0);
  EXPECT_EQ(sel.positions[0].offload_delay_ns + sel.positions[1].offload_delay_ns, 0);
}

TEST(OffloadSim, PropertiesOverRandomPlans) {
  // 150 random (schedule, K, M, costs, host link, fraction) cases:
  //   infinitely fast link: the step time is the one without offload exactly, no position's
  //     activation peak rises, and `all` sends fraction x stash of every F;
  //   any link: selective delays nothing (time lost 0, the step exactly the one without
  //     offload) and sends at most what `all` sends; `all` is never faster than none.
  std::mt19937_64 rng(3303);
  for (int trial = 0; trial < 150; ++trial) {
    const uint64_t seed = rng();
    std::mt19937_64 r(seed);
    const int K = 1 + static_cast<int>(r() % 5), M = 1 + static_cast<int>(r() % (3 * K + 2));
    const int pick = static_cast<int>(r() % 4);
    const Schedule s = pick == 0 ? make_1f1b(K, M) : pick == 1 ? make_gpipe(K, M) : pick == 2 ? make_zb_h1(K, M)
                                                                              : make_1f1b(K, M, true);
    const CostModel c = costs(K, int64_t(100 + r() % 2000), int64_t(100 + r() % 4000), int64_t(1 + r() % 100000));
    const double f = static_cast<double>(r() % 5) / 4.0;
    const std::string at = testing::seed_note(seed) + " " + s.name + " K=" + std::to_string(K) + " M=" + std::to_string(M);
    const Hardware fast = host_linked(K, {0, 0}, {0, 0});
    const StepReport base = sim(s, c, fast, {});
    const StepReport all = sim(s, c, fast, {OffloadPolicy::All, {f}});
    EXPECT_EQ(all.step_ns, base.step_ns) << at;
    for (int d = 0; d < K; ++d) {
      EXPECT_LE(all.positions[d].peak_activation_bytes, base.positions[d].peak_activation_bytes) << at << " position " << d;
      const int64_t stash = stash_bytes(c.stages[d], s.r_ops);
      EXPECT_EQ(all.positions[d].offloaded_bytes, M * std::llround(f * static_cast<double>(stash))) << at;
    }
    const Hardware slow = host_linked(K, {static_cast<double>(1 + r() % 50), static_cast<double>(r() % 3)},
                                      {static_cast<double>(1 + r() % 50), static_cast<double>(r() % 3)});
    const StepReport sel = sim(s, c, slow, {OffloadPolicy::Selective, {f}});
    const StepReport slow_all = sim(s, c, slow, {OffloadPolicy::All, {f}});
    EXPECT_EQ(sel.step_ns, base.step_ns) << at;
    EXPECT_GE(slow_all.step_ns, base.step_ns) << at;
    for (int d = 0; d < K; ++d) {
      EXPECT_EQ(sel.positions[d].offload_delay_ns, 0) << at;
      EXPECT_LE(sel.positions[d].offloaded_bytes, slow_all.positions[d].offloaded_bytes) << at;
      EXPECT_LE(sel.positions[d].peak_activation_bytes, base.positions[d].peak_activation_bytes) << at;
    }
  }
}

TEST(OffloadSim, WithoutAHostLinkItIsAnInputError) {
  const CostModel c = costs(2, 1000, 1000);
  try {
    sim(make_1f1b(2, 2), c, Hardware::ideal(2), {OffloadPolicy::Selective, {}});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--offload selective: the hardware file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope
