// Buffers charge their tracker for exactly as long as they live; retag moves the charge.
#include "exec/memory/tensor.h"

namespace pipescope::exec {

Buffer::Buffer(Context ctx, int64_t floats, Category category)
    : ctx_(ctx), data_(ctx.backend.allocate(floats)), floats_(floats), category_(category) {
  ctx_.tracker.charge(category_, bytes());
}

Buffer::~Buffer() {
  ctx_.tracker.discharge(category_, bytes());
  ctx_.backend.deallocate(data_, floats_);
}

int64_t Buffer::bytes() const { return floats_ * ctx_.backend.element_bytes(); }

void Buffer::retag(Category category) {
  ctx_.tracker.move(category_, category, bytes());
  category_ = category;
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
