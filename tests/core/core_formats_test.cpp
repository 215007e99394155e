// Hardware and plan formats, boundary bytes of DAG cuts, atomic output files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <utility>

#include "core/atomic_file.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/recompute.h"
#include "tests/support/input_error.h"

using namespace pipescope;

namespace {

template <typename F>
std::string error_of(F&& f) {
  return pipescope::testing::input_error_of(std::forward<F>(f));
}

const char* kHardware = R"({"format": "pipescope.hardware", "version": 1, "name": "h",
  "devices": 4, "memory_bytes": 1000,
  "link": {"bandwidth_gb_per_s": 100.0, "latency_us": 5.0},
  "nodes": {"devices_per_node": 2, "link": {"bandwidth_gb_per_s": 10.0, "latency_us": 20.0}},
  "speed": [1, 1, 2, 2]})";

const char* kPlan = R"({"format": "pipescope.plan", "version": 1, "profile": "p.json",
  "batch_size": 8, "microbatches": 4, "schedule": {"kind": "1f1b", "chunks": 1},
  "recompute": false, "optimizer": {"state_bytes_per_parameter_byte": 2.0},
  "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 4], "devices": [1]}]})";

std::string edit(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST(Hardware, LinksWithinAndAcrossNodes) {
  Hardware h = hardware_from_json(JsonReader::from_text(kHardware, "h.json"));
  EXPECT_EQ(h.link_between(0, 1).latency_us, 5.0);
  EXPECT_EQ(h.link_between(1, 2).latency_us, 20.0);
  // 1e6 bytes over 100 GB/s = 10 us = 10000 ns busy, plus 5 us latency.
  EXPECT_EQ(h.link_between(0, 1).busy_ns(1000000), 10000);
  EXPECT_EQ(h.link_between(0, 1).latency_ns(), 5000);
  EXPECT_EQ(h.device_speed(3), 2.0);
}

TEST(Hardware, ValidationErrors) {
  auto read = [](const std::string& t) { return hardware_from_json(JsonReader::from_text(t, "h.json")); };
  EXPECT_EQ(error_of([&] { read(edit(kHardware, "\"speed\": [1, 1, 2, 2]", "\"speed\": [1, 1]")); }),
            "h.json: speed: expected 4 values (one per device), got 2");
  EXPECT_EQ(error_of([&] { read(edit(kHardware, "\"devices\": 4", "\"devices\": 0")); }),
            "h.json: devices: expected an integer >= 1, got 0");
  EXPECT_NE(error_of([&] { read(edit(kHardware, "\"bandwidth_gb_per_s\": 100.0", "\"bandwidth_gb_per_s\": -1")); })
                .find("h.json: link.bandwidth_gb_per_s: expected a number >="),
            std::string::npos);
  EXPECT_EQ(error_of([&] { read(edit(kHardware, "\"devices_per_node\": 2", "\"devices_per_node\": 9")); }),
            "h.json: nodes.devices_per_node: expected an integer <= 4, got 9");
  EXPECT_EQ(error_of([&] { read(edit(kHardware, "\"speed\"", "\"p2p\": \"sometimes\", \"speed\"")); }),
            "h.json: p2p: expected \"overlapped\", \"blocking\" or \"batched\", got \"sometimes\"");
  EXPECT_NE(error_of([&] { read(edit(kHardware, "\"speed\"", "\"p2p\": true, \"speed\"")); }).find("h.json: p2p:"),
            std::string::npos);
}

// "p2p": absent means unsaid (a plan's, else overlapped); stated, it is read and written back.
TEST(Hardware, P2pIsReadAndWrittenBack) {
  const Hardware plain = hardware_from_json(JsonReader::from_text(kHardware, "h.json"));
  EXPECT_FALSE(plain.p2p.has_value());
  EXPECT_FALSE(hardware_to_json(plain).contains("p2p"));
  const Hardware h = hardware_from_json(JsonReader::from_text(edit(kHardware, "\"speed\"", "\"p2p\": \"blocking\", \"speed\""), "h.json"));
  ASSERT_TRUE(h.p2p.has_value());
  EXPECT_EQ(*h.p2p, P2p::Blocking);
  EXPECT_EQ(hardware_to_json(h)["p2p"], "blocking");
  Plan plan;
  EXPECT_EQ(p2p_of(plan, plain), P2p::Overlapped);  // nothing says: overlapped
  EXPECT_EQ(p2p_of(plan, h), P2p::Blocking);        // the hardware's
  plan.p2p = P2p::Overlapped;
  EXPECT_EQ(p2p_of(plan, h), P2p::Overlapped);      // the plan's wins
}

TEST(Plan, ReadsAndWritesTheSamePlan) {
  Plan p = plan_from_json(JsonReader::from_text(kPlan, "plan.json"));
  EXPECT_EQ(p.pipeline_devices(), 2);
  EXPECT_DOUBLE_EQ(p.microbatch_size(), 2.0);
  Plan q = plan_from_json(JsonReader::from_text(plan_to_json(p).dump(), "rt"));
  EXPECT_EQ(plan_to_json(p), plan_to_json(q));
  EXPECT_FALSE(p.p2p.has_value());
  EXPECT_FALSE(plan_to_json(p).contains("p2p"));
  Plan b = plan_from_json(JsonReader::from_text(edit(kPlan, "\"recompute\"", "\"p2p\": \"blocking\", \"recompute\""), "plan.json"));
  ASSERT_TRUE(b.p2p.has_value());
  EXPECT_EQ(*b.p2p, P2p::Blocking);
  EXPECT_EQ(plan_from_json(JsonReader::from_text(plan_to_json(b).dump(), "rt")).p2p, b.p2p);
}

// One Recompute for both worlds (core/recompute.h): its names round-trip (llm/ layouts read
// them), and a profile's plan file keeps its boolean: "recompute": true is Full, whose
// schedule holds one R per (stage, micro-batch): 1F1B over 2 stages x 4 micro-batches runs
// F, R and B for each of the 8 pairs, 24 ops; false (or absent) is None, 16 ops. Selective,
// which only a transformer layout runs, is refused by name when a plan would write it.
TEST(Recompute, NamesAndThePlanFilesBoolean) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) EXPECT_EQ(recompute_from_name(to_string(r)), r);
  EXPECT_FALSE(recompute_from_name("on").has_value());  // plan --recompute's old word, not a name of the enum
  Plan none = plan_from_json(JsonReader::from_text(kPlan, "plan.json"));
  Plan full = plan_from_json(JsonReader::from_text(edit(kPlan, "\"recompute\": false", "\"recompute\": true"), "plan.json"));
  EXPECT_EQ(none.recompute, Recompute::None);
  EXPECT_EQ(full.recompute, Recompute::Full);
  EXPECT_EQ(plan_to_json(none)["recompute"], false);
  EXPECT_EQ(plan_to_json(full)["recompute"], true);
  EXPECT_EQ(schedule_for(none).num_ops(), 16u);
  const Schedule r = schedule_for(full);
  EXPECT_TRUE(r.r_ops);
  EXPECT_EQ(r.num_ops(), 24u);
  full.recompute = Recompute::Selective;
  EXPECT_EQ(error_of([&] { plan_to_json(full); }),
            "plan.json: recompute: selective re-runs a transformer layer's attention core; a profile's plan re-runs "
            "whole stages (none or full). Selective belongs in the profile itself (profile synth "
            "--recompute-granularity selective)");
  EXPECT_NE(error_of([&] { schedule_for(full); }).find("recompute: selective"), std::string::npos);
}

