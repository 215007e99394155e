// Step-time distributions (sim/distribution.h) against closed forms: CV 0 replays the
// deterministic step exactly; one stage without communication sums independent
// lognormal op times (mean and spread known, bounds from N); a step is a max of sums,
// so its mean under jitter is at least the deterministic step (Jensen); a seed gives
// the same samples whatever the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "core/op_rules.h"
#include "sim/distribution.h"
#include "sim/simulator.h"
#include "tests/support/test_support.h"

using namespace pipescope;
using pipescope::testing::seed_note;
using pipescope::testing::uniform_costs;

namespace {

Hardware nvlink(int K) {
  Hardware h = Hardware::ideal(K);
  h.link = {450.0, 5.0};
  return h;
}

Schedule random_schedule(std::mt19937_64& rng, int K, int M) {
  switch (rng() % 4) {
    case 0: return make_gpipe(K, M);
    case 1: return make_1f1b(K, M);
    case 2: return make_interleaved(K, K * (1 + M % 3), 2);  // M a multiple of K (Megatron-LM)
    default: return make_zb_h1(K, M);
  }
}

}  // namespace

TEST(SimSeam, PerOpDurationsEqualToTheCostModelGiveTheSameStep) {
  // The seam must not change anything by itself: durations = op_duration_ns per op.
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int K = 1 + rng() % 6, M = 1 + rng() % 12;
    Schedule s = random_schedule(rng, K, M);
    CostModel c = uniform_costs(s.stages(), K, 1 + rng() % 3000, 1 + rng() % 5000, 1000, 1 << 16);
    SimOptions plain;
    plain.record_timeline = false;
    const StepReport want = simulate(s, c, nvlink(K), plain);
    std::vector<int64_t> dur, starts;
    for (int d = 0; d < K; ++d) {
      EXPECT_EQ(op_offset(s, d), dur.size());
      for (const Op& op : s.position_ops[d]) dur.push_back(op_duration_ns(op.kind, c.stages[op.stage]));
    }
    SimOptions seam = plain;
    seam.op_durations_ns = dur;
    seam.op_starts_ns = &starts;
    const StepReport got = simulate(s, c, nvlink(K), seam);
    EXPECT_EQ(got.step_ns, want.step_ns) << s.name << " K=" << K << " M=" << M;
    ASSERT_EQ(starts.size(), dur.size());
    for (int d = 0; d < K; ++d) {  // a device runs one op at a time, in order
      for (std::size_t i = op_offset(s, d) + 1; i < op_offset(s, d) + s.position_ops[d].size(); ++i) {
        EXPECT_GE(starts[i], starts[i - 1] + dur[i - 1]);
      }
    }
  }
}

TEST(StepDistribution, CvZeroGivesTheDeterministicStepExactly) {
  // No jitter, no straggler: every sample is the deterministic step, to the nanosecond.
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    const int K = 1 + rng() % 6, M = 1 + rng() % 12;
    Schedule s = random_schedule(rng, K, M);
    CostModel c = uniform_costs(s.stages(), K, 1 + rng() % 3000, 1 + rng() % 5000, 1000, 1 << 16);
    JitterSpec j;
    j.samples = 8;
    j.seed = trial;
    j.straggler_slowdown = 3;  // probability 0: never applied
    StepDistribution d = sample_steps(s, c, nvlink(K), j);
    for (int64_t x : d.step_ns) EXPECT_EQ(x, d.deterministic_ns) << s.name << " K=" << K << " M=" << M;
    EXPECT_EQ(d.p99_ns, d.deterministic_ns);
    EXPECT_DOUBLE_EQ(d.stddev_ns, 0.0);
  }
}

TEST(StepDistribution, SamplesUnderTheP2pModeItIsGiven) {
  // JitterSpec::p2p is SimOptions::p2p (`simulate --samples --p2p blocking`): with no
  // jitter every sample is the step simulated in that mode, and blocking transfers on
  // 1F1B's critical path make it longer than overlapped ones.
  const Schedule s = make_1f1b(4, 8);
  const CostModel c = uniform_costs(4, 4, 1000, 2000, 1000, 1 << 20);
  Hardware h = nvlink(4);
  h.link = {1.0, 50.0};  // 50 us a hop against ops of 1 and 2 us
  SimOptions blocking;
  blocking.record_timeline = false;
  blocking.p2p = P2p::Blocking;
  JitterSpec j;
  j.samples = 3;
  j.threads = 1;
  const int64_t overlapped = sample_steps(s, c, h, j).deterministic_ns;
  j.p2p = P2p::Blocking;
  const StepDistribution d = sample_steps(s, c, h, j);
  EXPECT_EQ(d.deterministic_ns, simulate(s, c, h, blocking).step_ns);
  for (int64_t x : d.step_ns) EXPECT_EQ(x, d.deterministic_ns);
  EXPECT_GT(d.deterministic_ns, overlapped);
}

TEST(StepDistribution, AStragglerOnEveryDeviceDoublesAStepWithoutCommunication) {
  // P = 1, slowdown 2, no links: every op takes twice as long, so the step does exactly.
  JitterSpec j;
  j.samples = 4;
  j.straggler_probability = 1;
  j.straggler_slowdown = 2;
  Schedule s = make_1f1b(4, 8);
  StepDistribution d = sample_steps(s, uniform_costs(4, 4, 1000, 2000), Hardware::ideal(4), j);
  EXPECT_EQ(d.deterministic_ns, (8 + 4 - 1) * 3000);  // (M + K - 1)(t_f + t_b)
  for (int64_t x : d.step_ns) EXPECT_EQ(x, 2 * d.deterministic_ns);
}

