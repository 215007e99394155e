// Buffers charge their tracker for exactly as long as they live (while evicted, for their
// resident part); retag moves the charge between categories, move_to between trackers.
#include "exec/memory/tensor.h"

#include "core/invariant.h"

namespace pipescope::exec {

Buffer::Buffer(Context ctx, int64_t floats, Category category)
    : backend_(&ctx.backend), tracker_(&ctx.tracker), data_(ctx.backend.allocate(floats)), floats_(floats),
      category_(category) {
  tracker_->charge(category_, bytes());
}

Buffer::~Buffer() {
  tracker_->discharge(category_, resident_bytes());
  if (data_) backend_->deallocate(data_, floats_ - evicted_);
}

int64_t Buffer::bytes() const { return floats_ * backend_->element_bytes(); }

int64_t Buffer::resident_bytes() const { return (floats_ - evicted_) * backend_->element_bytes(); }

void Buffer::retag(Category category) {
  tracker_->move(category_, category, resident_bytes());
  category_ = category;
}

void Buffer::move_to(MemoryTracker& tracker) {
  if (&tracker == tracker_) return;
  tracker_->discharge(category_, resident_bytes());
  tracker_ = &tracker;
  tracker_->charge(category_, resident_bytes());
}

void Buffer::evict(int64_t floats) {
  PS_INVARIANT(evicted_ == 0 && floats > 0 && floats <= floats_, "a buffer evicted twice or past its end");
  float* rest = nullptr;
  if (floats < floats_) {
    rest = backend_->allocate(floats_ - floats);
    backend_->copy(rest, data_ + floats, floats_ - floats);
  }
  backend_->deallocate(data_, floats_);
  data_ = rest;
  evicted_ = floats;
  tracker_->discharge(category_, floats * backend_->element_bytes());
}

void Buffer::restore(const std::vector<float>& host) {
  PS_INVARIANT(evicted_ > 0 && static_cast<int64_t>(host.size()) == evicted_, "a buffer restored from the wrong copy");
  float* whole = backend_->allocate(floats_);
  backend_->upload(whole, host.data(), evicted_);
  if (data_) {
    backend_->copy(whole + evicted_, data_, floats_ - evicted_);
    backend_->deallocate(data_, floats_ - evicted_);
  }
  data_ = whole;
  tracker_->charge(category_, evicted_ * backend_->element_bytes());
  evicted_ = 0;
}

Tensor Tensor::empty(Context ctx, int64_t rows, int64_t cols, Category c) {
  return Tensor{std::make_shared<Buffer>(ctx, rows * cols, c), rows, cols};
}

Tensor Tensor::zeros(Context ctx, int64_t rows, int64_t cols, Category c) {
  Tensor t = empty(ctx, rows, cols, c);
  ctx.backend.fill(t.data(), 0.0f, t.numel());
  return t;
}

Tensor Tensor::from_host(Context ctx, int64_t rows, int64_t cols, const std::vector<float>& values,
                         Category c) {
  Tensor t = empty(ctx, rows, cols, c);
  ctx.backend.upload(t.data(), values.data(), t.numel());
  return t;
}

std::vector<float> Tensor::to_host() const {
  std::vector<float> out(static_cast<std::size_t>(numel()));
  if (buffer) buffer->backend().download(out.data(), data(), numel());
  return out;
}

}  // namespace pipescope::exec
