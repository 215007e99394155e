// Activation offload to host memory (PipeOffload, Wan et al., ICML 2025): a plan property
// that sends part of each micro-batch's stash to host memory in the gap between its F and
// the op that needs it back (R, B or I), and reloads it before that op. The hardware
// file's "host_link" says how fast; the policy says which stashes go:
//   none       nothing (the default);
//   all        every stash, `fraction` of its bytes;
//   selective  only the stashes whose offload and reload fit their gap (sim/offload.h
//              states the rule: no reload delays its op, by construction).
// The fraction is one value for every stage or one per model stage, each in [0, 1].
//   Offload o{OffloadPolicy::All, {0.5}};  check_offload(o, 4, hardware, "--offload");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/report.h"

namespace pipescope {

enum class OffloadPolicy : uint8_t { None, All, Selective };
std::string to_string(OffloadPolicy policy);                // "none", "all", "selective"
OffloadPolicy parse_offload_policy(const std::string& name);  // throws InputError naming --offload

struct Offload {
  OffloadPolicy policy = OffloadPolicy::None;
  std::vector<double> fraction;  // empty: 1 for every stage; one value: every stage; else one per stage

  bool active() const { return policy != OffloadPolicy::None; }
  double fraction_of(int stage) const;
  // The bytes of a stash of `stash_bytes` the offload moves on `stage` (rounded to the nearest byte).
  int64_t offloaded_bytes(int stage, int64_t stash_bytes) const;
};

// "--offload-fraction": "0.5" (every stage) or "1,0.5,0.5,0" (one per stage), each in [0, 1].
std::vector<double> parse_offload_fraction(const std::string& text);
// Checks an active offload against a plan of `stages` stages on `hardware`: every fraction
// in [0, 1], a list of one or `stages` values, a host link in the hardware file. `where`
// names the flag or field of the policy in the error ("--offload", "plan.json: offload"),
// `fraction_where` that of the fractions (default: where).
void check_offload(const Offload& offload, int stages, const Hardware& hardware, const std::string& where,
                   const std::string& fraction_where = "");

// The host pool's peaks of `report` against the hardware's host memory (host_link's
// memory_bytes per device, node_memory_bytes per node: the sum of its positions' host
// peaks, an upper bound on what they hold at once). Over either: InputError naming the
// hardware file's field, the position or node and the bytes; `how` says how to get a
// report only (e.g. "--host-capacity report").
void check_host_capacity(const StepReport& report, const Hardware& hardware, const std::string& how);

// The plan file's "offload": {"policy": "all", "fraction": 0.5 | [..]} (fraction optional).
Offload offload_from_json(const JsonReader& field);
Json offload_to_json(const Offload& offload);

}  // namespace pipescope
