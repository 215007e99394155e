// Fuzz target: plan_from_json and plan_to_json on arbitrary bytes, plus the schedule
// the plan asks for when it is small enough to build in a few milliseconds.
#include "core/plan.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        Plan p = plan_from_json(r);
        ScheduleSpec spec = p.schedule_spec();
        if (static_cast<int64_t>(spec.devices) * spec.chunks * spec.microbatches <= 4096) {
          validate_schedule(make_schedule(spec));
        }
        return p;
      },
      [](const Plan& p) { return plan_to_json(p); });
}
