// Heterogeneous devices placed by the search: with `speed`s that differ, each candidate
// is also tried on the devices sorted fastest first and slowest first. A replicated
// position runs at its slowest replica, so on devices whose speeds alternate 1, 2, 1, 2,
// ... the listed order gives every pair speed 1, while the sorted placement pairs the
// fast devices together: its winner must be faster, and simulate to its step time.
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "core/synth_profile.h"
#include "planner/search.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

SearchRequest alternating_speeds(bool place_by_speed) {
  SearchRequest q;
  UniformSpec u;
  u.layers = 16;
  q.profile = make_uniform_profile(u);
  q.profile_path = "uniform.json";
  q.hardware.name = "8 devices, speeds 1 and 2 alternating";
  q.hardware.devices = 8;
  q.hardware.memory_bytes = int64_t{80} << 30;
  q.hardware.link = {100.0, 5.0};
  q.hardware.speed = {1, 2, 1, 2, 1, 2, 1, 2};
  q.devices = 8;
  q.batch = 64;
  q.threads = 1;
  q.place_by_speed = place_by_speed;
  return q;
}

TEST(SpeedPlacement, SortedPlacementBeatsTheListedOrderOnAlternatingSpeeds) {
  const SearchResult listed = search_plans(alternating_speeds(false));
  const SearchRequest q = alternating_speeds(true);
  const SearchResult placed = search_plans(q);
  // Three placements per candidate (listed, fastest-first, slowest-first), one for K = 1.
  std::size_t expected = 0;
  for (const Candidate& c : listed.candidates) expected += c.stages == 1 ? 1 : 3;
  EXPECT_EQ(placed.candidates.size(), expected);
  const Candidate& w = winner(placed);
  EXPECT_FALSE(w.placement.empty()) << w.label();
  EXPECT_LT(w.step_ns, winner(listed).step_ns);
  // Every replica group of the winner has devices of one speed.
  for (const PlanStage& st : w.plan.stages) {
    for (int d : st.devices) EXPECT_EQ(q.hardware.device_speed(d), q.hardware.device_speed(st.devices.front()));
  }
  const StepReport again = simulate(make_schedule(w.plan.schedule_spec()), build_cost_model(q.profile, w.plan, q.hardware),
                                    q.hardware, {.record_timeline = false, .model = ""});
  EXPECT_EQ(again.step_ns, w.step_ns);
  std::printf("listed order: %s %.3f ms; placed: %s %.3f ms\n", winner(listed).label().c_str(),
              static_cast<double>(winner(listed).step_ns) / 1e6, w.label().c_str(), static_cast<double>(w.step_ns) / 1e6);
}

TEST(SpeedPlacement, EqualSpeedsAddNoCandidates) {
  SearchRequest q = alternating_speeds(true);
  q.hardware.speed.clear();
  SearchRequest off = q;
  off.place_by_speed = false;
  EXPECT_EQ(enumerate_candidates(q).size(), enumerate_candidates(off).size());
}

}  // namespace
}  // namespace pipescope
