// plan considers activation offload when memory binds (candidate_evaluation.h:
// consider_offload). Expected numbers and why:
//   - only offload fits: 2 layers on at most 2 devices (K = 1 or 2, each with one cut), so a
//     candidate's peak does not depend on the limit; the memory is set 1 byte below the
//     least peak any candidate has without offload, so no plan fits without it. GPipe
//     holds all M stashes (8 samples' activations on position 0 whatever M); offloaded,
//     a position holds about two micro-batches' (the one in F or B and the one reloading),
//     so K = 2 with M >= 2 fits; an infinitely fast host link (bandwidth
//     0, core/hardware.h) and no latency move each stash in no time, so selective offloads
//     every stash without delaying anything (sim/offload.h) and its step equals the step without
//     offload exactly ("at no cost"); the plan takes selective, its peak is the trial's,
//     and the line's saved bytes are the none and selective runs' peak difference.
//   - memory does not bind (unbounded): no candidate runs the offload trials, every plan
//     has offload none and no line speaks of offload.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/report.h"
#include "interop/synth_profile.h"
#include "planner/search.h"

namespace pipescope {
namespace {

SearchRequest request(int64_t memory) {
  SearchRequest q;
  UniformSpec u;
  u.layers = 2;  // K = 2 has one cut only, so every candidate's peak is the same with or without a limit
  u.activation_bytes = 256 << 20;
  q.profile = make_uniform_profile(u);
  q.profile.source = q.profile_path = "uniform.json";
  q.hardware.name = "test";
  q.hardware.source = "test-hw.json";
  q.hardware.devices = 2;
  q.hardware.memory_bytes = memory;
  q.hardware.link = {100.0, 5.0};
  q.hardware.host_link = HostLink{{0.0, 0.0}, {0.0, 0.0}};  // bandwidth 0: infinitely fast
  q.devices = 2;
  q.batch = 8;
  q.schedules = {ScheduleKind::GPipe};
  q.recomputes = {Recompute::None};
  q.threads = 1;
  return q;
}

std::vector<std::string> offload_lines(const SearchResult& r) {
  std::vector<std::string> out;
  for (const std::string& line : explain_winner(r)) {
    if (line.find("offload") != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST(PlanOffload, TakesSelectiveWhenOnlyOffloadFits) {
  const SearchResult unbounded = search_plans(request(0));
  int64_t least = 0;
  for (const Candidate& c : unbounded.candidates) least = least == 0 ? c.peak_bytes : std::min(least, c.peak_bytes);
  ASSERT_GT(least, 0);
  const SearchResult r = search_plans(request(least - 1));
  const Candidate& w = winner(r);  // throws when nothing fits: offload must have made one fit
  EXPECT_TRUE(w.offload_chosen);
  EXPECT_EQ(w.plan.offload.policy, OffloadPolicy::Selective);
  ASSERT_EQ(w.offload_trials.size(), 3U);  // none, selective, all
  const Candidate::OffloadTrial& none = w.offload_trials[0];
  const Candidate::OffloadTrial& sel = w.offload_trials[1];
  EXPECT_FALSE(none.fits);
  EXPECT_TRUE(sel.fits);
  EXPECT_EQ(sel.step_ns, none.step_ns);  // selective delays nothing
  EXPECT_EQ(w.step_ns, none.step_ns);
  EXPECT_EQ(w.stage_peak_bytes, sel.stage_peak_bytes);
  EXPECT_LE(w.peak_bytes, least - 1);
  for (const Candidate& c : r.candidates) {
    if (!c.pruned) {
      EXPECT_FALSE(c.offload_trials.empty()) << c.label();  // every candidate needed it
    }
  }
  int64_t saved = 0;
  for (std::size_t p = 0; p < sel.stage_peak_bytes.size(); ++p) {
    saved = std::max(saved, none.stage_peak_bytes[p] - sel.stage_peak_bytes[p]);
  }
  EXPECT_GT(saved, 0);
  const std::vector<std::string> lines = offload_lines(r);
  ASSERT_FALSE(lines.empty());
  const std::string& line = lines.back();
  std::printf("%s\n", line.c_str());
  EXPECT_NE(line.find("selective offload saves " + format_bytes(static_cast<double>(saved))), std::string::npos) << line;
  EXPECT_NE(line.find("at no cost"), std::string::npos) << line;
  EXPECT_NE(line.find("the plan takes selective."), std::string::npos) << line;
  EXPECT_NE(w.label().find("offload=selective"), std::string::npos) << w.label();
  EXPECT_EQ(candidate_to_json(w, 8).at("offload"), "selective");
}

TEST(PlanOffload, TakesNoneWhenMemoryDoesNotBind) {
  const SearchResult r = search_plans(request(0));
  for (const Candidate& c : r.candidates) {
    EXPECT_TRUE(c.offload_trials.empty()) << c.label();
    EXPECT_FALSE(c.offload_chosen) << c.label();
    EXPECT_EQ(c.plan.offload.policy, OffloadPolicy::None) << c.label();
  }
  EXPECT_TRUE(offload_lines(r).empty());
  EXPECT_FALSE(candidate_to_json(winner(r), 8).contains("offload"));
}

TEST(PlanOffload, NoHostLinkNoTrials) {
  SearchRequest q = request(0);
  const SearchResult unbounded = search_plans(q);
  int64_t least = 0;
  for (const Candidate& c : unbounded.candidates) least = least == 0 ? c.peak_bytes : std::min(least, c.peak_bytes);
  q = request(least - 1);
  q.hardware.host_link.reset();
  const SearchResult r = search_plans(q);
  for (const Candidate& c : r.candidates) EXPECT_TRUE(c.offload_trials.empty()) << c.label();
  EXPECT_THROW(winner(r), InputError);  // nothing fits and nothing may offload
}

}  // namespace
}  // namespace pipescope
