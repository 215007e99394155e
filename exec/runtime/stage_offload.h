// One worker's activation offload, for real: core/offload_walk.h's walk decides when, on
// the worker's clock (model time: the cost model's; else the steady clock, the copies'
// times taken from the host link), and this file moves the bytes. When F(s,m)'s offload
// is booked, the first slot_bytes of its stash (its distinct activation buffers in a
// fixed order: the kept stage input, then each layer's saved tensors; the last one cut
// at a float) are copied into host buffers, counted in the worker's HostPool from the
// copy's end; when the walk says they left the device, those floats are freed on the
// backend (Buffer::evict); the reload copies them back (Buffer::restore) at the start of
// the op before the one that needs them, and the host pool lets them go at the reload's
// end. Offload changes no number the layers compute. Invariant: a slot's pieces are
// evicted only between its F's end and its reload, and restored before the op that
// reads them starts.
//   StageOffload off(schedule, run, position, stash_of);  off.start_step();
//   start = off.before_op(i, start);  ...  off.settle(end);  off.after_forward(i, start, end);
//   off.finish_step(record);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/offload_walk.h"
#include "core/schedule.h"
#include "exec/memory/host_pool.h"
#include "exec/layers/layer.h"
#include "exec/memory/tensor.h"
#include "exec/runtime/run_types.h"

namespace pipescope::exec {

// A micro-batch's stash as the offload walks it: the distinct activation buffers of the
// kept stage input (re-materialisation) and of each layer's saved tensors, depth first.
std::vector<Buffer*> stash_buffers(const Tensor& input, const std::vector<LayerStash>& stashes);

class StageOffload : private StashMoves {
 public:
  // The activation buffers of (stage, micro-batch)'s stash on this worker, in a fixed order.
  using StashOf = std::function<std::vector<Buffer*>(int stage, int microbatch)>;
  StageOffload(const Schedule& s, const OffloadRun& run, int position, StashOf stash_of);
  StageOffload(const StageOffload&) = delete;
  StageOffload& operator=(const StageOffload&) = delete;

  void start_step();  // a fresh walk: tracks free, nothing on the host
  // `i`: the op's index in the position's op list; returns its start (later when it waits
  // for its reload).
  int64_t before_op(std::size_t i, int64_t start) { return walk_->before_op(position_, first_ + i, start); }
  void settle(int64_t t) { walk_->settle(position_, t); }
  void after_forward(std::size_t i, int64_t start, int64_t end) {
    walk_->after_forward(position_, first_ + i, start, end);
  }
  // The step's host transfers, host pool series and peak, bytes sent and delay, into `record`.
  void finish_step(StepRecord& record);

 private:
  struct Piece {
    Buffer* buffer;
    std::vector<float> host;  // the buffer's first host.size() floats
  };
  void offload(int d, std::size_t slot, int64_t bytes, int64_t on_host_ns) override;
  void release(int d, std::size_t slot, int64_t bytes, int64_t when) override;
  void reload(int d, std::size_t slot, int64_t bytes, int64_t at, int64_t back_ns) override;

  const Schedule& s_;
  const OffloadRun& run_;
  const int position_;
  std::vector<std::size_t> first_op_;  // per position: where its ops begin in flat op order
  const std::size_t first_;            // this position's
  StashOf stash_of_;
  std::vector<std::vector<Piece>> pieces_;  // per slot: what its offload copied
  std::vector<int64_t> piece_bytes_;        // per slot: their bytes
  HostPool pool_;
  Timeline timeline_;  // the walk's host-track events of this step
  std::optional<TimelineRecorder> recorder_;
  std::optional<OffloadWalk> walk_;
};

}  // namespace pipescope::exec
