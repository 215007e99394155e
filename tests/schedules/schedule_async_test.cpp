// The asynchronous schedules: PipeDream's weight stashing and PipeDream-2BW's
// double-buffered weights, against closed forms. Times are random per stage; the
// expected numbers follow from 1F1B's order without a flush (core/schedules/async.cpp)
// and the version rules of core/op_rules.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/support/cli_run.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "core/op_rules.h"
#include "core/schedule_io.h"
#include "planner/plan_builder.h"
#include "planner/search.h"
#include "sim/distribution.h"
#include "sim/simulator.h"
#include "tests/support/test_support.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using pipescope::testing::CliResult;
using pipescope::testing::run_cli;
using pipescope::testing::seed_note;
using pipescope::testing::uniform_costs;

namespace {

StepReport run(const Schedule& s, const CostModel& c, int steps = 1) {
  SimOptions o;
  o.record_timeline = false;
  o.steps = steps;
  return simulate(s, c, Hardware::ideal(s.positions()), o);
}

// Stage s runs F in f[s] and B in b[s] ns; everything else as uniform_costs.
CostModel stage_costs(const std::vector<int64_t>& f, const std::vector<int64_t>& b) {
  CostModel c = uniform_costs(static_cast<int>(f.size()), static_cast<int>(f.size()), 1, 1);
  for (std::size_t s = 0; s < f.size(); ++s) {
    c.stages[s].forward_ns = c.stages[s].recompute_ns = f[s];
    c.stages[s].backward_ns = b[s];
  }
  return c;
}

std::string profile_path() { return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-tiny-cpu.json"; }

}  // namespace

TEST(AsyncSchedule, OpListsAre1F1BOverAllStepsWithoutAFlush) {
  for (int K : {1, 2, 3, 5}) {
    for (int M : {1, 4, 7}) {
      for (int steps : {1, 2, 3}) {
        const Schedule ref = make_1f1b(K, M * steps);
        const Schedule pd = make_pipedream(K, M, steps);
        EXPECT_EQ(pd.position_ops, ref.position_ops) << "K=" << K << " M=" << M << " steps=" << steps;
        EXPECT_EQ(pd.weight_update, WeightUpdate::Stash);
        EXPECT_EQ(pd.steps, steps);
        EXPECT_EQ(pd.step_microbatches(), M);
        EXPECT_NO_THROW(validate_schedule(pd));
        if (M >= K) {
          const Schedule bw = make_2bw(K, M, steps);
          EXPECT_EQ(bw.position_ops, ref.position_ops);
          EXPECT_EQ(bw.weight_update, WeightUpdate::DoubleBuffer);
          EXPECT_NO_THROW(validate_schedule(bw));
        }
      }
    }
  }
}

TEST(AsyncSchedule, TwoBWNeedsAtLeastKMicroBatchesPerStep) {
  // PipeDream-2BW's m >= d: with M < K a stage would need a third version.
  try {
    make_2bw(4, 3, 2);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("M >= K"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_schedule({ScheduleKind::OneFOneB, 2, 4, 1, false, 0, 3}), InputError);  // steps on a flushed kind
}

TEST(AsyncSchedule, ValidatorNamesAVersionA2BWOrderDoesNotHaveYet) {
  // GPipe's order over 3 steps on device 0: F of step 2 (version 1) comes before the
  // update of step 0 (which makes version 1).
  Schedule s = make_2bw(2, 2, 3);
  std::vector<Op> gpipe;
  for (int m = 0; m < 6; ++m) gpipe.push_back({OpKind::Forward, 0, m});
  for (int m = 0; m < 6; ++m) gpipe.push_back({OpKind::Backward, 0, m});
  s.position_ops[0] = gpipe;
  try {
    validate_schedule(s, "x.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("x.json: schedule: device 0, op 4: F(stage 0, micro-batch 4) of step 2 needs weight version 1"),
              std::string::npos)
        << what;
  }
}

TEST(AsyncSchedule, WeightVersionsFollowTheRules) {
  // PipeDream, K = 3, position 0: 3 micro-batches in flight, each on its own version.
  const Schedule pd = make_pipedream(3, 4, 2);
  WeightVersions v(pd);
  std::vector<int> forward_version(8, -1);
  int most = 1;
  for (const Op& op : pd.position_ops[0]) {
    const int used = v.use(op);
    if (op.kind == OpKind::Forward) forward_version[op.microbatch] = used;
    EXPECT_EQ(used, forward_version[op.microbatch]) << "weight stashing: B uses F's version";
    v.finish(op);
    most = std::max(most, 1 + v.kept_copies());
  }
  EXPECT_EQ(most, 3);                      // K - s versions on position s = 0
  EXPECT_EQ(v.current(), 8);               // one update per micro-batch
  // 2BW, K = 2, M = 2, 3 steps: step t runs on version max(t - 1, 0); one update per step.
  const Schedule bw = make_2bw(2, 2, 3);
  WeightVersions w(bw);
  for (const Op& op : bw.position_ops[0]) {
    EXPECT_EQ(w.use(op), std::max(op.microbatch / 2 - 1, 0)) << "micro-batch " << op.microbatch;
    w.finish(op);
    EXPECT_LE(1 + w.kept_copies(), 2);
  }
  EXPECT_EQ(w.current(), 3);
}

TEST(AsyncSchedule, PipeDreamSteadyStateIsMTimesTheSlowestStage) {
  // No flush, free communication: once filled, every stage runs F and B for each
  // micro-batch and the slowest one sets the pace: a step of M micro-batches takes
  // M max_s (F_s + B_s) (PipeDream, SOSP 2019, section 3.1), for 2BW too (its updates
  // take no time here). The flushed 1F1B's step is (M + K - 1) (F + B) with equal stages.
  const uint64_t seed = 21;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const int K = 1 + static_cast<int>(rng() % 8), M = K + static_cast<int>(rng() % 12);
    const int steps = 3 + static_cast<int>(rng() % 3);
    std::vector<int64_t> f(K), b(K);
    int64_t slowest = 0;
    for (int s = 0; s < K; ++s) {
      f[s] = 100 + static_cast<int64_t>(rng() % 2000);
      b[s] = 100 + static_cast<int64_t>(rng() % 4000);
      slowest = std::max(slowest, f[s] + b[s]);
    }
    const CostModel c = stage_costs(f, b);
    for (const Schedule& s : {make_pipedream(K, M, steps), make_2bw(K, M, steps)}) {
      const StepReport r = run(s, c);
      EXPECT_EQ(r.steps, steps);
      EXPECT_EQ(r.steady_state_step_ns, M * slowest) << seed_note(seed) << " trial " << trial << " " << s.name;
      EXPECT_GE(r.startup_ns, 0);
    }
  }
}

TEST(AsyncSchedule, FlushedScheduleRepeatsItsStep) {
  // A flush separates steps: step t ends at (t + 1) T, steady state T, no start-up.
  const CostModel c = uniform_costs(4, 4, 1000, 2000);
  const StepReport one = run(make_1f1b(4, 8), c);
  const StepReport four = run(make_1f1b(4, 8), c, 4);
  EXPECT_EQ(one.step_ns, (8 + 4 - 1) * 3000);
  EXPECT_EQ(four.steps, 4);
  EXPECT_EQ(four.step_ns, one.step_ns);
  EXPECT_EQ(four.total_ns, 4 * one.step_ns);
  EXPECT_EQ(four.steady_state_step_ns, one.step_ns);
  EXPECT_EQ(four.startup_ns, 0);
  EXPECT_EQ(four.step_end_ns, (std::vector<int64_t>{33000, 66000, 99000, 132000}));
}

TEST(AsyncSchedule, PipeDreamUpdatesAfterEveryMicroBatch) {
  // With an optimizer step of U ns per update, position s does F + B + U per micro-batch
  // in PipeDream's steady state: M max_s (F_s + B_s + U_s).
  CostModel c = stage_costs({1000, 1500, 800}, {2000, 2500, 1600});
  const std::vector<int64_t> u = {300, 100, 50};
  for (int s = 0; s < 3; ++s) c.stages[s].optimizer_ns = u[s];
  const StepReport r = run(make_pipedream(3, 6, 4), c);
  EXPECT_EQ(r.steady_state_step_ns, 6 * (1500 + 2500 + 100));
}

TEST(AsyncSchedule, PeakMemoryAddsTheWeightVersions) {
  // A real profile (weights, activations and transients): PipeDream holds K - s versions
  // on position s, 2BW two, both with 1F1B's activations (K - s micro-batches in
  // flight), so their peaks are 1F1B's plus (versions - 1) x the stage's parameters.
  const Profile profile = load_profile(profile_path());
  for (int K : {2, 3, 4}) {
    const int M = 2 * K;
    Plan plan = make_plan(profile, {.stages = K, .microbatches = M}).plan;
    const Hardware h = Hardware::ideal(K);
    const CostModel c = build_cost_model(profile, plan, h);
    const StepReport sync = run(make_1f1b(K, M), c);
    const StepReport pd = run(make_pipedream(K, M, 3), c);
    const StepReport bw = run(make_2bw(K, M, 3), c);
    for (int s = 0; s < K; ++s) {
      const int64_t params = sync.positions[s].weight_bytes;
      EXPECT_EQ(pd.positions[s].weight_versions, K - s) << "K=" << K << " s=" << s;
      EXPECT_EQ(pd.positions[s].peak_memory_bytes, sync.positions[s].peak_memory_bytes + (K - s - 1) * params);
      EXPECT_EQ(bw.positions[s].weight_versions, 2);
      EXPECT_EQ(bw.positions[s].peak_memory_bytes, sync.positions[s].peak_memory_bytes + params);
      EXPECT_EQ(pd.positions[s].peak_activation_bytes, sync.positions[s].peak_activation_bytes);
    }
  }
}

TEST(AsyncSchedule, RefusesReplicatedStages) {
  const CliResult r = run_cli("simulate --profile " + profile_path() + " -K 2 -M 4 --replicas 2 --schedule pipedream");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--replicas"), std::string::npos) << r.out;
}

TEST(AsyncSchedule, SimulateStepsPrintsTheSteadyStateForEverySchedule) {
  // --steps > 1: the steady-state keys for every schedule, and one JSON object.
  for (const std::string s : {"1f1b", "gpipe", "zb-h1", "pipedream", "2bw"}) {
    const CliResult r = run_cli("simulate --profile " + profile_path() + " -K 2 -M 4 --steps 3 --json --schedule " + s);
    ASSERT_EQ(r.code, 0) << r.out;
    const Json j = Json::parse(r.out);
    EXPECT_EQ(j["steps"], 3) << s;
    EXPECT_GT(j["steady_state_step_time_ms"].get<double>(), 0.0) << s;
    EXPECT_GT(j["steady_state_throughput_samples_per_s"].get<double>(), 0.0) << s;
    EXPECT_TRUE(j.contains("startup_ms")) << s;
  }
  const CliResult one = run_cli("simulate --profile " + profile_path() + " -K 2 -M 4 --json --schedule pipedream");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_FALSE(Json::parse(one.out).contains("steady_state_step_time_ms"));
}

TEST(AsyncPlanner, AsynchronousSchedulesOnlyWithAllowAsync) {
  const std::string base = "plan --profile " + profile_path() + " -D 2 -N 8 ";
  const CliResult refused = run_cli(base + "--schedules 1f1b,pipedream");
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.out.find("--allow-async"), std::string::npos) << refused.out;
  // By default the search leaves them out; --allow-async searches both and the
  // explanation names the best asynchronous plan (or the winner as asynchronous).
  for (ScheduleKind k : SearchRequest{}.schedules) EXPECT_FALSE(is_asynchronous(k)) << to_string(k);
  const CliResult allowed = run_cli(base + "--allow-async");
  ASSERT_EQ(allowed.code, 0) << allowed.out;
  EXPECT_NE(allowed.out.find("asynchronous"), std::string::npos) << allowed.out;
  const CliResult plain = run_cli(base);
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("asynchronous"), std::string::npos) << plain.out;
}

