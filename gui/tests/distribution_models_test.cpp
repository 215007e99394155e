// The distribution view's model without widgets: a histogram's counts sum to its
// samples and its bins are where the closed form puts them; with CV 0 the sampled plan
// is its deterministic step exactly (one bin, p50 = p99 = the evaluation's step).
#include <QtTest>

#include "gui/models/step_distribution.h"
#include "gui/tests/uniform_plan.h"

using namespace pipescope;
using namespace pipescope::gui;

class DistributionModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void histogram_bins_follow_the_closed_form();
  void cv_zero_gives_the_evaluated_step();
};

void DistributionModelsTest::histogram_bins_follow_the_closed_form() {
  // Steps 1..10 ms in 3 bins of 3 ms from 1 ms: [1,4) holds 1,2,3; [4,7) 4,5,6; [7,10] 7..10.
  StepDistribution d;
  for (int i = 1; i <= 10; ++i) d.step_ns.push_back(i * 1'000'000);
  d.samples = 10;
  d.min_ns = 1'000'000;
  d.max_ns = 10'000'000;
  d.p50_ns = 5'000'000;
  d.p99_ns = 10'000'000;
  d.critical_counts = {7, 3};
  const StepHistogram h = make_histogram(d, 3);
  QCOMPARE(h.counts, (std::vector<int64_t>{3, 3, 4}));
  QCOMPARE(h.lo_ms, 1.0);
  QCOMPARE(h.bin_ms, 3.0);
  QCOMPARE(h.p50_ms, 5.0);
  QCOMPARE(h.max_count(), int64_t{4});
  QCOMPARE(h.bottleneck_counts, (std::vector<int64_t>{7, 3}));
}

void DistributionModelsTest::cv_zero_gives_the_evaluated_step() {
  const PlanInputs in = uniform_inputs(8, 4, 8);
  const Evaluation e = evaluate(in);
  JitterSpec j;
  j.samples = 20;
  const StepHistogram h = sample_plan(e, hardware_for(in, e.plan), j, 40);
  QCOMPARE(h.samples, 20);
  QCOMPARE(h.counts, (std::vector<int64_t>{20}));
  QCOMPARE(h.p50_ms, static_cast<double>(e.report.step_ns) / 1e6);
  QCOMPARE(h.p99_ms, h.deterministic_ms);
}

QTEST_APPLESS_MAIN(DistributionModelsTest)
#include "distribution_models_test.moc"
