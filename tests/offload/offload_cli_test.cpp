// `--offload` and `--offload-fraction` on simulate, plan, sweep and run (cli/plan_options.h),
// and a plan file's "offload": bad input exits 2 naming the flag or field and what was
// expected; --json prints one object with the offload's numbers. GPipe, K = 8, M = 32 of
// gpt-13b on the H200 file (PCIe Gen5, 64 GB/s each way): selective with a quarter of each
// stash offloads and reloads every micro-batch of position 0 without losing a nanosecond
// (sim/offload.h's rule), so the step is exactly the one without offload.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::expect_refused;
using testing::run_cli;

const std::string kSrc = PIPESCOPE_SOURCE_DIR;
const std::string kGpt = "--profile " + kSrc + "/profiles/gpt-13b-h200.json --hardware " + kSrc +
                         "/profiles/gpus/h200.json --stages 8 --microbatches 32 --microbatch-size 1 --schedule gpipe";
const std::string kToy = "--profile " + kSrc + "/profiles/toy-uniform.json --stages 4 --microbatches 8";

TEST(OffloadCli, BadFlagsExitTwoNamingTheFlag) {
  expect_refused("simulate " + kToy + " --offload all",
                 "--offload all: the hardware file (none given) has no \"host_link\"");
  expect_refused("simulate " + kGpt + " --offload all --offload-fraction 1.5",
                 "--offload-fraction: fraction[0] expected in [0, 1], got 1.5");
  expect_refused("simulate " + kGpt + " --offload all --offload-fraction 1,0.5",
                 "--offload-fraction: expected one fraction or 8 (one per stage), got 2");
  expect_refused("simulate " + kGpt + " --offload-fraction 0.5", "--offload-fraction: give --offload all or selective with it");
  expect_refused("simulate " + kGpt + " --offload most", "--offload");
  expect_refused("run --profile " + kSrc + "/profiles/gpt-tiny-cpu.json -K 2 -M 4 --hardware " + kSrc +
                     "/profiles/gpus/h200.json --offload selective --optimizer-step post-validation",
                 "--offload selective: the executor offloads flushed steps with a synchronized optimizer step only");
  expect_refused("plan --profile " + kSrc + "/profiles/toy-uniform.json --devices 4 --batch 8 --offload all",
                 "has no \"host_link\"");
  expect_refused("plan --profile " + kSrc + "/profiles/toy-uniform.json --hardware " + kSrc +
                     "/profiles/gpus/h200.json --devices 4 --batch 8 --offload all --offload-fraction 1,1",
                 "--offload-fraction: the search tries several stage counts; give one fraction for every stage");
}

TEST(OffloadCli, SelectiveKeepsTheStepAndSaysWhatItSent) {
  const auto none = run_cli("simulate " + kGpt + " --json");
  const auto sel = run_cli("simulate " + kGpt + " --offload selective --offload-fraction 0.25 --json");
  ASSERT_EQ(none.code, 0) << none.out;
  ASSERT_EQ(sel.code, 0) << sel.out;
  const nlohmann::json a = nlohmann::json::parse(none.out), b = nlohmann::json::parse(sel.out);
  EXPECT_EQ(b["offload"], "selective");
  EXPECT_FALSE(a.contains("offload"));
  EXPECT_EQ(b["step_time_ms"], a["step_time_ms"]);
  // Position 0 sends a quarter of each of its 32 stashes; its peak drops by what is on the
  // host at the end of GPipe's forwards.
  const int64_t stash = a["stages"][0]["peak_activation_bytes"].get<int64_t>() / 32;
  EXPECT_NEAR(b["stages"][0]["offloaded_bytes"].get<double>(), 32.0 * stash / 4, 32.0);
  EXPECT_LT(b["stages"][0]["peak_activation_bytes"].get<int64_t>(), a["stages"][0]["peak_activation_bytes"].get<int64_t>());
  for (const auto& st : b["stages"]) EXPECT_EQ(st["offload_delay_ms"], 0.0);
}

