// `pipescope plan` takes activation offload when memory binds (planner/candidate_evaluation.h:
// consider_offload), end to end. gpt-13b, 8 devices, batch 64, GPipe only, no
// re-materialisation, on the H200 file with its host link raised to a GH200-style 450 GB/s
// each way (a temporary copy): no GPipe plan fits 131.32 GiB without offload (the least
// needs 394.50 GiB: GPipe holds every micro-batch's stash), and with selective offload K = 2
// fits (docs/memory.md). Expected: the winner says offload=selective and "at no cost"
// (selective delays nothing, sim/offload.h), the plan file carries it, `simulate --plan`
// gives the winner's step and fits; with --offload none nothing fits (exit 2), nor with a
// --framework, which runs no such offload.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_cli;

const std::string kSrc = PIPESCOPE_SOURCE_DIR;

TEST(PlanOffloadCli, TakesSelectiveWhenNothingFitsWithout) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pipescope_plan_offload_cli";
  std::filesystem::create_directories(dir);
  nlohmann::json hw = nlohmann::json::parse(std::ifstream(kSrc + "/profiles/gpus/h200.json"));
  hw["host_link"] = {{"to_host", {{"bandwidth_gb_per_s", 450.0}, {"latency_us", 10.0}}},
                     {"to_device", {{"bandwidth_gb_per_s", 450.0}, {"latency_us", 10.0}}}};
  const std::string hardware = (dir / "h200-c2c.json").string(), plan = (dir / "plan.json").string();
  std::ofstream(hardware) << hw.dump();
  const std::string args = "plan --profile " + kSrc + "/profiles/gpt-13b-h200.json --hardware " + hardware +
                           " --devices 8 --batch 64 --schedules gpipe --recompute off";
  const auto made = run_cli(args + " -o " + plan);
  ASSERT_EQ(made.code, 0) << made.out;
  EXPECT_NE(made.out.find("Why gpipe K=2 r=4 M=16 offload=selective:"), std::string::npos) << made.out;
  EXPECT_NE(made.out.find("selective offload saves"), std::string::npos) << made.out;
  EXPECT_NE(made.out.find("at no cost"), std::string::npos) << made.out;
  EXPECT_NE(made.out.find("the plan takes selective."), std::string::npos) << made.out;
  const nlohmann::json p = nlohmann::json::parse(std::ifstream(plan));
  EXPECT_EQ(p["offload"]["policy"], "selective");
  const auto sim = run_cli("simulate --plan " + plan + " --hardware " + hardware + " --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  const nlohmann::json s = nlohmann::json::parse(sim.out);
  EXPECT_EQ(s["offload"], "selective");
  for (const auto& st : s["stages"]) {
    EXPECT_LE(st["peak_memory_bytes"].get<int64_t>(), 141000000000) << sim.out;
    EXPECT_EQ(st["offload_delay_ms"], 0.0);
  }
  const auto none = run_cli(args + " --offload none");
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("no candidate fits"), std::string::npos) << none.out;
  // --framework: none of the three runs this offload (llm/framework.h's
  // activation_offload_refusal), so the search does not take it (nothing fits, as with
  // --offload none) and asking for it exits 2 naming the framework's own mechanism.
  const auto torch = run_cli(args + " --framework torch");
  EXPECT_EQ(torch.code, 2) << torch.out;
  EXPECT_NE(torch.out.find("no candidate fits"), std::string::npos) << torch.out;
  const auto asked = run_cli(args + " --framework torch --offload all");
  EXPECT_EQ(asked.code, 2) << asked.out;
  EXPECT_NE(asked.out.find("--offload: --framework torch cannot run it"), std::string::npos) << asked.out;
  EXPECT_NE(asked.out.find("save_on_cpu"), std::string::npos) << asked.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pipescope