TEST(StepDistribution, OneStageMeanAndSpreadFollowTheClosedForm) {
  // K = 1, no communication: the step is the sum of 2M independent op times, each
  // lognormal with mean t and sd cv t. Mean = M (t_f + t_b); variance = M cv^2 (t_f^2 + t_b^2).
  // Bounds: 5 standard errors from N: the mean's sd / sqrt(N), and the sample sd's relative
  // error sqrt((kurtosis - 1) / 4N) with kurtosis <= 4 for this near-normal sum.
  const int M = 16, N = 4000;
  const double tf = 1e6, tb = 2e6, cv = 0.2;
  JitterSpec j;
  j.samples = N;
  j.cv = cv;
  j.seed = 2026;
  StepDistribution d = sample_steps(make_1f1b(1, M), uniform_costs(1, 1, 1'000'000, 2'000'000), Hardware::ideal(1), j);
  const double mean = M * (tf + tb), sd = std::sqrt(M * cv * cv * (tf * tf + tb * tb));
  EXPECT_NEAR(d.mean_ns, mean, 5 * sd / std::sqrt(N)) << seed_note(j.seed);
  EXPECT_NEAR(d.stddev_ns / sd, 1.0, 5 * std::sqrt(3.0 / (4.0 * N))) << seed_note(j.seed);
  EXPECT_EQ(d.critical_counts[0], N);  // one position: always the bottleneck
}

TEST(StepDistribution, MeanIsAtLeastTheDeterministicStepUnderJitter) {
  // The step is a max over paths of sums of op times: E[max] >= max E (Jensen), and the
  // gap here (K = 4, cv 0.3, many near-critical paths) is many standard errors wide.
  JitterSpec j;
  j.samples = 500;
  j.cv = 0.3;
  j.link_cv = 0.3;
  j.seed = 5;
  Schedule s = make_1f1b(4, 8);
  StepDistribution d = sample_steps(s, uniform_costs(4, 4, 100'000, 200'000, 1000, 1 << 20), nvlink(4), j);
  EXPECT_GE(d.mean_ns, static_cast<double>(d.deterministic_ns)) << seed_note(j.seed);
  EXPECT_LE(d.p50_ns, d.p90_ns);
  EXPECT_LE(d.p90_ns, d.p99_ns);
  EXPECT_LE(d.p99_ns, d.max_ns);
}

TEST(StepDistribution, TheSlowStageIsTheBottleneck) {
  // Stage 2 of 4 takes 3x as long as the others: every sample's critical path spends
  // most of its op time there.
  CostModel c = uniform_costs(4, 4, 1000, 2000);
  c.stages[2].forward_ns = 3000;
  c.stages[2].backward_ns = 6000;
  JitterSpec j;
  j.samples = 50;
  j.cv = 0.05;
  StepDistribution d = sample_steps(make_1f1b(4, 16), c, Hardware::ideal(4), j);
  EXPECT_EQ(d.critical_counts[2], 50);
  EXPECT_GT(d.critical_share[2], 0.5);
}

TEST(StepDistribution, ASeedGivesTheSameSamplesWhateverTheThreadCount) {
  JitterSpec j;
  j.samples = 64;
  j.cv = 0.1;
  j.link_cv = 0.1;
  j.straggler_probability = 0.1;
  j.straggler_slowdown = 1.5;
  j.seed = 99;
  Schedule s = make_1f1b(4, 8);
  CostModel c = uniform_costs(4, 4, 10'000, 20'000, 1000, 1 << 20);
  j.threads = 1;
  StepDistribution one = sample_steps(s, c, nvlink(4), j);
  j.threads = 3;
  StepDistribution three = sample_steps(s, c, nvlink(4), j);
  EXPECT_EQ(one.step_ns, three.step_ns);
  EXPECT_EQ(one.critical_counts, three.critical_counts);
  j.seed = 100;
  EXPECT_NE(sample_steps(s, c, nvlink(4), j).step_ns, one.step_ns);
}

TEST(StepDistribution, BadSpecsAreRefused) {
  Schedule s = make_1f1b(2, 4);
  CostModel c = uniform_costs(2, 2, 1000, 2000);
  auto refused = [&](JitterSpec j) {
    EXPECT_THROW(sample_steps(s, c, Hardware::ideal(2), j), InputError);
  };
  JitterSpec ok;
  ok.samples = 1;
  JitterSpec j = ok;
  j.samples = 0;
  refused(j);
  j = ok, j.cv = -0.1;
  refused(j);
  j = ok, j.straggler_probability = 1.5;
  refused(j);
  j = ok, j.straggler_slowdown = 0.5;
  refused(j);
  j = ok, j.stage_cv = {0.1};
  refused(j);
  j = ok, j.cv = std::nan("");
  refused(j);
}

TEST(StepDistribution, NearestRankQuantiles) {
  // Nearest rank: the ceil(q n)-th smallest.
  const std::vector<int64_t> v = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(nearest_rank(v, 0.5), 50);
  EXPECT_EQ(nearest_rank(v, 0.9), 90);
  EXPECT_EQ(nearest_rank(v, 0.99), 100);
  EXPECT_EQ(nearest_rank(v, 0.01), 10);
}