TEST(OffloadCli, PlanFilesCarryTheOffload) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pipescope_offload_cli";
  std::filesystem::create_directories(dir);
  const std::string plan = (dir / "plan.json").string();
  const auto made = run_cli("plan --profile " + kSrc + "/profiles/gpt-13b-h200.json --hardware " + kSrc +
                            "/profiles/gpus/h200.json --devices 8 --batch 32 --schedules gpipe,1f1b --offload selective "
                            "--offload-fraction 0.25 -o " + plan);
  ASSERT_EQ(made.code, 0) << made.out;
  std::ifstream in(plan);
  const nlohmann::json p = nlohmann::json::parse(in);
  EXPECT_EQ(p["offload"]["policy"], "selective");
  EXPECT_EQ(p["offload"]["fraction"], 0.25);
  const auto sim = run_cli("simulate --plan " + plan + " --hardware " + kSrc + "/profiles/gpus/h200.json --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  EXPECT_EQ(nlohmann::json::parse(sim.out)["offload"], "selective");
  // The same plan on hardware without a host link: the plan file's field is named.
  const auto bare = run_cli("simulate --plan " + plan + " --hardware " + kSrc + "/profiles/h200-8x-nvlink.json");
  EXPECT_EQ(bare.code, 2);
  EXPECT_NE(bare.out.find(plan + ": offload selective: the hardware file"), std::string::npos) << bare.out;
  std::filesystem::remove_all(dir);
}

// `run --offload all --clock model --compare`: the CPU executor offloads for real, and its
// host-pool peaks equal the prediction's (the comparison's rows, predicted = measured).
TEST(OffloadCli, RunOffloadsAndCompareShowsHostPeaks) {
  const auto r = run_cli("run --profile " + kSrc + "/profiles/gpt-tiny-cpu.json -K 2 -M 4 --hardware " + kSrc +
                         "/profiles/gpus/h200.json --offload all --clock model --steps 2 --compare --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["offload"], "all");
  int host_rows = 0;
  for (const auto& v : j["comparison"]["values"]) {
    const std::string name = v["name"];
    if (name.find("host_peak_bytes") == std::string::npos && name.find("offloaded_bytes") == std::string::npos) continue;
    EXPECT_EQ(v["measured"], v["predicted"]) << name;
    EXPECT_GT(v["predicted"].get<double>(), 0) << name;
    ++host_rows;
  }
  EXPECT_EQ(host_rows, 4);  // two positions, two rows each
}

// A host peak over the hardware file's host_link.memory_bytes exits 2 naming the field and
// the bytes; --host-capacity report only reports it (and the report carries the limit).
TEST(OffloadCli, HostCapacityIsChecked) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pipescope_offload_host";
  std::filesystem::create_directories(dir);
  const std::string hw = (dir / "small-host.json").string();
  std::ofstream(hw) << R"({"format": "pipescope.hardware", "version": 1, "name": "8 GPUs, 1 GB host each",
    "devices": 8, "memory_bytes": 141000000000, "link": {"bandwidth_gb_per_s": 450.0, "latency_us": 5.0},
    "host_link": {"to_host": {"bandwidth_gb_per_s": 64.0, "latency_us": 10.0},
                  "to_device": {"bandwidth_gb_per_s": 64.0, "latency_us": 10.0}, "memory_bytes": 1000000000}})";
  const std::string args = "simulate --profile " + kSrc + "/profiles/gpt-13b-h200.json --hardware " + hw +
                           " --stages 8 --microbatches 32 --microbatch-size 1 --schedule gpipe --offload all";
  expect_refused(args, hw + ": host_link.memory_bytes: position 0 holds ");
  const auto report = run_cli(args + " --host-capacity report --json");
  ASSERT_EQ(report.code, 0) << report.out;
  const nlohmann::json j = nlohmann::json::parse(report.out);
  EXPECT_EQ(j["host_memory_limit_bytes"], 1000000000);
  EXPECT_GT(j["stages"][0]["host_peak_bytes"].get<int64_t>(), 1000000000);
  EXPECT_EQ(j["stages"][0]["fits"], false);  // over the host memory: the planner passes over it
  EXPECT_EQ(j["fits"], false);
  // The planner passes over such candidates: each one over 1 GB on the host does not fit.
  const std::string prefix = (dir / "sweep").string();
  const auto sweep = run_cli("sweep --profile " + kSrc + "/profiles/gpt-13b-h200.json --hardware " + hw +
                             " --devices 8 --batch 32 --schedules gpipe,1f1b --offload all -o " + prefix);
  ASSERT_EQ(sweep.code, 0) << sweep.out;
  std::ifstream in(prefix + ".json");
  const nlohmann::json all = nlohmann::json::parse(in);
  int over = 0;
  for (const auto& c : all["candidates"]) {
    bool host_over = false;
    for (const auto& p : c["positions"]) host_over = host_over || p["host_peak_bytes"].get<int64_t>() > 1000000000;
    if (host_over) {
      EXPECT_EQ(c["fits"], false) << c["label"];
    }
    over += host_over;
  }
  EXPECT_GT(over, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pipescope
