// The formats of activation offload: the hardware file's "host_link" (read, written back,
// bad input naming the field and what was expected), the plan file's "offload" and the
// checks every front end runs (check_offload: a fraction outside [0, 1], a list of the
// wrong length, an offload without a host link, each naming the flag or field).
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/hardware.h"
#include "core/offload.h"
#include "core/plan.h"
#include "tests/support/input_error.h"
#include "tests/support/test_support.h"

namespace pipescope {
namespace {

using testing::input_error_of;

const char* kHardware = R"({"format": "pipescope.hardware", "version": 1, "name": "h",
  "devices": 2, "memory_bytes": 1000,
  "link": {"bandwidth_gb_per_s": 100.0, "latency_us": 5.0},
  "host_link": {"to_host": {"bandwidth_gb_per_s": 55.0, "latency_us": 2.0},
                "to_device": {"bandwidth_gb_per_s": 50.0, "latency_us": 3.0}}})";

const char* kPlan = R"({"format": "pipescope.plan", "version": 1, "profile": "p.json",
  "batch_size": 8, "microbatches": 4, "schedule": {"kind": "1f1b", "chunks": 1},
  "offload": {"policy": "all", "fraction": 0.5},
  "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 4], "devices": [1]}]})";

Hardware read_hardware(const std::string& text) { return hardware_from_json(JsonReader::from_text(text, "h.json")); }
Plan read_plan(const std::string& text) { return plan_from_json(JsonReader::from_text(text, "plan.json")); }

TEST(HostLink, ReadAndWrittenBack) {
  const Hardware h = read_hardware(kHardware);
  ASSERT_TRUE(h.host_link.has_value());
  // 55 GB/s = 55 bytes per ns: 5500 bytes take 100 ns; 2 us latency = 2000 ns.
  EXPECT_EQ(h.host_link->to_host.busy_ns(5500), 100);
  EXPECT_EQ(h.host_link->to_host.latency_ns(), 2000);
  EXPECT_EQ(h.host_link->to_device.busy_ns(5000), 100);
  EXPECT_EQ(h.host_link->to_device.latency_ns(), 3000);
  const Hardware again = hardware_from_json(JsonReader::from_text(hardware_to_json(h).dump(), "again.json"));
  ASSERT_TRUE(again.host_link.has_value());
  EXPECT_EQ(again.host_link->to_device.bandwidth_gb_per_s, 50.0);
  EXPECT_FALSE(read_hardware(testing::replaced(kHardware, "\"host_link\"", "\"unused\"")).host_link.has_value());
}

TEST(HostLink, BadInputNamesTheField) {
  EXPECT_EQ(input_error_of([] { read_hardware(testing::replaced(kHardware, "\"to_device\"", "\"to_dev\"")); }),
            "h.json: host_link.to_device: missing required field");
  EXPECT_NE(input_error_of([] { read_hardware(testing::replaced(kHardware, "55.0", "0")); }).find("h.json: host_link.to_host.bandwidth_gb_per_s:"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { read_hardware(testing::replaced(kHardware, "\"latency_us\": 3.0", "\"latency_us\": -1")); })
                .find("h.json: host_link.to_device.latency_us:"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { read_hardware(testing::replaced(kHardware, "{\"bandwidth_gb_per_s\": 55.0, \"latency_us\": 2.0}", "[]")); })
                .find("h.json: host_link.to_host"),
            std::string::npos);
}

// host_link's memory_bytes and node_memory_bytes: read, written back, bad values named.
TEST(HostLink, HostMemoryReadWrittenBackAndChecked) {
  const std::string text = testing::replaced(kHardware, "\"latency_us\": 3.0}", "\"latency_us\": 3.0}, \"memory_bytes\": 4000, \"node_memory_bytes\": 6000");
  const Hardware h = read_hardware(text);
  EXPECT_EQ(h.host_link->memory_bytes, 4000);
  EXPECT_EQ(h.host_link->node_memory_bytes, 6000);
  const Hardware again = hardware_from_json(JsonReader::from_text(hardware_to_json(h).dump(), "again.json"));
  EXPECT_EQ(again.host_link->memory_bytes, 4000);
  EXPECT_EQ(again.host_link->node_memory_bytes, 6000);
  EXPECT_EQ(read_hardware(kHardware).host_link->memory_bytes, 0);  // absent: unbounded
  EXPECT_NE(input_error_of([&] { read_hardware(testing::replaced(text, "4000", "0")); }).find("h.json: host_link.memory_bytes:"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] { read_hardware(testing::replaced(text, "6000", "\"a lot\"")); })
                .find("h.json: host_link.node_memory_bytes:"),
            std::string::npos);
  // Two positions on devices 0 and 1 of one node (no "nodes": one node): 3000 and 3500
  // bytes at their host peaks fit 4000 each, but 6500 together exceed the node's 6000.
  StepReport r;
  r.offload = "all";
  r.positions.resize(2);
  r.positions[0].host_peak_bytes = 3000;
  r.positions[0].hardware_devices = {0};
  r.positions[1].index = 1;
  r.positions[1].host_peak_bytes = 3500;
  r.positions[1].hardware_devices = {1};
  EXPECT_EQ(input_error_of([&] { check_host_capacity(r, h, "--host-capacity report"); }),
            "h.json: host_link.node_memory_bytes: the positions on node 0 hold 6500 bytes on the host at their peaks "
            "together, over the 6000 the file gives each node (--host-capacity report to report it only)");
  r.positions[1].host_peak_bytes = 4001;
  EXPECT_EQ(input_error_of([&] { check_host_capacity(r, h, "--host-capacity report"); }),
            "h.json: host_link.memory_bytes: position 1 holds 4001 bytes on the host at its peak, over the 4000 the "
            "file gives each device (--host-capacity report to report it only)");
  r.positions[1].host_peak_bytes = 2999;  // 5999 together: fits both
  EXPECT_EQ(input_error_of([&] { check_host_capacity(r, h, "--host-capacity report"); }), "");
}

