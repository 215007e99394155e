// Device memory for one backend: plain cudaMalloc underneath (never managed memory),
// blocks cached by size and handed out again, so that a training step does no
// cudaMalloc once the first step has run. Reuse is stream-ordered on the owner's
// compute stream: a block freed with free() may be handed out at once, because the
// next user is queued behind every earlier kernel on that stream. A block that another
// stream still reads or writes is freed with free_after(event) and cached only once
// that event has completed. Invariant: in use + cached + waiting = reserved; a block is
// either in use, cached, or waiting on exactly one event. Thread-safe (a transport may free a
// block from another thread).
//   CachingAllocator a(0);  void* p = a.allocate(1 << 20);  a.free(p);
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace pipescope::exec::cuda {

class CachingAllocator {
 public:
  struct Stats {
    int64_t in_use = 0, peak_in_use = 0;
    int64_t reserved = 0, peak_reserved = 0;
    int64_t mallocs = 0;
  };

  explicit CachingAllocator(int device);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // At least `bytes` (rounded up to 512), 256-byte aligned. Throws RunError when the
  // device is out of memory even after the cache was returned to the driver.
  void* allocate(std::size_t bytes);
  void free(void* p);
  // Cached again once `after` (recorded on another stream) has completed; the
  // allocator owns the event from now on and destroys it (nullptr: free at once).
  void free_after(void* p, cudaEvent_t after);
  // Returns every cached block to the driver (cudaFree).
  void release_cached();
  Stats stats() const;
  static std::size_t round_size(std::size_t bytes);

 private:
  void reclaim_locked();  // moves blocks whose event completed into the cache
  void release_cached_locked();

  int device_;
  mutable std::mutex mu_;  // guards everything below
  std::map<void*, std::size_t> in_use_;             // block -> size
  std::multimap<std::size_t, void*> cached_;        // size -> block
  std::vector<std::pair<cudaEvent_t, void*>> waiting_;
  std::map<void*, std::size_t> waiting_size_;
  Stats stats_;
};

}  // namespace pipescope::exec::cuda
