// Fuzz target: a measured run's Chrome trace on arbitrary bytes, the bridge's
// (sim/measured_trace.h) or torch.profiler's as one rank (sim/kineto_trace.h), then
// `calibrate` (sim/calibrate.h) of what reads against a two-stage plan. Only
// InputError may leave either; a fitted runtime must write out as a file that reads back.
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/json_reader.h"
#include "core/runtime_costs.h"
#include "fuzz/fuzz_costs.h"
#include "sim/calibrate.h"
#include "sim/kineto_trace.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return -1;
  static const CostModel c = fuzz::two_stage_costs();
  Calibration cal;
  try {
    const JsonReader r = JsonReader::from_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    const MeasuredTrace t = is_kineto_trace(r) ? read_kineto_traces({r}) : read_measured_trace(r);
    cal = calibrate(t, c, {});
  } catch (const InputError&) {
    return 0;  // refused with a message
  }
  try {  // a fit calibrate returns must write a file that reads back
    runtime_costs_from_json(JsonReader::from_text(runtime_costs_to_json(cal.runtime).dump(), "fuzz-roundtrip"));
  } catch (const InputError& e) {
    std::fprintf(stderr, "fitted runtime does not read back: %s\n", e.what());
    std::abort();
  }
  return 0;
}
