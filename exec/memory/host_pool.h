// The host side of one worker's memory: the buffers that activation offload copies stashes
// into (exec/runtime/stage_offload.h), the MemoryTracker's sibling, counted apart from the
// device's bytes. A copy runs beside the worker's ops, so its bytes are on the host from
// the time the offload's copy ends to the time the reload's copy ends, on the worker's
// clock, not in the order the worker books them; the pool keeps those changes and its peak
// is their highest point over time, a block freed at an instant taken before one arriving
// at it (an allocator hands the freed block on; so a stash whose copy arrives and leaves at
// one instant, over an infinitely fast link, dips the series below 0 there, as the
// prediction's does). Invariant: every leave follows its arrive. One pool per worker
// thread: not synchronised.
//   HostPool pool;  pool.arrive(bytes, on_host_ns);  pool.leave(bytes, back_ns);  pool.peak();
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace pipescope::exec {

class HostPool {
 public:
  void arrive(int64_t bytes, int64_t at_ns) { changes_.push_back({at_ns, bytes}); }
  void leave(int64_t bytes, int64_t at_ns) { changes_.push_back({at_ns, -bytes}); }
  // (time, bytes held from then) in time order, and their highest point.
  std::vector<std::pair<int64_t, int64_t>> series() const;
  int64_t peak() const;
  int64_t sent() const;  // bytes that arrived over the pool's life
  void clear() { changes_.clear(); }

 private:
  std::vector<std::pair<int64_t, int64_t>> changes_;  // (time, +bytes arriving | -bytes leaving)
};

}  // namespace pipescope::exec
