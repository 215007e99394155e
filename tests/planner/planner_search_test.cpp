// The plan search: identical results whatever the thread count, the winner really is
// the fastest fitting candidate, the Pareto front is the non-dominated set, impossible
// requests are refused with their reason, and the simulator's ring all-reduce equals
// the closed form 2 (r-1)/r x bytes / bandwidth + 2 (r-1) latencies.
#include <gtest/gtest.h>

#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "interop/synth_profile.h"
#include "planner/plan_builder.h"
#include "planner/search.h"
#include "sim/simulator.h"
#include "tests/planner/planner_test_util.h"
#include "tests/support/input_error.h"

namespace pipescope {
namespace {

Hardware hardware(int devices, int64_t memory) {
  Hardware h;
  h.name = "test";
  h.source = "test-hw.json";
  h.devices = devices;
  h.memory_bytes = memory;
  h.link = {100.0, 5.0};
  h.devices_per_node = 4;
  h.inter_node = {10.0, 20.0};
  return h;
}

SearchRequest request(int devices, int64_t batch, int64_t memory) {
  SearchRequest q;
  UniformSpec u;
  u.layers = 12;
  u.heavy_every = 3;
  u.heavy_factor = 3.0;
  u.activation_bytes = 64 << 20;
  q.profile = make_uniform_profile(u);
  q.profile.source = "uneven.json";
  q.profile_path = "uneven.json";
  q.hardware = hardware(devices, memory);
  q.devices = devices;
  q.batch = batch;
  return q;
}

TEST(PlanSearch, ResultsDoNotDependOnTheThreadCount) {
  SearchRequest q = request(8, 32, int64_t{3} << 30);
  q.threads = 1;
  const SearchResult one = search_plans(q);
  const std::string expected = search_to_json(one, q).dump();
  for (int threads : {2, 3, 8}) {
    q.threads = threads;
    EXPECT_EQ(search_to_json(search_plans(q), q).dump(), expected) << threads << " threads";
  }
  // 4 (K, r) pairs x divisors M of 32 with r | 32/M x schedules x recompute: enough to matter.
  EXPECT_GT(one.candidates.size(), 100u);
}

TEST(PlanSearch, TheWinnerIsTheFastestFittingCandidateAndSimulatesToItsStepTime) {
  const SearchRequest q = request(8, 32, int64_t{3} << 30);
  const SearchResult r = search_plans(q);
  const Candidate& w = winner(r);
  for (const Candidate& c : r.candidates) {
    if (c.fits) {
      EXPECT_GE(c.step_ns, w.step_ns) << c.label();
    }
  }
  const StepReport again = simulate(schedule_for(w.plan), build_cost_model(q.profile, w.plan, q.hardware),
                                    q.hardware, {.record_timeline = false, .model = ""});
  EXPECT_EQ(again.step_ns, w.step_ns);
  EXPECT_TRUE(again.fits());
  EXPECT_FALSE(explain_winner(r).empty());
}

TEST(PlanSearch, ParetoFrontIsExactlyTheNonDominatedFittingSet) {
  const SearchResult r = search_plans(request(8, 32, int64_t{3} << 30));
  int front = 0;
  for (const Candidate& a : r.candidates) {
    if (!a.fits) {
      EXPECT_FALSE(a.pareto);
      continue;
    }
    bool dominated = false, duplicate_earlier = false;
    for (const Candidate& b : r.candidates) {
      if (!b.fits || &a == &b) continue;
      if (b.step_ns <= a.step_ns && b.peak_bytes <= a.peak_bytes &&
          (b.step_ns < a.step_ns || b.peak_bytes < a.peak_bytes)) {
        dominated = true;
      }
      if (b.step_ns == a.step_ns && b.peak_bytes == a.peak_bytes && b.index < a.index) duplicate_earlier = true;
    }
    EXPECT_EQ(a.pareto, !dominated && !duplicate_earlier) << a.label();
    front += a.pareto;
  }
  EXPECT_GE(front, 2);
}

TEST(PlanSearch, IncludesPlainDataParallelismAndPlainPipelining) {
  const std::vector<Candidate> cs = enumerate_candidates(request(8, 32, 0));
  bool data_parallel = false, pipeline = false;
  for (const Candidate& c : cs) {
    data_parallel = data_parallel || (c.stages == 1 && c.replicas == 8);
    pipeline = pipeline || (c.stages == 8 && c.replicas == 1);
  }
  EXPECT_TRUE(data_parallel);
  EXPECT_TRUE(pipeline);
}

// SearchRequest::stages pins K (plan --pipeline-model-parallel-size): every candidate has
// that K, and they are exactly the unpinned search's candidates with that K, in the same
// order (8 devices, batch 32: K = 4 gives r = 2). A K that does not divide D, exceeds
// --max-stages or the 12 layers is refused naming the flag.
TEST(PlanSearch, PinnedStagesKeepOnlyThatKAndRefuseAnImpossibleOne) {
  SearchRequest q = request(8, 32, 0);
  std::vector<std::string> want;
  for (const Candidate& c : enumerate_candidates(q)) {
    if (c.stages == 4) want.push_back(c.label());
  }
  q.stages = 4;
  std::vector<std::string> got;
  for (const Candidate& c : enumerate_candidates(q)) {
    EXPECT_EQ(c.stages, 4) << c.label();
    EXPECT_EQ(c.replicas, 2) << c.label();
    got.push_back(c.label());
  }
  EXPECT_GT(got.size(), 10u);
  EXPECT_EQ(got, want);
  const std::pair<int, const char*> refused[] = {
      {3, "--pipeline-model-parallel-size 3: K does not divide the 8 devices"},
      {-1, "--pipeline-model-parallel-size -1: expected at least 1"}};
  for (const auto& [k, message] : refused) {
    q.stages = k;
    try {
      enumerate_candidates(q);
      ADD_FAILURE() << "K = " << k << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  q.stages = 4, q.max_stages = 2;
  EXPECT_THROW(enumerate_candidates(q), InputError);
  q = request(16, 32, 0);
  q.hardware = hardware(16, 0);
  q.stages = 16;  // 12 layers
  EXPECT_THROW(enumerate_candidates(q), InputError);
}

TEST(PlanSearch, NothingFitsNamesTheSmallestMemoryAnyCandidateNeeds) {
  SearchRequest q = request(4, 16, 1 << 20);  // 1 MiB per device: nothing fits
  const SearchResult r = search_plans(q);
  int64_t least = INT64_MAX;
  for (const Candidate& c : r.candidates) least = std::min(least, c.peak_bytes);
  try {
    winner(r);
    FAIL() << "a plan was chosen although none fits";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("smallest peak memory any of the"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(least) + " bytes"), std::string::npos) << e.what();
  }
}

TEST(PlanSearch, RefusesImpossibleRequests) {
  SearchRequest q = request(4, 16, 0);
  q.devices = 0;
  EXPECT_THROW(search_plans(q), InputError);
  q = request(4, 16, 0);
  q.batch = 0;
  EXPECT_THROW(search_plans(q), InputError);
  q = request(4, 16, 0);
  q.devices = 5;  // the hardware has 4
  EXPECT_THROW(search_plans(q), InputError);
  // 3 devices, batch 1: K = 3 exceeds nothing but r = 1 needs K = 3 <= 12 layers: fine;
  // with 2 layers only K = 1, r = 3 remains and 3 does not divide N/M = 1.
  q = request(3, 1, 0);
  q.profile.layers.resize(2);
  try {
    enumerate_candidates(q);
    FAIL() << "an impossible request was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no candidate plan"), std::string::npos) << e.what();
  }
}

// plan --recompute names the recomputes the search tries (core/recompute.h): auto is none
// then full (the order candidates were enumerated in before the enum), the old on / off are
// full / none. Each value gives the same candidates, so auto has exactly twice none's. A
// profile's plans run none or full: selective is refused by name, from the flag and from a
// library request alike, and so is an empty set.
TEST(PlanSearch, RecomputeChoicesAreNoneAndFull) {
  using Choices = std::vector<Recompute>;
  EXPECT_EQ(parse_recompute_choices("auto"), (Choices{Recompute::None, Recompute::Full}));
  EXPECT_EQ(parse_recompute_choices("full"), Choices{Recompute::Full});
  EXPECT_EQ(parse_recompute_choices("on"), Choices{Recompute::Full});
  EXPECT_EQ(parse_recompute_choices("none"), Choices{Recompute::None});
  EXPECT_EQ(parse_recompute_choices("off"), Choices{Recompute::None});
  const std::string selective = "--recompute: selective re-runs a transformer layer's attention core";
  EXPECT_EQ(testing::input_error_of([] { parse_recompute_choices("selective"); }).rfind(selective, 0), 0u);
  EXPECT_EQ(testing::input_error_of([] { parse_recompute_choices("both"); }),
            "--recompute: expected auto, none, full (or on, off), got \"both\"");
  SearchRequest q = request(8, 32, 0);
  const std::size_t both = enumerate_candidates(q).size();
  q.recomputes = {Recompute::None};
  const std::size_t none = enumerate_candidates(q).size();
  q.recomputes = {Recompute::Full};
  const std::vector<Candidate> full = enumerate_candidates(q);
  EXPECT_EQ(full.size(), none);
  EXPECT_EQ(both, 2 * none);
  for (const Candidate& c : full) EXPECT_EQ(c.recompute, Recompute::Full) << c.label();
  q.recomputes = {Recompute::Selective};
  EXPECT_EQ(testing::input_error_of([&] { enumerate_candidates(q); }).rfind(selective, 0), 0u);
  q.recomputes = {};
  EXPECT_EQ(testing::input_error_of([&] { enumerate_candidates(q); }), "--recompute: expected at least one of none, full");
}

TEST(PlanSearch, UniformStagesFollowTheGpipeClosedForm) {
  // toy-like uniform layers, ideal hardware, K = 4 r = 1 GPipe: step = (M + K - 1)(t_f + t_b).
  UniformSpec u;
  u.layers = 8;
  SearchRequest q;
  q.profile = make_uniform_profile(u);
  q.hardware = Hardware::ideal(4);
  q.devices = 4;
  q.batch = 16;
  q.schedules = {ScheduleKind::GPipe};
  q.recomputes = {Recompute::None};
  for (const Candidate& c : search_plans(q).candidates) {
    if (c.stages != 4) continue;
    const double b = 16.0 / c.microbatches;  // samples per micro-batch; 2 layers a stage
    const int64_t per_stage = ms_to_ns(2 * 1.0 * b) + ms_to_ns(2 * 2.0 * b);
    EXPECT_EQ(c.step_ns, (c.microbatches + 3) * per_stage) << c.label();
  }
}

TEST(RingAllReduce, SimulatorMatchesTheClosedForm) {
  // One stage on r devices: the step is M x (F + B) at b / r, then the ring all-reduce of
  // the parameters: 2 (r-1)/r x P / bandwidth + 2 (r-1) x latency.
  for (int r : {2, 3, 4, 8}) {
    SCOPED_TRACE("r = " + std::to_string(r));
    UniformSpec u;
    u.layers = 3;
    u.parameter_bytes = 300000000;
    const Profile p = make_uniform_profile(u);
    Hardware h = hardware(8, 0);
    PlanChoice c;
    c.stages = 1;
    c.replicas = r;
    c.microbatches = 4;
    c.microbatch_size = 24;
    c.hardware = &h;
    const Plan plan = make_plan(p, c).plan;
    const StepReport rep = simulate(schedule_for(plan), build_cost_model(p, plan, h), h,
                                    {.record_timeline = false, .model = ""});
    const double b = 24.0 / r;
    const int64_t compute = 4 * (ms_to_ns(3 * 1.0 * b) + ms_to_ns(3 * 2.0 * b));
    const int64_t P = 3 * int64_t{300000000};
    // Replicas 0..r-1 within a node of 4 use the 100 GB/s, 5 us link; r = 8 spans two nodes,
    // so the ring runs at the 10 GB/s, 20 us inter-node hop.
    const double bandwidth = r > 4 ? 10.0 : 100.0, latency_ns = r > 4 ? 20000 : 5000;
    const int64_t ring = std::llround(static_cast<double>(2 * (r - 1) * P / r) / bandwidth) +
                         2 * (r - 1) * static_cast<int64_t>(latency_ns);
    EXPECT_EQ(rep.step_ns, compute + ring);
  }
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

TEST(PlanSearch, NoCandidateEndsInALossAlone) {
  // A profile ending in a loss layer (pipescope_torch profile --loss) as heavy as the
  // rest together: the optimal cut of 2 stages would put the loss alone on the last one,
  // which torch cannot run (the loss is the last stage's loss_fn, not a module). Every
  // candidate the search keeps gives the last stage at least one model layer.
  SearchRequest q = request(4, 16, 0);
  q.profile.layers.back().spec = Json{{"type", "loss"}};
  for (double& f : q.profile.layers.back().forward_ms) f *= 40;
  for (double& b : q.profile.layers.back().backward_ms) b *= 40;
  const int L = q.profile.num_layers();
  const SearchResult r = search_plans(q);
  int multi_stage = 0;
  for (const Candidate& c : r.candidates) {
    const std::vector<std::pair<int, int>> ranges = c.plan.layer_ranges();
    if (ranges.size() < 2 || static_cast<int>(ranges.size()) > L - 1) continue;
    ++multi_stage;
    EXPECT_LT(ranges.back().first, L - 1) << c.label();
  }
  EXPECT_GT(multi_stage, 10);
}

}  // namespace
}  // namespace pipescope
