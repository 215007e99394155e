// Heterogeneous devices placed by the search: with `speed`s that differ, each candidate
// is placed on the listed devices or on them sorted fastest first or slowest first,
// whichever gives its partition the fastest slowest stage. A replicated
// position runs at its slowest replica, so on devices whose speeds alternate 1, 2, 1, 2,
// ... the listed order gives every pair speed 1, while the sorted placement pairs the
// fast devices together: its winner must be faster, and simulate to its step time.
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "interop/synth_profile.h"
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
  // The same candidates, each never slower than in the listed order by the partitioner.
  ASSERT_EQ(placed.candidates.size(), listed.candidates.size());
  for (std::size_t i = 0; i < placed.candidates.size(); ++i) {
    EXPECT_LE(placed.candidates[i].slowest_stage_ns, listed.candidates[i].slowest_stage_ns) << placed.candidates[i].label();
  }
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

TEST(SpeedPlacement, EqualSpeedsKeepTheListedOrder) {
  SearchRequest q = alternating_speeds(true);
  q.hardware.speed.assign(8, 1.5);
  for (const Candidate& c : search_plans(q).candidates) {
    EXPECT_TRUE(c.placement.empty()) << c.label();
    EXPECT_TRUE(c.device_order.empty()) << c.label();
  }
}

}  // namespace
}  // namespace pipescope
