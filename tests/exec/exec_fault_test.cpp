// A stage that fails makes every other stage stop with an error naming the failed
// stage, its op and micro-batch, never a hang. The receive timeout is set to 60 s here
// (a hang guard, not a claim about speed), so a run reported with the injected fault
// and no timeout was stopped by the failure notice. Every case runs twice: with waits
// that sleep and with waits that spin (a spinning stage must see the failure notice as
// a sleeping one does). With replicated stages the failed replica is named too.
#include <gtest/gtest.h>

#include "core/error.h"
#include "exec/runtime/executor.h"
#include "tests/support/exec_test_models.h"
#include "planner/plan_builder.h"

namespace pipescope::exec {
namespace {

void expect_fault_stops_everyone_with(const std::string& wait, ScheduleKind kind, int K, const FaultSpec& fault,
                                     const std::string& expected, int replicas) {
  SCOPED_TRACE("--wait " + wait);
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  PlanChoice c;
  c.stages = K;
  c.replicas = replicas;
  c.microbatch_size = replicas;  // one sample per replica
  c.microbatches = 4;
  c.schedule = kind;
  c.partition = PartitionKind::Uniform;
  Plan plan = make_plan(profile, c).plan;
  Schedule schedule = schedule_for(plan);
  RunOptions o;
  o.steps = 3;
  o.timeout_s = 60;
  o.fault = fault;
  o.wait = parse_wait_mode(wait);
  try {
    run_threads(profile, plan, schedule, o);
    FAIL() << "the injected fault did not fail the run";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("injected fault"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("timed out"), std::string::npos) << e.what();  // stopped by the notice
  }
}

void expect_fault_stops_everyone(ScheduleKind kind, int K, const FaultSpec& fault, const std::string& expected,
                                 int replicas = 1) {
  for (const char* wait : {"block", "spin"}) expect_fault_stops_everyone_with(wait, kind, K, fault, expected, replicas);
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

// Replicated stages: worker 3 is replica 1 of stage 1 (K = 2, r = 2). Its failure stops
// its pipeline neighbours and the other replicas, which by then may wait in the
// gradient all-reduce.
TEST(ExecFaults, FailedReplicaStopsEveryDevice) {
  expect_fault_stops_everyone(ScheduleKind::OneFOneB, 2, {1, OpKind::Forward, 2, 0, false, false, 1},
                              "stage 1 replica 1 (device 3) failed at forward of micro-batch 2 in step 0", 2);
  expect_fault_stops_everyone(ScheduleKind::ZeroBubbleH1, 2, {0, OpKind::BackwardWeight, 3, 1, false, false, 1},
                              "stage 0 replica 1 (device 1) failed at backward_weight of micro-batch 3 in step 1", 2);
}

// Replica 1 of stage 0 (worker 1) loses its output of micro-batch 1: its peer, replica 1
// of stage 1 (worker 3), times out after 2 s naming what it waited for; the other
// workers, waiting in receives or in the gradient all-reduce, stop on that failure (or
// time out themselves): the run fails naming a replica and what it waited for.
TEST(ExecFaults, LostMessageInOneReplicaEndsEveryWait) {
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  PlanChoice c;
  c.stages = 2;
  c.replicas = 2;
  c.microbatch_size = 2;
  c.microbatches = 4;
  c.partition = PartitionKind::Uniform;
  Plan plan = make_plan(profile, c).plan;
  Schedule schedule = schedule_for(plan);
  for (const char* wait : {"block", "spin"}) {
    SCOPED_TRACE(std::string("--wait ") + wait);
    RunOptions o;
    o.timeout_s = 2;
    o.wait = parse_wait_mode(wait);
    o.fault = FaultSpec{0, OpKind::Forward, 1, 0, false, true, 1};
    try {
      run_threads(profile, plan, schedule, o);
      FAIL() << "the lost message did not fail the run";
    } catch (const RunError& e) {
      // Worker 3 starts waiting first and normally times out first; its peers' waits (for
      // its gradient, or in the all-reduce) start only a few ops later, so under load
      // one of them may time out first. Either way a replica is named.
      EXPECT_NE(std::string(e.what()).find("replica "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("timed out waiting for the "), std::string::npos) << e.what();
    }
  }
}

TEST(ExecFaults, UnknownWaitOrPinModeIsAnInputError) {
  EXPECT_THROW(parse_wait_mode("nap"), InputError);
  EXPECT_THROW(parse_pin_mode("sometimes"), InputError);
  EXPECT_THROW(parse_transport("carrier-pigeon"), InputError);
  for (WaitMode w : {WaitMode::Auto, WaitMode::Spin, WaitMode::Block}) EXPECT_EQ(parse_wait_mode(to_string(w)), w);
  for (PinMode p : {PinMode::Auto, PinMode::On, PinMode::Off}) EXPECT_EQ(parse_pin_mode(to_string(p)), p);
  for (Transport t : {Transport::Threads, Transport::Mpi}) EXPECT_EQ(parse_transport(to_string(t)), t);
  RunOptions o;
  o.wait = WaitMode::Auto;  // spins exactly when every device has a core of its own
  EXPECT_TRUE(o.spin_waits(usable_cores()));
  EXPECT_FALSE(o.spin_waits(usable_cores() + 1));
  o.pin = PinMode::Auto;  // pins exactly when every device has a core of its own
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
  EXPECT_EQ(f.replica, 0);
  FaultSpec g = parse_fault("1/2:forward:3");
  EXPECT_EQ(g.stage, 1);
  EXPECT_EQ(g.replica, 2);
  EXPECT_EQ(g.microbatch, 3);
  EXPECT_THROW(parse_fault("1/:forward:3"), InputError);
  EXPECT_THROW(parse_fault("1/x:forward:3"), InputError);
  EXPECT_THROW(parse_fault("1/-1:forward:3"), InputError);
}

}  // namespace
}  // namespace pipescope::exec
