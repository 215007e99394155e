// The `pipescope` command end to end: exit codes, messages, JSON keys, output files.
#include <gtest/gtest.h>

#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

using Result = pipescope::testing::CliResult;
Result run(const std::string& args) { return pipescope::testing::run_cli(args); }

std::string profile(const std::string& name) { return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/" + name; }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("pipescope_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST(Cli, SimulateJsonHasTheDocumentedKeys) {
  Result r = run("simulate --profile " + profile("gpt-1.3b-h200.json") + " -K 4 -M 16 --schedule 1f1b --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"step_time_ms", "throughput_samples_per_s", "bubble_fraction", "simulated_ops", "schedule", "stages"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j["stages"].size(), 4u);
  for (const char* key : {"index", "layers", "busy_ms", "bubble_fraction", "peak_memory_bytes", "peak_activation_bytes"}) {
    EXPECT_TRUE(j["stages"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["simulated_ops"], 2 * 4 * 16);
}

TEST(Cli, ZeroBubbleWithoutSplitSaysSo) {
  Result r = run("simulate --profile " + profile("toy-uniform.json") + " -K 2 -M 4 --schedule zb-h1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("each take half of backward_ms"), std::string::npos) << r.out;
}

TEST(Cli, BadInputExitsTwoWithFileFieldAndExpectation) {
  fs::path d = temp_dir();
  write(d / "bad.json", R"({"format": "pipescope.profile", "version": 1, "model": "m",
    "device": {"name": "d", "memory_bytes": 1}, "backend": "cpu", "dtype": "fp32",
    "batch_sizes": [1, 2], "layers": [{"name": "a", "forward_ms": [1], "backward_ms": [1, 2],
    "activation_bytes": [1, 2], "output_bytes": [1, 2], "parameter_bytes": 1}]})");
  Result r = run("simulate --profile " + (d / "bad.json").string() + " -K 1 -M 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad.json: layers[0].forward_ms: expected 2 values (one per batch_sizes entry), got 1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos);

  r = run("simulate --profile " + profile("toy-uniform.json") + " -K 4 -M 6 --schedule interleaved --chunks 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("multiple of the number of stages"), std::string::npos) << r.out;

  r = run("simulate --profile " + profile("toy-uniform.json") + " -K 40 -M 6");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot cut 16 layers into 40"), std::string::npos) << r.out;

  r = run("simulate --profile " + profile("toy-uniform.json") + " --hardware " + profile("h200-8x-nvlink.json") +
          " -K 9 -M 9");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--stages 9 needs 9 devices, but"), std::string::npos) << r.out;

  r = run("simulate --profile /nonexistent.json -K 1 -M 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent.json: cannot open file"), std::string::npos) << r.out;

  r = run("simulate --bogus-flag");
  EXPECT_EQ(r.code, 2);
  fs::remove_all(d);
}

TEST(Cli, PlanFileRoundTripAndRelativeProfile) {
  fs::path d = temp_dir();
  fs::copy_file(profile("toy-uniform.json"), d / "toy.json", fs::copy_options::overwrite_existing);
  write(d / "plan.json", R"({"format": "pipescope.plan", "version": 1, "profile": "toy.json",
    "batch_size": 8, "microbatches": 8, "schedule": {"kind": "gpipe"},
    "stages": [{"layers": [0, 8], "devices": [0]}, {"layers": [8, 16], "devices": [1]}]})");
  Result r = run("simulate --plan " + (d / "plan.json").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  // 2 uniform stages of 8 layers (8 ms forward, 16 ms backward at batch 1), M = 8:
  // (M + K - 1)(t_f + t_b) = 9 x 24 ms.
  EXPECT_DOUBLE_EQ(j["step_time_ms"].get<double>(), 216.0);
  fs::remove_all(d);
}

TEST(Cli, TraceAndOutputFilesAreWrittenWhole) {
  fs::path d = temp_dir();
  Result r = run("simulate --profile " + profile("toy-uniform.json") + " -K 2 -M 4 -o " + (d / "p.json").string() +
                 " --trace " + (d / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto trace = nlohmann::json::parse(std::ifstream(d / "t.json"));
  EXPECT_GT(trace["traceEvents"].size(), 16u);
  auto pred = nlohmann::json::parse(std::ifstream(d / "p.json"));
  EXPECT_EQ(pred["format"], "pipescope.prediction");
  fs::remove_all(d);
}

TEST(Cli, ScheduleDiagramAndSynth) {
  Result r = run("schedule -K 4 -M 8 --schedule 1f1b");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("device 3 |"), std::string::npos);
  r = run("profile synth --kind gpt --layers 2 -o -");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["layers"].size(), 4u);
}

TEST(Cli, PlanFileNamesTheRuntimeItWasMadeWith) {
  // One job, one answer: `plan --runtime X -o plan.json` records X, and `simulate --plan`
  // predicts with it, as `--runtime X` would. The toy profile's best plan for D = 2,
  // N = 8 is K = 1, r = 2, M = 1: one F and one B per device and step, and the runtime
  // adds 1 ms before the F and 2 ms before the B: 3 ms more than the ops alone.
  fs::path d = temp_dir() / "runtime";
  fs::create_directories(d / "sub");
  fs::copy_file(profile("toy-uniform.json"), d / "toy.json", fs::copy_options::overwrite_existing);
  write(d / "rt.json", R"({"format": "pipescope.runtime", "version": 1, "framework": "test",
    "schedule_class": "any", "action_us": {"F": 1000, "B": 2000}})");
  const std::string plan = (d / "sub" / "plan.json").string();
  Result r = run("plan --profile " + (d / "toy.json").string() + " -D 2 -N 8 --schedules 1f1b --runtime " +
                 (d / "rt.json").string() + " -o " + plan);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(plan);
  nlohmann::json written = nlohmann::json::parse(in);
  EXPECT_EQ(written["runtime"], "../rt.json") << "relative to the plan's folder, as its profile";
  auto step = [](const Result& res) { return nlohmann::json::parse(res.out)["step_time_ms"].get<double>(); };
  const Result with_file = run("simulate --plan " + plan + " --json");
  const Result with_flag = run("simulate --plan " + plan + " --runtime " + (d / "rt.json").string() + " --json");
  ASSERT_EQ(with_file.code, 0) << with_file.out;
  ASSERT_EQ(with_flag.code, 0) << with_flag.out;
  EXPECT_DOUBLE_EQ(step(with_file), step(with_flag));
  written.erase("runtime");
  write(d / "sub" / "ops.json", written.dump());
  const Result ops_alone = run("simulate --plan " + (d / "sub" / "ops.json").string() + " --json");
  ASSERT_EQ(ops_alone.code, 0) << ops_alone.out;
  EXPECT_DOUBLE_EQ(step(with_file) - step(ops_alone), 3.0);

  // A bundled runtime is recorded by its name; a name that is neither exits 2 naming the field.
  r = run("plan --profile " + (d / "toy.json").string() + " -D 2 -N 8 --schedules 1f1b --runtime torch-2.13-gloo -o " +
          plan);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream again(plan);
  EXPECT_EQ(nlohmann::json::parse(again)["runtime"], "torch-2.13-gloo");
  written["runtime"] = "no-such-runtime";
  write(d / "sub" / "bad.json", written.dump());
  r = run("simulate --plan " + (d / "sub" / "bad.json").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad.json: runtime: \"no-such-runtime\" is neither a file nor a bundled runtime"), std::string::npos)
      << r.out;
  written["runtime"] = "";
  write(d / "sub" / "empty.json", written.dump());
  r = run("simulate --plan " + (d / "sub" / "empty.json").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("runtime"), std::string::npos) << r.out;
  fs::remove_all(d);
}
