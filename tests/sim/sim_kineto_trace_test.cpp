// torch.profiler traces read as the bridge's spans (sim/kineto_trace.h). Two hand-built
// ranks of one step, times in us chosen so that every rule shows in one number:
//   rank 1 (stage 1, the last): PP:1RECV_F0 posts c10d::recv_ (4 x 8 floats = 128 bytes)
//     whose gloo:recv completes at 1200; PP:1F0 starts at 1100, so it waits 1100-1200,
//     computes 1200-1300, and its loss (aten::mse_loss, the outermost *loss* op) runs
//     1300-1350; PP:1I0 1450-1600; PP:1W0 1600-1700; PP:1SEND_B0's c10d::send 1710-1740.
//   rank 0 (stage 0): PP:0F0 1000-1050 posts its send inside at 1040: the op is 1000-1040;
//     PP:0RECV_B0's receive completes at 1760, so PP:0I0 (1520-1800) waits 1520-1760.
// Times come out relative to the earliest ProfilerStep (990 us), in ns.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "sim/kineto_trace.h"
#include "tests/support/input_error.h"

namespace pipescope {
namespace {

Json x(const std::string& name, const std::string& cat, double ts, double dur, Json args = Json::object()) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 1}, {"tid", 1}, {"ts", ts}, {"dur", dur}, {"args", args}};
}
Json note(const std::string& name, double ts, double dur) { return x(name, "user_annotation", ts, dur); }
Json op(const std::string& name, double ts, double dur, Json args = Json::object()) {
  return x(name, "cpu_op", ts, dur, std::move(args));
}

Json rank_trace(int rank, Json events) {
  return {{"schemaVersion", 1},
          {"distributedInfo", {{"backend", "gloo"}, {"rank", rank}, {"world_size", 2}}},
          {"traceEvents", std::move(events)}};
}

Json rank0() {
  return rank_trace(0, Json::array({
      note("ProfilerStep#5", 990, 1000),
      note("PP:0F0", 1000, 50), op("c10d::send", 1040, 8), note("gloo:send", 1045, 300),
      note("PP:0RECV_B0", 1500, 10), op("c10d::recv_", 1502, 6), note("gloo:recv", 1505, 255),
      note("PP:0I0", 1520, 280),
      note("PP:0W0", 1800, 50),
      note("Optimizer.step#SGD.step", 1900, 40),
  }));
}

Json rank1() {
  return rank_trace(1, Json::array({
      note("ProfilerStep#5", 1000, 1000),
      note("Optimizer.zero_grad#SGD.zero_grad", 1010, 10),
      note("PP:1RECV_F0", 1030, 30),
      op("c10d::recv_", 1035, 15, {{"Input Dims", {{4, 8}}}, {"Input type", {"float"}}}),
      note("gloo:recv", 1048, 152),
      note("PP:1F0", 1100, 300), op("aten::mse_loss", 1300, 50), op("aten::inner_loss_part", 1310, 10),
      note("PP:1I0", 1450, 150), op("aten::mse_loss_backward", 1460, 20),
      note("PP:1W0", 1600, 100),
      note("PP:1SEND_B0", 1700, 50), op("c10d::send", 1710, 30),
      note("Optimizer.step#SGD.step", 1800, 100),
  }));
}

JsonReader reader(const Json& j, const std::string& name) { return JsonReader::from_text(j.dump(), name); }

const MeasuredSpan& find(const MeasuredTrace& t, int rank, SpanKind kind, OpKind k = OpKind::Forward) {
  for (const MeasuredSpan& s : t.spans[rank][0]) {
    if (s.kind == kind && (kind != SpanKind::Op || s.op == k)) return s;
  }
  throw std::logic_error("no such span");
}

constexpr int64_t us(double v) { return static_cast<int64_t>(v * 1000); }

TEST(KinetoTrace, SpansAreTheBridgesWithWaitsAndTheLossTakenOut) {
  const MeasuredTrace t = read_kineto_traces({reader(rank0(), "rank0.json"), reader(rank1(), "rank1.json")});
  ASSERT_EQ(t.ranks, 2);
  ASSERT_EQ(t.steps, 1) << "ProfilerStep#5 is step 0";
  EXPECT_EQ(t.name, "torch.profiler gloo");
  const int64_t origin = us(990);
  // Rank 1: the wait for F's input, F itself, the loss, and the 128-byte receive.
  const MeasuredSpan& wait = find(t, 1, SpanKind::P2pWait);
  EXPECT_EQ(wait.start_ns, us(1100) - origin);
  EXPECT_EQ(wait.duration_ns, us(100));
  const MeasuredSpan& f = find(t, 1, SpanKind::Op, OpKind::Forward);
  EXPECT_EQ(f.stage, 1);
  EXPECT_EQ(f.microbatch, 0);
  EXPECT_EQ(f.start_ns, us(1200) - origin);
  EXPECT_EQ(f.duration_ns, us(100));
  const MeasuredSpan& loss = find(t, 1, SpanKind::Loss);
  EXPECT_EQ(loss.start_ns, us(1300) - origin);
  EXPECT_EQ(loss.duration_ns, us(50)) << "the outermost loss op, not the one inside it";
  EXPECT_EQ(find(t, 1, SpanKind::Op, OpKind::BackwardInput).duration_ns, us(150)) << "I consumes no receive";
  EXPECT_EQ(find(t, 1, SpanKind::Op, OpKind::BackwardWeight).duration_ns, us(100));
  int recvs = 0, sends = 0;
  for (const MeasuredSpan& s : t.spans[1][0]) {
    if (s.kind != SpanKind::P2pIssue) continue;
    recvs += s.recvs, sends += s.sends;
    if (s.recvs) {
      EXPECT_EQ(s.recv_bytes, 128) << "[4, 8] floats";
    }
    if (s.sends) {
      EXPECT_EQ(s.send_bytes, 0) << "no shapes recorded";
    }
  }
  EXPECT_EQ(recvs, 1);
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(find(t, 1, SpanKind::ZeroGrad).duration_ns, us(10));
  EXPECT_EQ(find(t, 1, SpanKind::Optimizer).duration_ns, us(100));
  // Rank 0: F ends where its send is posted; I waits for the gradient until 1760.
  EXPECT_EQ(find(t, 0, SpanKind::Op, OpKind::Forward).duration_ns, us(40));
  const MeasuredSpan& i0 = find(t, 0, SpanKind::Op, OpKind::BackwardInput);
  EXPECT_EQ(i0.start_ns, us(1760) - origin);
  EXPECT_EQ(i0.duration_ns, us(40));
  EXPECT_EQ(find(t, 0, SpanKind::P2pWait).duration_ns, us(240));
}

