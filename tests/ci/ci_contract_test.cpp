// Small contracts of the commands in CI: run checks every flag before starting workers
// (exit 2, not 3), run and sweep write their output files all or nothing, run refuses
// -o and --trace naming one file, an extrapolated micro-batch size is noted, and a
// hand-written profile may leave out device, backend and dtype.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/profile.h"
#include "tests/ci/ci_util.h"
#include "tests/support/source_paths.h"

using namespace pipescope::ci_testing;

namespace {

const std::string kRun = "run --profile " + shipped("gpt-tiny-cpu.json") + " -K 2 -M 2 --steps 1 ";

}  // namespace

TEST(CiContract, RunRefusesAnUnknownOptimizerBeforeStartingWorkers) {
  const Outcome r = run_pipescope(kRun + "--optimizer foo");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("pipescope: error: --optimizer: expected sgd or adam, got \"foo\""), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stage"), std::string::npos) << "no worker may have started: " << r.err;
  EXPECT_EQ(run_pipescope(kRun + "--lr nan").code, 2);
}

TEST(CiContract, RunRefusesOutputAndTraceNamingOneFile) {
  const std::string same = (scratch() / "same.json").string();
  const Outcome r = run_pipescope(kRun + "-o " + same + " --trace " + same);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--trace and --output name the same file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(same));
}

TEST(CiContract, RunWritesItsFilesAllOrNothing) {
  // -o names a folder, which cannot be replaced by a file: the trace must not appear either.
  const fs::path folder = scratch() / "run-out-is-a-folder";
  fs::create_directories(folder);
  const fs::path trace = scratch() / "run-trace-all-or-nothing.json";
  fs::remove(trace);
  const Outcome r = run_pipescope(kRun + "-o " + folder.string() + " --trace " + trace.string());
  EXPECT_NE(r.code, 0);
  EXPECT_FALSE(fs::exists(trace)) << "exit " << r.code << ": " << r.err;
}

TEST(CiContract, SweepWritesItsFilesAllOrNothing) {
  const fs::path prefix = scratch() / "sweep-all-or-nothing";
  fs::remove(prefix.string() + ".csv");
  fs::create_directories(prefix.string() + ".json");  // PREFIX.json cannot be written
  const Outcome r = run_pipescope("sweep --profile " + shipped("toy-uniform.json") + " --devices 2 --batch 4 -o " +
                          prefix.string());
  EXPECT_NE(r.code, 0);
  EXPECT_FALSE(fs::exists(prefix.string() + ".csv")) << "exit " << r.code << ": " << r.err;
  const fs::path good = scratch() / "sweep-both";
  ASSERT_EQ(run_pipescope("sweep --profile " + shipped("toy-uniform.json") + " --devices 2 --batch 4 -o " + good.string()).code, 0);
  EXPECT_TRUE(fs::exists(good.string() + ".csv") && fs::exists(good.string() + ".json"));
}

TEST(CiContract, ExtrapolatedMicrobatchSizeIsNoted) {
  // toy-uniform measures sizes 1, 2, 4, 8: 16 is outside, 4 inside.
  const std::string base = "simulate --profile " + shipped("toy-uniform.json") + " -K 2 -M 2 --json --microbatch-size ";
  Outcome r = run_pipescope(base + "16");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string note =
      "micro-batch size 16 (per replica) is outside the profile's measured sizes 1 to 8: its times and bytes were "
      "extrapolated (linearly from the nearest two sizes)";
  bool found = false;
  const nlohmann::json prediction = nlohmann::json::parse(r.out);
  for (const auto& n : prediction["notes"]) found = found || n == note;
  EXPECT_TRUE(found) << r.out;
  r = run_pipescope(base + "4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("extrapolated"), std::string::npos) << r.out;
}

TEST(CiContract, ProfileWithoutDeviceBackendOrDtypeTakesTheDefaults) {
  const std::string text = R"({"format": "pipescope.profile", "version": 1, "model": "hand-written",
    "batch_sizes": [1], "layers": [{"name": "a", "forward_ms": [1], "backward_ms": [2],
    "activation_bytes": [10], "output_bytes": [4], "parameter_bytes": 8}]})";
  const pipescope::Profile p = pipescope::profile_from_json(pipescope::JsonReader::from_text(text, "hand.json"));
  EXPECT_EQ(p.device_name, "unspecified");
  EXPECT_EQ(p.device_memory_bytes, 0);
  EXPECT_EQ(p.backend, "unspecified");
  EXPECT_EQ(p.dtype, "fp32");
  // What is written reads back (an unknown memory size is left out, not written as 0).
  const pipescope::Json written = pipescope::profile_to_json(p);
  EXPECT_FALSE(written["device"].contains("memory_bytes"));
  const pipescope::Profile back =
      pipescope::profile_from_json(pipescope::JsonReader::from_text(written.dump(), "written.json"));
  EXPECT_EQ(back.device_name, "unspecified");
  // A device given without its memory is fine too; a memory of 0 is still refused.
  EXPECT_NO_THROW(pipescope::profile_from_json(pipescope::JsonReader::from_text(
      std::string(text).replace(text.find("\"batch_sizes\""), 0, R"("device": {"name": "x"}, )"), "d.json")));
  EXPECT_THROW(pipescope::profile_from_json(pipescope::JsonReader::from_text(
                   std::string(text).replace(text.find("\"batch_sizes\""), 0, R"("device": {"memory_bytes": 0}, )"),
                   "d0.json")),
               pipescope::InputError);
  // And the command simulates it.
  const fs::path file = scratch() / "input-hand-written.json";
  std::ofstream(file) << text;
  const Outcome r = run_pipescope("simulate --profile " + file.string() + " -K 1 -M 2");
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(CiContract, ValidateReadsEveryFormatAndNamesTheBadFile) {
  const fs::path bad = scratch() / "input-bad-hardware.json";
  std::ofstream(bad) << R"({"format": "pipescope.hardware", "version": 1, "name": "h", "devices": 0,
    "memory_bytes": 1, "link": {"bandwidth_gb_per_s": 1, "latency_us": 1}})";
  const std::string good = shipped("toy-uniform.json") + " " + shipped("h200-8x-nvlink.json") + " " +
                           std::string(PIPESCOPE_SOURCE_DIR) + "/models/gpt-tiny.json";
  Outcome r = run_pipescope("validate " + good);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("toy-uniform.json: ok (pipescope.profile v1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpt-tiny.json: ok (pipescope.model v1)"), std::string::npos) << r.out;
  r = run_pipescope("validate " + bad.string() + " " + good);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input-bad-hardware.json: devices: expected an integer >= 1, got 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 of 4 files refused"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("h200-8x-nvlink.json: ok (pipescope.hardware v1)"), std::string::npos) << "it goes on: " << r.out;
}
