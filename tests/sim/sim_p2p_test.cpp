// --p2p blocking (sim/simulator.h): a sender waits until its tensor has arrived and a
// receive from another device holds its device for the transfer's time, as Megatron-LM's
// default p2p does; overlapped links run beside compute. Expected numbers and why: 1F1B,
// K = 2, M = 2, F = B = 1000 ns, 100 ns per transfer (latency, free bandwidth):
//   overlapped: d0 F0 0-1000, F1 1000-2000; d1 F0 1100-2100, B0 2100-3100, F1 3100-4100,
//     B1 4100-5100; d0 B0 3200-4200, B1 5200-6200: 6200 ns;
//   blocking:   d0 F0 0-1000 (+ send to 1100), F1 1100-2100 (to 2200); d1 F0 1100-2100,
//     B0 2100-3100 (+ send to 3200), F1 3300-4300 (receive 100 after 3200), B1 4300-5300
//     (to 5400); d0 B0 3200-4200, B1 5400-6400: 6400 ns;
//   batched:    a transfer starts when both ends have posted (the sender after its op,
//     the receiver before the op that needs it): d0 F0 0-1000, F1 1000-2000; d1 F0
//     1100-2100 (posted at 0, sent at 1000), B0 2100-3100, F1 3200-4200 (posted at 3100,
//     sent at 2000), B1 4200-5200; d0 B0 3200-4200 (posted 2000, sent 3100), B1 5300-6300
//     (posted 4200, sent 5200): 6300 ns, between the two.
#include <gtest/gtest.h>

#include <random>

#include "sim/simulator.h"

namespace pipescope {
namespace {

CostModel uniform_costs(int K, int64_t f, int64_t b) {
  CostModel c;
  for (int s = 0; s < K; ++s) {
    StageCost x;
    x.first_layer = s;
    x.end_layer = s + 1;
    x.forward_ns = x.recompute_ns = f;
    x.backward_ns = b;
    x.backward_input_ns = b / 2;
    x.backward_weight_ns = b - b / 2;
    x.activation_bytes = 1000;
    x.send_bytes = 1000;
    c.stages.push_back(x);
    c.position_device.push_back(s);
    c.position_devices.push_back({s});
    c.stage_position.push_back(s);
  }
  return c;
}

StepReport run(const Schedule& s, const CostModel& c, const Hardware& h, P2p p2p) {
  SimOptions o;
  o.p2p = p2p;
  return simulate(s, c, h, o);
}

TEST(BlockingP2p, HandComputedOneFOneB) {
  Hardware h = Hardware::ideal(2);
  h.link = {0.0, 0.1};  // 100 ns latency, free bandwidth
  const CostModel c = uniform_costs(2, 1000, 1000);
  EXPECT_EQ(run(make_1f1b(2, 2), c, h, P2p::Overlapped).step_ns, 6200);
  const StepReport blocking = run(make_1f1b(2, 2), c, h, P2p::Blocking);
  EXPECT_EQ(blocking.step_ns, 6400);
  EXPECT_EQ(run(make_1f1b(2, 2), c, h, P2p::Batched).step_ns, 6300);
  bool noted = false;
  for (const std::string& n : blocking.notes) noted |= n.find("p2p: blocking") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(BlockingP2p, NeverFasterThanOverlappedAndEqualOnFreeLinks) {
  // 200 random (schedule, K, M, times, link) cases: blocking's step is at least
  // overlapped's; with free links (0 latency, free bandwidth) they are equal.
  std::mt19937_64 rng(2626);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t seed = rng();
    std::mt19937_64 r(seed);
    const int K = 1 + static_cast<int>(r() % 6), M = 1 + static_cast<int>(r() % (3 * K + 2));
    const CostModel c = uniform_costs(K, int64_t(100 + r() % 2000), int64_t(100 + r() % 4000));
    const int pick = static_cast<int>(r() % 3);
    const Schedule s = pick == 0 ? make_1f1b(K, M) : pick == 1 ? make_gpipe(K, M) : make_zb_h1(K, M);
    Hardware h = Hardware::ideal(K);
    const std::string at = "seed " + std::to_string(seed) + " " + s.name + " K=" + std::to_string(K) + " M=" + std::to_string(M);
    EXPECT_EQ(run(s, c, h, P2p::Blocking).step_ns, run(s, c, h, P2p::Overlapped).step_ns) << at << " free links";
    EXPECT_EQ(run(s, c, h, P2p::Batched).step_ns, run(s, c, h, P2p::Overlapped).step_ns) << at << " free links";
    h.link = {static_cast<double>(1 + r() % 100), static_cast<double>(r() % 50) / 10.0};
    // Batched waits for both posts (never earlier than overlapped) but never holds the
    // sender (never later than blocking).
    const int64_t overlapped = run(s, c, h, P2p::Overlapped).step_ns, batched = run(s, c, h, P2p::Batched).step_ns;
    EXPECT_GE(run(s, c, h, P2p::Blocking).step_ns, overlapped) << at;
    EXPECT_GE(batched, overlapped) << at;
    EXPECT_LE(batched, run(s, c, h, P2p::Blocking).step_ns) << at;
  }
}

}  // namespace
}  // namespace pipescope
