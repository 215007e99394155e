// A 2-D fp32 tensor in backend memory whose bytes are charged to a MemoryTracker under
// a category for as long as its buffer lives. Copies of a Tensor share the buffer (and
// the charge); the buffer is freed, and discharged, when the last copy goes away.
// stash() moves the buffer's bytes into Category::Activations: that is how a layer
// says "I keep this for my backward" (idempotent: a buffer is charged once).
// Activation offload (exec/runtime/stage_offload.h) evicts a buffer's first floats to host
// memory and restores them: while evicted the tracker holds only the resident rest, and
// the buffer's data must not be read.
//   Context ctx{backend, tracker};
//   Tensor x = Tensor::empty(ctx, rows, cols);   // Transient
//   x.stash();                                  // now counted as activations
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/backends/backend.h"
#include "exec/memory/memory_tracker.h"

namespace pipescope::exec {

// Where tensors of one worker live: its backend and its tracker.
struct Context {
  Backend& backend;
  MemoryTracker& tracker;
};

class Buffer {
 public:
  Buffer(Context ctx, int64_t floats, Category category);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void retag(Category category);
  float* data() const { return data_; }
  int64_t floats() const { return floats_; }
  int64_t bytes() const;  // floats x the backend's element size (what the tracker charges when resident)
  Category category() const { return category_; }
  Backend& backend() const { return *backend_; }
  // The charge moves to `tracker` (a tensor received before its op's start is counted from it).
  void move_to(MemoryTracker& tracker);
  // Frees the first `floats` floats on the backend (the caller copied them to the host
  // first); the rest moves to a buffer of its own. restore() brings them back from that
  // host copy. One eviction at a time.
  void evict(int64_t floats);
  void restore(const std::vector<float>& host);
  int64_t evicted_floats() const { return evicted_; }

 private:
  int64_t resident_bytes() const;
  Backend* backend_;
  MemoryTracker* tracker_;
  float* data_;
  int64_t floats_;
  Category category_;
  int64_t evicted_ = 0;  // the first floats, on the host while evicted
};

struct Tensor {
  std::shared_ptr<Buffer> buffer;
  int64_t rows = 0;
  int64_t cols = 0;

  static Tensor empty(Context ctx, int64_t rows, int64_t cols, Category c = Category::Transient);
  static Tensor zeros(Context ctx, int64_t rows, int64_t cols, Category c = Category::Transient);
  static Tensor from_host(Context ctx, int64_t rows, int64_t cols, const std::vector<float>& values,
                          Category c = Category::Transient);

  bool defined() const { return buffer != nullptr; }
  float* data() const { return buffer ? buffer->data() : nullptr; }
  int64_t numel() const { return rows * cols; }
  int64_t bytes() const { return buffer ? numel() * buffer->backend().element_bytes() : 0; }
  void stash() const { buffer->retag(Category::Activations); }
  std::vector<float> to_host() const;
};

}  // namespace pipescope::exec