TEST(AsyncPlanner, PipeDreamsSteadyStepNeverLosesTo1F1BAndCostsMemory) {
  // Same cut, same M: without a flush the steady-state step has no fill or drain, so it
  // is at most 1F1B's flushed step; the weight versions cost memory on every position
  // but the last.
  const Profile profile = load_profile(profile_path());
  SearchRequest q;
  q.profile = profile;
  q.hardware = Hardware::ideal(4);
  q.devices = 4;
  q.batch = 16;
  q.schedules = {ScheduleKind::OneFOneB, ScheduleKind::PipeDream};
  q.recomputes = {Recompute::None};
  q.threads = 1;
  const SearchResult r = search_plans(q);
  int compared = 0;
  for (const Candidate& a : r.candidates) {
    if (a.schedule != ScheduleKind::PipeDream) continue;
    for (const Candidate& b : r.candidates) {
      if (b.schedule != ScheduleKind::OneFOneB || b.stages != a.stages || b.microbatches != a.microbatches) continue;
      EXPECT_LE(a.step_ns, b.step_ns) << a.label();
      if (a.stages > 1) {
        EXPECT_GT(a.peak_bytes, b.peak_bytes) << a.label();
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 5);
}

TEST(AsyncPlanner, JitterSamplesTheSteadyStateStep) {
  // With no jitter every sample is the deterministic run: for an asynchronous schedule
  // over 3 steps that is its steady-state step M max_s (F_s + B_s), not the mean step.
  const CostModel c = stage_costs({1000, 3000, 2000}, {2000, 4000, 3000});
  JitterSpec j;
  j.samples = 4;
  j.cv = 0;
  j.threads = 1;
  const StepDistribution d = sample_steps(make_pipedream(3, 5, 3), c, Hardware::ideal(3), j);
  EXPECT_EQ(d.deterministic_ns, 5 * 7000);
  for (int64_t x : d.step_ns) EXPECT_EQ(x, 5 * 7000);
}

TEST(AsyncScheduleFile, BadWeightUpdateAndStepsNameTheField) {
  // The schedule file's new keys: an unknown weight_update, steps that do not divide the
  // micro-batches, steps on a flushed schedule, and a 2bw order that needs a version its
  // stage has not made: each an InputError naming the file and what was expected.
  Json good = schedule_to_json(make_2bw(2, 2, 2));
  auto error = [](const Json& j) {
    try {
      schedule_from_json(JsonReader::from_text(j.dump(), "bad.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(good), "no error");
  Json j = good;
  j["weight_update"] = "lazy";
  EXPECT_NE(error(j).find("bad.json: weight_update: expected \"flush\", \"stash\" (pipedream) or \"double-buffer\""),
            std::string::npos)
      << error(j);
  j = good;
  j["steps"] = 3;  // 4 micro-batches in 3 steps
  EXPECT_NE(error(j).find("steps: expected a positive divisor of the 4 micro-batches, got 3"), std::string::npos) << error(j);
  j = good;
  j["steps"] = 0;
  EXPECT_NE(error(j).find("bad.json: steps"), std::string::npos) << error(j);
  j = good;
  j["weight_update"] = "flush";
  EXPECT_NE(error(j).find("need an asynchronous weight update"), std::string::npos) << error(j);
  j = schedule_to_json(make_2bw(2, 2, 3));
  Json gpipe = Json::array();  // device 0 runs every F first: step 2's F needs version 1 too early
  for (const char* kind : {"F", "B"}) {
    for (int m = 0; m < 6; ++m) gpipe.push_back({{"kind", kind}, {"stage", 0}, {"microbatch", m}});
  }
  j["position_ops"][0] = gpipe;
  EXPECT_NE(error(j).find("bad.json: schedule: device 0, op 4: F(stage 0, micro-batch 4) of step 2 needs weight version 1"),
            std::string::npos)
      << error(j);
}
