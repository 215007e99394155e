// Fuzz target: the two schedule readers on arbitrary bytes. JSON goes through
// schedule_from_json / schedule_to_json and must round-trip; the same bytes go to
// schedule_from_csv, and a schedule that reads must write as CSV and read back to
// the same ops. Only InputError may leave a reader.
#include <cstdio>
#include <cstdlib>

#include "core/schedule_io.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

namespace {

void csv_round_trip(const std::string& text) {
  Schedule first;
  try {
    first = schedule_from_csv(text, "fuzz.csv");
  } catch (const InputError&) {
    return;
  }
  std::string written = schedule_to_csv(first);  // a CSV schedule never holds R ops
  Schedule second;
  try {
    second = schedule_from_csv(written, "fuzz-roundtrip.csv");
  } catch (const InputError& e) {
    std::fprintf(stderr, "written CSV does not read back: %s\n%s\n", e.what(), written.c_str());
    std::abort();
  }
  if (second.stage_position != first.stage_position || second.position_ops != first.position_ops ||
      second.num_microbatches != first.num_microbatches) {
    std::fprintf(stderr, "CSV round trip changed the schedule:\n%s\n%s\n", written.c_str(),
                 schedule_to_csv(second).c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInput) return -1;
  csv_round_trip(std::string(reinterpret_cast<const char*>(data), size));
  return fuzz::read_write_read(
      data, size, [](const JsonReader& r) { return schedule_from_json(r); },
      [](const Schedule& s) { return schedule_to_json(s); });
}
