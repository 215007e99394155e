// plan's explanation when memory binds: what v-min, v-half and v-zb save and cost against
// 1F1B on the winner's K, M, replicas and re-materialisation. The expected numbers are the
// simulated candidates' own (peak bytes, bubble), so the line restates the search, never
// a number of its own; with unbounded memory (everything fits) there is no such line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/report.h"
#include "interop/synth_profile.h"
#include "planner/search.h"

namespace pipescope {
namespace {

SearchRequest request(int64_t memory) {
  SearchRequest q;
  UniformSpec u;
  u.layers = 16;
  u.activation_bytes = 256 << 20;
  q.profile = make_uniform_profile(u);
  q.profile.source = q.profile_path = "uniform.json";
  q.hardware.name = "test";
  q.hardware.source = "test-hw.json";
  q.hardware.devices = 8;
  q.hardware.memory_bytes = memory;
  q.hardware.link = {100.0, 5.0};
  q.devices = 8;
  q.batch = 32;
  return q;
}

std::string tradeoff_line(const SearchResult& r) {
  for (const std::string& line : explain_winner(r)) {
    if (line.rfind("Memory binds;", 0) == 0) return line;
  }
  return {};
}

const Candidate* same_shape(const SearchResult& r, ScheduleKind kind) {
  const Candidate& w = winner(r);
  for (const Candidate& c : r.candidates) {
    if (c.schedule == kind && c.stages == w.stages && c.microbatches == w.microbatches && c.replicas == w.replicas &&
        c.recompute == w.recompute) {
      return &c;
    }
  }
  return nullptr;
}

TEST(PlanMemoryTradeoff, ExplainsWhatEachVShapeSavesAndCostsAgainst1F1B) {
  const SearchResult r = search_plans(request(int64_t{3} << 30));
  ASSERT_TRUE(std::any_of(r.candidates.begin(), r.candidates.end(), [](const Candidate& c) { return !c.pruned && !c.fits; }));
  const std::string line = tradeoff_line(r);
  ASSERT_FALSE(line.empty());
  const Candidate* base = same_shape(r, ScheduleKind::OneFOneB);
  ASSERT_NE(base, nullptr);
  const Candidate& w = winner(r);
  EXPECT_NE(line.find("against 1f1b at K=" + std::to_string(w.stages) + " M=" + std::to_string(w.microbatches) +
                      " (peak " + format_bytes(static_cast<double>(base->peak_bytes))),
            std::string::npos)
      << line;
  for (ScheduleKind kind : {ScheduleKind::VMin, ScheduleKind::VHalf, ScheduleKind::VZeroBubble}) {
    const Candidate* c = same_shape(r, kind);
    ASSERT_NE(c, nullptr) << to_string(kind);
    const double saved = static_cast<double>(base->peak_bytes - c->peak_bytes);
    const std::string expected = to_string(kind) + (saved >= 0 ? " saves " : " adds ") + format_bytes(std::abs(saved)) +
                                 " of peak for a bubble of ";
    EXPECT_NE(line.find(expected), std::string::npos) << expected << "\n" << line;
  }
}

TEST(PlanMemoryTradeoff, SaysNothingWhenEverythingFits) {
  const SearchResult r = search_plans(request(int64_t{1} << 50));
  ASSERT_TRUE(std::all_of(r.candidates.begin(), r.candidates.end(), [](const Candidate& c) { return c.pruned || c.fits; }));
  EXPECT_EQ(tradeoff_line(r), "");
}

}  // namespace
}  // namespace pipescope