TEST(Plan, ValidationErrors) {
  auto read = [](const std::string& t) { return plan_from_json(JsonReader::from_text(t, "plan.json")); };
  EXPECT_EQ(error_of([&] { read(edit(kPlan, "\"microbatches\": 4", "\"microbatches\": 3")); }),
            "plan.json: microbatches: batch_size 8 is not divisible by 3 micro-batches");
  EXPECT_EQ(error_of([&] { read(edit(kPlan, "[2, 4], \"devices\"", "[3, 4], \"devices\"")); }),
            "plan.json: stages[1].layers: stages must be contiguous: expected first layer 2, got 3");
  EXPECT_EQ(error_of([&] { read(edit(kPlan, "\"devices\": [1]", "\"devices\": [0]")); }),
            "plan.json: stages[1].devices: device 0 is used by two stages");
  EXPECT_NE(error_of([&] { read(edit(kPlan, "\"1f1b\"", "\"2f2b\"")); }).find("plan.json: schedule.kind: unknown schedule"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { read(edit(kPlan, "\"chunks\": 1", "\"chunks\": 2")); }),
            "plan.json: schedule.chunks: only interleaved, looped-bfs and interleaved-zb take more than 1 chunk");
  EXPECT_EQ(error_of([&] { read(edit(kPlan, "\"recompute\"", "\"p2p\": \"eager\", \"recompute\"")); }),
            "plan.json: p2p: expected \"overlapped\", \"blocking\" or \"batched\", got \"eager\"");
  Plan p = read(kPlan);
  EXPECT_EQ(error_of([&] { check_plan_layers(p, 5, "p.json"); }),
            "plan.json: stages[1].layers: the last stage must end at layer 5 (p.json has 5 layers), got 4");
}

TEST(CostModel, DagCutChargesEveryCrossingSourceOnce) {
  // 0 -> 1 -> 2 -> 3 with a skip 0 -> 3: a cut after layer 1 carries outputs of 0 and 1;
  // a cut after layer 2 carries outputs of 0 and 2.
  Profile p;
  p.batch_sizes = {1};
  for (int i = 0; i < 4; ++i) {
    LayerProfile l;
    l.forward_ms = l.backward_ms = l.activation_bytes = {1};
    l.output_bytes = {static_cast<double>(10 * (i + 1))};
    p.layers.push_back(l);
  }
  p.edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
  EXPECT_EQ(boundary_bytes(p, 2, 1), 10 + 20);
  EXPECT_EQ(boundary_bytes(p, 3, 1), 10 + 30);
  EXPECT_EQ(boundary_bytes(p, 0, 1), 0);
  p.edges.clear();  // a chain: only the last layer's output crosses
  EXPECT_EQ(boundary_bytes(p, 3, 1), 30);
}

TEST(AtomicFile, ReplacesWholeOrNotAtAll) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "pipescope_atomic_test";
  fs::create_directories(dir);
  std::string path = (dir / "out.json").string();
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "second");
  EXPECT_THROW(write_file_atomically((dir / "missing" / "x.json").string(), "x"), InputError);
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "no temporary file may be left behind";
  fs::remove_all(dir);
}
