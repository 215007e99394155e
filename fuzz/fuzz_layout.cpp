// Fuzz target: layout_from_json (llm/plan_layout.h, a v2 or v3 plan's "layout") on
// arbitrary bytes taken as the layout object itself; what reads must write out and read
// back to the same text, and every product a consumer forms in int (gpus(),
// global_batch(), p x v) must be in range, as the reader promises.
#include "fuzz/fuzz_readers.h"
#include "llm/plan_layout.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        const ParallelLayout l = layout_from_json(r);
        if (int64_t{l.t} * l.cp * l.d * l.p > (int64_t{1} << 20)) __builtin_trap();
        if (int64_t{l.micro_batch} * l.microbatches * l.d > INT32_MAX) __builtin_trap();
        return l;
      },
      [](const ParallelLayout& l) { return layout_to_json(l); });
}
