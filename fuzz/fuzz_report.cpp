// Fuzz target: report_from_json (prediction and measurement files), report_to_json,
// the terminal table and the Chrome trace, on arbitrary bytes.
#include "core/report.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        StepReport rep = report_from_json(r);
        (void)report_table(rep);
        (void)chrome_trace(rep);
        return rep;
      },
      [](const StepReport& rep) { return report_to_json(rep); });
}
