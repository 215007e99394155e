// Fuzz target: profile_from_json, profile_to_json, and the interpolation every cost
// model uses (at the tabulated sizes and at a few others), on arbitrary bytes; and
// hf_profile_job (interop/hf_profile.h), which `plan --profile --framework` runs on every
// profile it reads: a nullopt or the job, never a crash.
#include <cmath>

#include "core/error.h"
#include "core/profile.h"
#include "interop/hf_profile.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        Profile p = profile_from_json(r);
        for (int l = 0; l < p.num_layers() && l < 64; ++l) {
          for (double b : {0.5, 1.0, 3.0, 1e3, p.batch_sizes.back() * 2}) {
            (void)p.forward_ms(l, b);
            (void)p.backward_input_ms(l, b);
            (void)p.backward_weight_ms(l, b);
            (void)p.activation_bytes(l, b);
            (void)p.output_bytes(l, b);
          }
        }
        try {
          std::string why;
          (void)hf_profile_job(p, &why);
        } catch (const InputError&) {  // a refusal is fine; anything else escapes to the fuzzer
        }
        return p;
      },
      [](const Profile& p) { return profile_to_json(p); });
}
