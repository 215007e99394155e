// plan --objective: ranking by a statistic of the jittered step. With CV 0 every sample
// is the deterministic step, so each objective ranks exactly as the deterministic one;
// under jitter the winner has the least objective of all fitting candidates, the result
// does not depend on the thread count, and the explanation says whether the winner
// changed against the deterministic ranking.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "interop/synth_profile.h"
#include "planner/search.h"

namespace pipescope {
namespace {

SearchRequest request() {
  SearchRequest q;
  UniformSpec u;
  u.layers = 8;
  u.heavy_every = 3;
  u.heavy_factor = 3.0;
  q.profile = make_uniform_profile(u);
  q.profile.source = "uneven.json";
  q.profile_path = "uneven.json";
  q.hardware = Hardware::ideal(4);
  q.hardware.link = {100.0, 5.0};
  q.devices = 4;
  q.batch = 16;
  q.recomputes = {Recompute::None};
  q.jitter.samples = 50;
  q.jitter.seed = 3;
  return q;
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

TEST(PlanObjective, CvZeroRanksExactlyAsTheDeterministicStep) {
  SearchRequest q = request();
  const SearchResult step = search_plans(q);
  for (Objective o : {Objective::Mean, Objective::P50, Objective::P99}) {
    q.objective = o;
    const SearchResult r = search_plans(q);
    EXPECT_EQ(r.ranking, step.ranking) << to_string(o);
    for (int i : r.ranking) EXPECT_EQ(r.candidates[i].objective_ns, r.candidates[i].step_ns) << to_string(o);
    EXPECT_EQ(r.deterministic_winner, winner(r).index);
    EXPECT_TRUE(mentions(explain_winner(r), "The deterministic ranking picks the same plan."));
  }
}

TEST(PlanObjective, TheWinnerHasTheLeastP99AndThreadsDoNotMatter) {
  SearchRequest q = request();
  q.objective = Objective::P99;
  q.jitter.cv = 0.2;
  q.jitter.straggler_probability = 0.1;
  q.jitter.straggler_slowdown = 2;
  q.threads = 1;
  const SearchResult one = search_plans(q);
  const Candidate& w = winner(one);
  for (int i : one.ranking) {
    EXPECT_TRUE(one.candidates[i].sampled);
    EXPECT_GE(one.candidates[i].objective_ns, w.objective_ns) << one.candidates[i].label();
    EXPECT_EQ(one.candidates[i].objective_ns, one.candidates[i].p99_ns);
  }
  q.threads = 3;
  EXPECT_EQ(search_to_json(search_plans(q), q).dump(), search_to_json(one, q).dump());
  const bool changed = one.deterministic_winner != w.index;
  EXPECT_EQ(mentions(explain_winner(one), "The winner changes against the deterministic ranking"), changed);
}

TEST(PlanObjective, BadObjectivesAreRefused) {
  EXPECT_THROW(parse_objective("p95"), InputError);
  EXPECT_EQ(parse_objective("p99"), Objective::P99);
  SearchRequest q = request();
  q.objective = Objective::Mean;
  q.jitter.samples = 0;
  EXPECT_THROW(search_plans(q), InputError);
}

}  // namespace
}  // namespace pipescope
