// The same inputs give the same bytes: `pipescope simulate` run twice writes
// byte-identical prediction JSON, stdout and Chrome trace for every schedule (with
// transfers, replicas and re-materialisation in play). Time in the simulator is
// integer nanoseconds and each time is a max of times already computed (it walks each
// position's op list; no event queue, no ties), so nothing may differ.
#include <gtest/gtest.h>

#include <string>

#include "tests/reliability/reliability_util.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_pipescope;
using testing::TempDir;

const char* kHardware = R"({"format": "pipescope.hardware", "version": 1, "name": "2 nodes", "devices": 4,
 "memory_bytes": 1073741824, "link": {"bandwidth_gb_per_s": 25, "latency_us": 2},
 "nodes": {"devices_per_node": 2, "link": {"bandwidth_gb_per_s": 12.5, "latency_us": 8}},
 "speed": [1, 2, 0.5, 1]})";

class ReliabilityDeterminism : public ::testing::TestWithParam<const char*> {};

TEST_P(ReliabilityDeterminism, TwoRunsGiveByteIdenticalJsonAndTrace) {
  TempDir dir;
  dir.write("h.json", kHardware);
  const std::string args = std::string("simulate --profile '") + PIPESCOPE_SOURCE_DIR +
                           "/profiles/amoebanet-like.json' --hardware h.json -K 4 -M 8 " + GetParam();
  std::string first_json, first_trace, first_out;
  for (int run = 0; run < 2; ++run) {
    testing::CommandResult r = run_pipescope(dir, args + " --json -o p.json --trace t.json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string json = testing::read_text(dir.file("p.json")), trace = testing::read_text(dir.file("t.json"));
    ASSERT_GT(trace.size(), 1000u);
    if (run == 0) {
      first_json = json, first_trace = trace, first_out = r.out;
    } else {
      EXPECT_EQ(json, first_json);
      EXPECT_EQ(trace, first_trace);
      EXPECT_EQ(r.out, first_out);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, ReliabilityDeterminism,
                         ::testing::Values("--schedule gpipe", "--schedule 1f1b", "--schedule 1f1b --recompute",
                                           "--schedule interleaved --chunks 2", "--schedule zb-h1"));

}  // namespace
}  // namespace pipescope
