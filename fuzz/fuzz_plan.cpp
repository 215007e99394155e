// Fuzz target: plan_from_json and plan_to_json on arbitrary bytes, plus the schedule
// the plan asks for when it is small enough to build in a few milliseconds, and a v2
// plan's layout (llm/plan_layout.h) and a v3 plan's job (llm/job.h), which must read back
// what they write.
#include <memory>
#include <optional>

#include "core/plan.h"
#include "fuzz/fuzz_readers.h"
#include "llm/job.h"
#include "llm/plan_layout.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        Plan p = plan_from_json(r);
        if (const std::optional<ParallelLayout> l = plan_layout(p)) {
          const Json once = layout_to_json(*l);
          auto root = std::make_shared<const Json>(once);
          if (layout_to_json(layout_from_json(JsonReader(root, root.get(), "fuzz", "layout"))) != once) __builtin_trap();
        }
        if (const std::optional<Job> j = plan_job(p)) {
          const Json once = job_to_json(*j);
          auto root = std::make_shared<const Json>(once);
          auto layout = std::make_shared<const Json>(layout_to_json(j->layout));
          const Job again = job_from_json(JsonReader(root, root.get(), "fuzz", "job"),
                                          JsonReader(layout, layout.get(), "fuzz", "layout"));
          if (job_to_json(again) != once || layout_to_json(again.layout) != *layout) __builtin_trap();
        }
        ScheduleSpec spec = p.schedule_spec();
        if (static_cast<int64_t>(spec.positions) * spec.chunks * spec.microbatches <= 4096) {
          validate_schedule(make_schedule(spec));
        }
        return p;
      },
      [](const Plan& p) { return plan_to_json(p); });
}
