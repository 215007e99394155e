// The frontier table (experiments/frontier_table.h) pinned against closed forms and the
// simulator. Expected numbers and why:
//   - mark_frontier: the hand example (step, peak) = (1,5) (2,3) (3,4) (4,1) (2,3) has
//     (3,4) dominated by (2,3) and the rest on it (ties stay); over random rows it equals
//     the brute-force definition (fixed seeds).
//   - an infinitely fast host link (bandwidth 0, no latency): every transfer takes no
//     time, so no reload is late and offload all keeps each plan's step exactly
//     (sim/offload.h), for every schedule on the 1.3B profile.
//   - selective delays nothing (sim/offload.h's rule): each row's plan simulated again with
//     selective offload has the step of the same plan without it.
//   - the 1f1b row without offload is the planner's own candidate: search_plans for 1f1b,
//     K = 8, r = 1, M = 32, no recompute, gives the same step and per-position peaks.
//   - a hardware file without host_link: InputError naming the file and host_link.
#include <gtest/gtest.h>

#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "experiments/frontier_table.h"
#include "planner/search.h"
#include "sim/simulator.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

const std::string kSource = PIPESCOPE_SOURCE_DIR;

FrontierSetting setting() {
  FrontierSetting s;
  s.profile_path = kSource + "/profiles/gpt-1.3b-h200.json";
  s.hardware_path = kSource + "/profiles/gpus/h200.json";
  return s;
}

FrontierRow row(int64_t step, int64_t peak) {
  FrontierRow r;
  r.step_ns = step;
  r.max_peak_bytes = peak;
  return r;
}

TEST(FrontierTable, MarksTheParetoFrontier) {
  std::vector<FrontierRow> rows = {row(1, 5), row(2, 3), row(3, 4), row(4, 1), row(2, 3)};
  mark_frontier(rows);
  EXPECT_TRUE(rows[0].frontier);
  EXPECT_TRUE(rows[1].frontier);
  EXPECT_FALSE(rows[2].frontier);
  EXPECT_TRUE(rows[3].frontier);
  EXPECT_TRUE(rows[4].frontier);
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<FrontierRow> rs;
    for (int i = 0; i < 30; ++i) rs.push_back(row(rng() % 10, rng() % 10));
    rs[static_cast<std::size_t>(seed) % rs.size()].refused = "refused";
    mark_frontier(rs);
    for (const FrontierRow& a : rs) {
      bool dominated = false;
      for (const FrontierRow& b : rs) {
        if (!b.refused.empty()) continue;
        dominated = dominated || ((b.step_ns < a.step_ns && b.max_peak_bytes <= a.max_peak_bytes) ||
                                  (b.step_ns <= a.step_ns && b.max_peak_bytes < a.max_peak_bytes));
      }
      EXPECT_EQ(a.frontier, a.refused.empty() && !dominated) << "seed " << seed;
    }
  }
}

TEST(FrontierTable, InfinitelyFastHostLinkKeepsEveryStep) {
  FrontierSetting s = setting();
  s.host_link = HostLink{{0.0, 0.0}, {0.0, 0.0}};
  s.host_link_name = "an infinitely fast host link";
  const std::vector<FrontierRow> rows = frontier_table(s);
  ASSERT_EQ(rows.size(), 3 * s.schedules.size());
  for (std::size_t k = 0; k < rows.size(); k += 3) {
    const FrontierRow &none = rows[k], &all = rows[k + 2];
    ASSERT_TRUE(none.refused.empty()) << none.schedule << ": " << none.refused;
    // The same plan (cut) with offload all: the cut of the all row may differ (it fits
    // differently), so simulate the none row's plan with all offload.
    Plan p = none.plan;
    p.offload = Offload{OffloadPolicy::All, {}};
    Hardware h = load_hardware(s.hardware_path);
    h.host_link = s.host_link;
    SimOptions o;
    o.record_timeline = false;
    o.p2p = p2p_of(p, h);
    o.offload = p.offload;
    const StepReport r = simulate(schedule_for(p), build_cost_model(load_profile(s.profile_path), p, h), h, o);
    EXPECT_EQ(r.step_ns, none.step_ns) << none.schedule;
    EXPECT_LE(r.peak_memory_bytes(), none.max_peak_bytes) << none.schedule;
    EXPECT_GT(all.host_peak_bytes, 0) << all.schedule;
  }
}

TEST(FrontierTable, SelectiveDelaysNothing) {
  const FrontierSetting s = setting();
  const Hardware h = load_hardware(s.hardware_path);
  const Profile profile = load_profile(s.profile_path);
  for (const FrontierRow& none : frontier_table(s)) {
    if (none.offload != OffloadPolicy::None) continue;
    Plan p = none.plan;
    p.offload = Offload{OffloadPolicy::Selective, {}};
    SimOptions o;
    o.record_timeline = false;
    o.p2p = p2p_of(p, h);
    o.offload = p.offload;
    EXPECT_EQ(simulate(schedule_for(p), build_cost_model(profile, p, h), h, o).step_ns, none.step_ns) << none.schedule;
  }
}

TEST(FrontierTable, OneFOneBRowIsThePlannersCandidate) {
  const FrontierSetting s = setting();
  const std::vector<FrontierRow> rows = frontier_table(s);
  const FrontierRow& one = rows[3];  // gpipe x 3, then 1f1b none
  ASSERT_EQ(one.schedule, "1f1b");
  ASSERT_EQ(one.offload, OffloadPolicy::None);
  SearchRequest q;
  q.profile = load_profile(s.profile_path);
  q.profile_path = s.profile_path;
  q.hardware = load_hardware(s.hardware_path);
  q.devices = 8;
  q.batch = 64;
  q.schedules = {ScheduleKind::OneFOneB};
  q.recomputes = {Recompute::None};
  q.threads = 1;
  const SearchResult r = search_plans(q);
  const Candidate* c = nullptr;
  for (const Candidate& x : r.candidates) {
    if (x.stages == 8 && x.replicas == 1 && x.microbatches == 32 && x.stage_replicas.empty()) c = &x;
  }
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->step_ns, one.step_ns);
  EXPECT_EQ(c->stage_peak_bytes, one.stage_peak_bytes);
}

TEST(FrontierTable, RefusesAHardwareFileWithoutHostLink) {
  FrontierSetting s = setting();
  s.hardware_path = kSource + "/profiles/h200-8x-nvlink.json";
  try {
    frontier_table(s);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("host_link"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("h200-8x-nvlink.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope
