// Activation offload in the simulator (core/offload.h; PipeOffload, Wan et al. 2025): which
// stashes go (the decision, also handed to the executor by `pipescope run`) and the
// simulator's side of the walk. When a stash goes to the host and comes back is
// core/offload_walk.h's rule, shared with the CPU executor.
//   all       every slot, its stage's fraction of the stash (offload_all_bytes);
//   selective (choose_offloads): per device, greedily in F order, a stash is offloaded
//            when, with it and the stashes already chosen queued on both tracks as the
//            walk books them, every chosen reload still ends by its op's start in the run
//            without offload. Then nothing is delayed, so the step time is exactly the
//            one without offload.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/offload.h"
#include "core/offload_walk.h"
#include "core/report.h"
#include "core/schedule.h"
#include "sim/simulator.h"

namespace pipescope {

// The bytes each (stage, micro-batch) slot offloads under policy All: the fraction of
// its stash (core/op_rules.h's stash_bytes).
std::vector<int64_t> offload_all_bytes(const Schedule& s, const CostModel& c, const Offload& offload);

// Selective: of `all` (offload_all_bytes), the slots whose offload delays nothing, given
// each op's start and end in the run without offload (flat op order); the others get 0.
std::vector<int64_t> choose_offloads(const Schedule& s, const HostLink& link, std::span<const int64_t> all,
                                     std::span<const int64_t> op_starts, std::span<const int64_t> op_ends);

// The prediction's note on what offload charged (the rules above, in one sentence).
std::string offload_note(const Offload& offload);

// The bytes each (stage, micro-batch) slot's F offloads under `options.offload` as the
// simulator decides it (all: offload_all_bytes; selective: choose_offloads after a run
// without offload); empty without offload. Checks the offload (check_offload, naming
// --offload). `pipescope run` hands the same bytes to the executor.
std::vector<int64_t> offload_decision(const Schedule& s, const CostModel& c, const Hardware& h,
                                      const SimOptions& options);

// The simulator's device byte counters the offload moves (its own vectors, by reference):
// per (stage, micro-batch) slot the stash and everything held; per device the stash, its
// peak, everything above static bytes and the kept weight versions (for memory samples).
struct DeviceBytes {
  std::vector<int64_t>& held;
  std::vector<int64_t>& held_total;
  std::vector<int64_t>& current_act;
  std::vector<int64_t>& peak_act;
  std::vector<int64_t>& current_total;
  const std::vector<int64_t>& version_bytes;
};

// The simulator's side of core/offload_walk.h: the walk's bookings on its byte counters
// (and the memory samples they cause). Built in place (the walk holds a reference to it).
class SimOffload : private StashMoves {
 public:
  SimOffload(const Schedule& s, const HostLink& link, std::vector<int64_t> slot_bytes,
             const std::vector<std::size_t>& first_op, DeviceBytes bytes, TimelineRecorder* recorder)
      : b_(bytes), recorder_(recorder), walk_(s, link, std::move(slot_bytes), first_op, *this, recorder) {}
  SimOffload(const SimOffload&) = delete;
  SimOffload& operator=(const SimOffload&) = delete;
  int64_t before_op(int d, std::size_t flat, int64_t start) { return walk_.before_op(d, flat, start); }
  void settle(int d, int64_t t) { walk_.settle(d, t); }
  void after_forward(int d, std::size_t flat, int64_t start, int64_t end) { walk_.after_forward(d, flat, start, end); }
  void fill(PositionReport& st) const { walk_.fill(st); }
  void write_host_memory(Timeline* timeline) const { walk_.write_host_memory(timeline); }

 private:
  void offload(int, std::size_t, int64_t, int64_t) override {}
  void release(int d, std::size_t slot, int64_t bytes, int64_t when) override;
  void reload(int d, std::size_t slot, int64_t bytes, int64_t at, int64_t back_ns) override;
  DeviceBytes b_;
  TimelineRecorder* recorder_;
  OffloadWalk walk_;
};

}  // namespace pipescope
