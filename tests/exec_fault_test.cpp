// A stage that fails makes every other stage stop with an error naming the failed
// stage, its op and micro-batch, within seconds, never a hang. The receive timeout is
// set to 60 s here, so a run that ends in under 10 s was stopped by the failure notice,
// not by a timeout. Every case runs twice: with waits that sleep and with waits that
// spin (a spinning stage must see the failure notice as promptly as a sleeping one).
#include <gtest/gtest.h>

#include <chrono>

#include "core/error.h"
#include "exec/executor.h"
#include "exec_test_models.h"
#include "planner/plan_builder.h"

namespace pipescope::exec {
namespace {

void expect_fault_stops_everyone_with(const std::string& wait, ScheduleKind kind, int K, const FaultSpec& fault,
                                     const std::string& expected) {
  SCOPED_TRACE("--wait " + wait);
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  PlanChoice c;
  c.stages = K;
  c.microbatches = 4;
  c.schedule = kind;
  c.partition = "uniform";
  Plan plan = make_plan(profile, c);
  Schedule schedule = make_schedule(plan.schedule_spec());
  RunOptions o;
  o.steps = 3;
  o.timeout_s = 60;
  o.fault = fault;
  o.wait = wait;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    run_threads(profile, plan, schedule, o);
    FAIL() << "the injected fault did not fail the run";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("injected fault"), std::string::npos) << e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 10.0);
}

void expect_fault_stops_everyone(ScheduleKind kind, int K, const FaultSpec& fault, const std::string& expected) {
  for (const char* wait : {"block", "spin"}) expect_fault_stops_everyone_with(wait, kind, K, fault, expected);
}

TEST(ExecFaults, FailedForwardStopsEveryStage) {
  expect_fault_stops_everyone(ScheduleKind::OneFOneB, 3, {1, OpKind::Forward, 2, 0, false},
                              "stage 1 (device 1) failed at forward of micro-batch 2 in step 0");
}

TEST(ExecFaults, FailedBackwardInLaterStepStopsEveryStage) {
  expect_fault_stops_everyone(ScheduleKind::GPipe, 4, {3, OpKind::Backward, 0, 1, false},
                              "stage 3 (device 3) failed at backward of micro-batch 0 in step 1");
}

TEST(ExecFaults, FailedWeightGradientStopsEveryStage) {
  expect_fault_stops_everyone(ScheduleKind::ZeroBubbleH1, 2, {0, OpKind::BackwardWeight, 3, 0, false},
                              "stage 0 (device 0) failed at backward_weight of micro-batch 3 in step 0");
}

TEST(ExecFaults, UnknownWaitOrPinModeIsAnInputError) {
  RunOptions o;
  o.wait = "nap";
  EXPECT_THROW(o.spin_waits(1), InputError);
  o.wait = "auto";  // spins exactly when every device has a core of its own
  EXPECT_TRUE(o.spin_waits(usable_cores()));
  EXPECT_FALSE(o.spin_waits(usable_cores() + 1));
  o.pin = "sometimes";
  EXPECT_THROW(o.pin_threads(1), InputError);
  o.pin = "auto";  // pins exactly when every device has a core of its own
  EXPECT_TRUE(o.pin_threads(usable_cores()));
  EXPECT_FALSE(o.pin_threads(usable_cores() + 1));
}

TEST(ExecFaults, ParseFaultRejectsGarbage) {
  EXPECT_THROW(parse_fault("1:sideways:2"), InputError);
  EXPECT_THROW(parse_fault("1:forward"), InputError);
  FaultSpec f = parse_fault("2:recompute:5:crash");
  EXPECT_EQ(f.stage, 2);
  EXPECT_EQ(f.kind, OpKind::Recompute);
  EXPECT_EQ(f.microbatch, 5);
  EXPECT_TRUE(f.crash);
}

}  // namespace
}  // namespace pipescope::exec
