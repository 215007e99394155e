// Fuzz target: a version 3 plan's job (llm/job.h's plan_job: the "job" and "layout" read,
// validated for the framework on the GPU file its cluster names (validate_job) and held to the
// plan's own stages) on arbitrary bytes taken as a plan file; the seeds include 20,000 nested
// arrays, 7,000 nested objects and keys given twice, which the parser refuses. A job that reads must write out and read back to the same text, and its
// memory per pipeline rank (llm/memory.h, no GPU file needed) must be finite and >= 0: a
// job the reader accepts is one the cost model can count.
#include <cmath>
#include <memory>

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
        if (const std::optional<Job> job = plan_job(p)) {
          const LlmMemory m = llm_memory(job->shape, job->layout);
          for (const RankMemory& rank : m.stages) {
            if (!std::isfinite(rank.total()) || rank.total() < 0) __builtin_trap();
          }
        }
        return p;
      },
      [](const Plan& p) { return plan_to_json(p); });
}
