// Replays every input the fuzzers kept (fuzz/regressions/<target>/) through the
// normal readers: each must be read or refused with an InputError, never crash or
// throw anything else. Named cases check the message of the fix they pinned.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "core/error.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "llm/job.h"
#include "llm/llm_plan_json.h"
#include "llm/plan_layout.h"
#include "tests/reliability/reliability_util.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;

const fs::path kRegressions = fs::path(PIPESCOPE_SOURCE_DIR) / "fuzz" / "regressions";

// Reads `path` with `read`; returns "" when read, the InputError message when refused.
std::string outcome(const std::function<void(const JsonReader&)>& read, const fs::path& path) {
  try {
    read(JsonReader::from_file(path.string()));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ReliabilityRegressions, EveryKeptFuzzInputIsReadOrRefusedWithAnInputError) {
  const std::map<std::string, std::function<void(const JsonReader&)>> readers = {
      {"profile", [](const JsonReader& r) { profile_from_json(r); }},
      {"hardware", [](const JsonReader& r) { hardware_from_json(r); }},
      {"plan", [](const JsonReader& r) { plan_from_json(r); }},
      {"report", [](const JsonReader& r) { report_from_json(r); }},
      {"llm_plan", [](const JsonReader& r) { llm_plan_result_from_json(r); }},
      {"job", [](const JsonReader& r) { (void)plan_job(plan_from_json(r)); }},
      {"layout", [](const JsonReader& r) { (void)layout_from_json(r); }},
  };
  int replayed = 0;
  for (const auto& [target, read] : readers) {
    if (!fs::exists(kRegressions / target)) continue;
    for (const auto& entry : fs::directory_iterator(kRegressions / target)) {
      SCOPED_TRACE(entry.path().string());
      EXPECT_NO_THROW(outcome(read, entry.path()));  // anything but InputError escapes
      ++replayed;
    }
  }
  EXPECT_GE(replayed, 1) << "no kept inputs under " << kRegressions;
}

TEST(ReliabilityRegressions, NumberBeyondDoubleFoundByFuzzingIsABadInputNotAnInternalError) {
  // nlohmann throws out_of_range (not parse_error) for 1e400; it used to escape as an
  // internal error (exit 1).
  std::string what = outcome([](const JsonReader& r) { profile_from_json(r); },
                             kRegressions / "profile" / "number-overflow-1e400.json");
  EXPECT_NE(what.find("number overflow"), std::string::npos) << what;
}

TEST(ReliabilityRegressions, LayoutProductsBeyondAnIntAreRefusedByTheReader) {
  // t = cp = 2^20 read (each within its own bound) and t cp d p = 2^43 overflowed
  // ParallelLayout::gpus()'s int, undefined behaviour before any check could see it; so
  // did b M d (2^42 samples) and p v (2^40 chunks).
  auto layout = [](const char* name) {
    return outcome([](const JsonReader& r) { (void)layout_from_json(r); }, kRegressions / "layout" / name);
  };
  EXPECT_NE(layout("gpus-overflow-int.json").find("t x cp x d x p = 8796093022208 GPUs; at most 2^20 = 1048576"),
            std::string::npos);
  EXPECT_NE(layout("global-batch-overflow-int.json").find("micro_batch x microbatches x d = 4398046511104 samples per step; "
                                                          "at most 2^31 - 1"), std::string::npos);
  EXPECT_NE(layout("chunks-overflow-int.json").find("p x v = 1099511627776 chunks; at most 2^20"), std::string::npos);
}

TEST(ReliabilityRegressions, AJobWhoseStagesAreNotItsLayoutsIsRefused) {
  // The plan's stage 6 holds layers [25, 30) (5 decoder layers, layers_per_chunk[6] = 5 as
  // planned); the edited layout says 4 per chunk, so chunk 6 is [25, 29).
  const std::string what = outcome([](const JsonReader& r) { (void)plan_job(plan_from_json(r)); },
                                   kRegressions / "job" / "layers-per-chunk-not-the-stages.json");
  EXPECT_NE(what.find("stages[6]: layers [25, 30) on device(s) 0, but the job's layout"), std::string::npos) << what;
  EXPECT_NE(what.find("puts layers [25, 29) on position 0"), std::string::npos) << what;
}

}  // namespace
}  // namespace pipescope