TEST(KinetoTrace, GPipeOpsPostTheirReceivesInside) {
  // ScheduleGPipe: "Forward 0" posts and waits its receive inside itself; the stage is the rank's.
  const Json r1 = rank_trace(1, Json::array({
      note("ProfilerStep#0", 0, 1000),
      note("Forward 0", 100, 400), op("c10d::recv_", 110, 20), note("gloo:recv", 125, 175),
      op("c10d::send", 450, 20),
      note("Backward 0", 600, 100),
  }));
  const Json r0 = rank_trace(0, Json::array({note("ProfilerStep#0", 0, 1000), note("Forward 0", 10, 50)}));
  const MeasuredTrace t = read_kineto_traces({reader(r0, "r0.json"), reader(r1, "r1.json")});
  const MeasuredSpan& f = find(t, 1, SpanKind::Op, OpKind::Forward);
  EXPECT_EQ(f.stage, 1);
  EXPECT_EQ(f.start_ns, us(300)) << "after the receive completes";
  EXPECT_EQ(f.duration_ns, us(150)) << "until its send is posted";
  const MeasuredSpan& wait = find(t, 1, SpanKind::P2pWait);
  EXPECT_EQ(wait.start_ns, us(130)) << "from the end of the receive's issue";
  EXPECT_EQ(wait.duration_ns, us(170));
  EXPECT_EQ(find(t, 1, SpanKind::Op, OpKind::Backward).duration_ns, us(100));
}

TEST(KinetoTrace, RefusesBadInputNamingTheFileAndWhy) {
  using testing::input_error_of;
  auto refused = [](std::vector<Json> files) {
    std::vector<JsonReader> readers;
    for (std::size_t i = 0; i < files.size(); ++i) readers.push_back(reader(files[i], "r" + std::to_string(i) + ".json"));
    return input_error_of([&] { read_kineto_traces(readers); });
  };
  Json no_info = rank0();
  no_info.erase("distributedInfo");
  EXPECT_NE(refused({no_info}).find("r0.json: (top level): no \"distributedInfo\""), std::string::npos) << refused({no_info});
  EXPECT_NE(refused({rank1()}).find("r0.json: distributedInfo.rank: rank 1 in 1 files"), std::string::npos)
      << refused({rank1()});
  EXPECT_NE(refused({rank0(), rank0()}).find("rank 0 is also r0.json's"), std::string::npos);
  Json other_steps = rank1();
  other_steps["traceEvents"][0]["name"] = "ProfilerStep#6";
  EXPECT_NE(refused({rank0(), other_steps}).find("r1.json: rank 1 recorded other ProfilerStep numbers"), std::string::npos);
  Json no_steps = rank0();
  no_steps["traceEvents"].erase(0);
  EXPECT_NE(refused({no_steps}).find("no ProfilerStep#N spans"), std::string::npos);
  const Json one_f_one_b = rank_trace(0, Json::array({note("ProfilerStep#1", 0, 100), op("c10d::send", 10, 5)}));
  EXPECT_NE(refused({one_f_one_b}).find("Schedule1F1B records none"), std::string::npos);
  Json bad_dur = rank0();
  bad_dur["traceEvents"][1]["dur"] = -5;
  EXPECT_NE(refused({bad_dur, rank1()}).find("dur"), std::string::npos);
  // An op that runs past its step's end is the bridge reader's refusal, read the same way.
  Json straddle = rank0();
  straddle["traceEvents"][8]["dur"] = 500;  // PP:0W0 past 1990
  EXPECT_NE(refused({straddle, rank1()}).find("outside the rank's step span"), std::string::npos);
}

TEST(KinetoTrace, LoadTellsTheTwoFormsApartAndRefusesAMix) {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / ("pipescope_kineto_" + std::to_string(::getpid()));
  fs::create_directories(d);
  std::ofstream(d / "r0.json") << rank0().dump();
  std::ofstream(d / "r1.json") << rank1().dump();
  std::ofstream(d / "bridge.json") << R"({"traceEvents": []})";
  EXPECT_EQ(load_measured_traces({(d / "r0.json").string(), (d / "r1.json").string()}).ranks, 2);
  const std::string mixed = testing::input_error_of(
      [&] { load_measured_traces({(d / "r0.json").string(), (d / "bridge.json").string()}); });
  EXPECT_NE(mixed.find("bridge.json: (top level): expected a torch.profiler trace like the others"), std::string::npos) << mixed;
  fs::remove_all(d);
}

}  // namespace
}  // namespace pipescope
