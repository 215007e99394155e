// Fuzz target: llm_plan_result_from_json and llm_plan_result_to_json (llm/llm_plan_json.h,
// what validate and pipescope-gui --llm-plan read: each layout held to its framework) on
// arbitrary bytes; a file that reads must write out, read back and write out to the same
// text. The seeds include deep nesting and keys given twice.
#include "fuzz/fuzz_readers.h"
#include "llm/llm_plan_json.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size, [](const JsonReader& r) { return llm_plan_result_from_json(r); },
      [](const LlmPlanFile& f) { return llm_plan_result_to_json(f); });
}
