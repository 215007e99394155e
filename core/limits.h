// The limits of what a user may ask for, in one place (docs/reliability.md, Limits): the
// counts a flag or a file field gives, checked before any loop or product uses them.
// Invariant: within them every product of degrees and batch sizes that pipescope forms
// (t cp d p, b d, b M d, K r, the divisors of a batch) fits int64 and every enumeration
// over them ends in bounded time; a value outside them is refused by check_range with
// exit 2, naming the flag or field.
//   check_range("--devices", devices, 1, kMaxGpus);
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace pipescope {

inline constexpr int kMaxGpus = 1 << 20;           // devices / GPUs in a job, and each degree (hardware files' limit)
inline constexpr int kMaxBatch = 1 << 30;          // samples or sequences per step, b and M (plan files' M limit)
inline constexpr int kMaxThreads = 1024;           // --threads of a search
inline constexpr int kMaxJitterSamples = 100000;   // --samples of a step distribution
inline constexpr int kMaxRounds = 100000;          // run's --steps and --warmup, profile's --repeats and --warmup
inline constexpr int kMaxTraceRanks = 1 << 16;     // ranks (and stage numbers) a measured trace may name

// Throws InputError "flag: expected lo to hi, got value" unless lo <= value <= hi.
inline void check_range(const std::string& flag, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    throw InputError("", flag, "expected " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                                   std::to_string(value));
  }
}

}  // namespace pipescope
