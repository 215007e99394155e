// A Schedule is the order in which each device runs its ops in one training step.
// The simulator and every executor stage worker walk the same per-device op lists
// in order; a Schedule is built once by a generator and never modified afterwards.
// Stages are model stages (virtual stages under interleaving: stage s of K*v lives
// on device s % K). Data dependencies are implied, not listed:
//   F(s,m) needs F(s-1,m)'s output;   R(s,m) (recompute) runs after F(s,m);
//   B(s,m) / Bi(s,m) needs F(s,m) [and R(s,m)] and the input gradient of B(s+1,m);
//   W(s,m) needs Bi(s,m).
//   Schedule s = make_schedule({ScheduleKind::OneFOneB, 4, 32});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipescope {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
enum class OpKind : uint8_t {
  Forward,         // F
  Backward,        // B: input and weight gradients together
  BackwardInput,   // Bi: input gradient only (split backward)
  BackwardWeight,  // W: weight gradient (split backward)
  Recompute,       // R: re-run the stage's forward before its backward
};

std::string to_string(ScheduleKind kind);   // "gpipe", "1f1b", "interleaved", "zb-h1"
ScheduleKind parse_schedule_kind(const std::string& name);  // throws InputError
std::string to_string(OpKind kind);         // "forward", "backward", ...
char op_letter(OpKind kind);                // F B b W R

struct Op {
  OpKind kind;
  int stage;       // model stage (virtual stage under interleaving)
  int microbatch;
  bool operator==(const Op&) const = default;
};

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int devices = 1;       // pipeline depth K
  int microbatches = 1;  // M
  int chunks = 1;        // v, model chunks per device (interleaved only)
  bool recompute = false;
};

struct Schedule {
  ScheduleSpec spec;
  std::vector<int> stage_device;               // model stage -> device
  std::vector<std::vector<Op>> device_ops;     // per device, in execution order

  int devices() const { return spec.devices; }
  int stages() const { return static_cast<int>(stage_device.size()); }
  int microbatches() const { return spec.microbatches; }
  bool split_backward() const { return spec.kind == ScheduleKind::ZeroBubbleH1; }
  std::size_t num_ops() const;
};

// Builds the schedule; throws InputError when the spec is impossible (e.g.
// interleaved with M not a multiple of K).
Schedule make_schedule(const ScheduleSpec& spec);
Schedule make_gpipe(int devices, int microbatches, bool recompute = false);
Schedule make_1f1b(int devices, int microbatches, bool recompute = false);
Schedule make_interleaved(int devices, int microbatches, int chunks, bool recompute = false);
Schedule make_zb_h1(int devices, int microbatches, bool recompute = false);

// Throws InputError when an op is missing, duplicated, on the wrong device, or the
// order cannot make progress (a device waits on an op that waits on it).
void validate_schedule(const Schedule& schedule);

// Text diagram: one row per device, one cell per op ("F3" = forward of micro-batch 3).
std::string schedule_diagram(const Schedule& schedule);

// Limits on what a schedule may hold, so that absurd requests fail fast.
inline constexpr int kMaxDevices = 4096;
inline constexpr int64_t kMaxScheduleOps = 50'000'000;

}  // namespace pipescope