TEST(OffloadPlan, ReadAndWrittenBack) {
  const Plan p = read_plan(kPlan);
  EXPECT_EQ(p.offload.policy, OffloadPolicy::All);
  EXPECT_EQ(p.offload.fraction_of(1), 0.5);
  // 0.5 of a 1001-byte stash: 500.5 rounds to the nearest byte, 501 (llround: half away from 0).
  EXPECT_EQ(p.offload.offloaded_bytes(0, 1001), 501);
  const Plan again = plan_from_json(JsonReader::from_text(plan_to_json(p).dump(), "again.json"));
  EXPECT_EQ(again.offload.policy, OffloadPolicy::All);
  EXPECT_EQ(again.offload.fraction, std::vector<double>{0.5});
  const Plan list = read_plan(testing::replaced(kPlan, "\"fraction\": 0.5", "\"fraction\": [1, 0.25]"));
  EXPECT_EQ(list.offload.fraction_of(1), 0.25);
  EXPECT_EQ(plan_to_json(list)["offload"]["fraction"], (Json{1, 0.25}));
  // Absent, or none: no offload, and the plan file written back says nothing of it.
  const Plan none = read_plan(testing::replaced(kPlan, "\"offload\"", "\"unused\""));
  EXPECT_FALSE(none.offload.active());
  EXPECT_FALSE(plan_to_json(none).contains("offload"));
}

TEST(OffloadPlan, BadInputNamesTheField) {
  EXPECT_EQ(input_error_of([] { read_plan(testing::replaced(kPlan, "\"all\"", "\"most\"")); }),
            "plan.json: offload.policy: expected \"none\", \"all\" or \"selective\", got \"most\"");
  EXPECT_NE(input_error_of([] { read_plan(testing::replaced(kPlan, "\"fraction\": 0.5", "\"fraction\": 1.5")); }).find("plan.json: offload.fraction:"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { read_plan(testing::replaced(kPlan, "\"fraction\": 0.5", "\"fraction\": [0.5, -1]")); }).find("plan.json: offload.fraction"),
            std::string::npos);
  // Two stages: a list of 3 is the wrong length.
  EXPECT_EQ(input_error_of([] { read_plan(testing::replaced(kPlan, "\"fraction\": 0.5", "\"fraction\": [1, 1, 1]")); }),
            "plan.json: offload.fraction: expected one fraction or 2 (one per stage), got 3");
}

TEST(OffloadChecks, FlagsNameWhatIsWrong) {
  EXPECT_EQ(input_error_of([] { parse_offload_policy("some"); }), "--offload: expected none, all or selective, got \"some\"");
  EXPECT_EQ(parse_offload_fraction("0.5"), std::vector<double>{0.5});
  EXPECT_EQ(parse_offload_fraction("1,0.5,0"), (std::vector<double>{1, 0.5, 0}));
  EXPECT_NE(input_error_of([] { parse_offload_fraction("half"); }).find("--offload-fraction: expected a number in [0, 1]"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_offload_fraction("1,,0"); }).find("--offload-fraction:"), std::string::npos);
  const Hardware with = read_hardware(kHardware);
  const Hardware without = Hardware::ideal(2);
  Offload o{OffloadPolicy::All, {1.5}};
  EXPECT_EQ(input_error_of([&] { check_offload(o, 2, with, "--offload-fraction"); }),
            "--offload-fraction: fraction[0] expected in [0, 1], got 1.5");
  o.fraction = {1, 1, 1};
  EXPECT_EQ(input_error_of([&] { check_offload(o, 2, with, "--offload-fraction"); }),
            "--offload-fraction: expected one fraction or 2 (one per stage), got 3");
  o.fraction = {};
  EXPECT_EQ(input_error_of([&] { check_offload(o, 2, with, "--offload"); }), "");
  EXPECT_NE(input_error_of([&] { check_offload(o, 2, without, "--offload"); }).find("--offload all: the hardware file (none given) has no \"host_link\""),
            std::string::npos);
  o.policy = OffloadPolicy::None;  // none needs no host link
  EXPECT_EQ(input_error_of([&] { check_offload(o, 2, without, "--offload"); }), "");
}

}  // namespace
}  // namespace pipescope
