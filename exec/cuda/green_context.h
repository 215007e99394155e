// An SM partition of one GPU as a CUDA green context: the GPU's SMs are split into
// `parts` equal groups (each a multiple of the split granularity the driver reports, so
// 132 SMs in 4 parts give 4 x 32) and partition `index` gets one group. Kernels launched
// on streams created while the partition is current run on its SMs only; memory is
// shared with the primary context. The driver entry points are reached through
// cudaGetDriverEntryPointByVersion, so nothing links libcuda and the binary still starts
// on a machine without a driver. Use from one thread (a green context is current to one
// thread at a time).
//   GreenPartition part(0, d, K);  part.make_current();  cudaStreamCreate(&s);
#pragma once

#include <cuda.h>

#include <string>

namespace pipescope::exec::cuda {

class GreenPartition {
 public:
  GreenPartition(int device, int index, int parts);
  ~GreenPartition();
  GreenPartition(const GreenPartition&) = delete;
  GreenPartition& operator=(const GreenPartition&) = delete;

  // Makes the partition the calling thread's current context (runtime API calls that
  // follow, stream creation and kernel launches included, use it).
  void make_current();
  std::string describe() const;  // "SM partition 2 of 4: 32 of 132 SMs"

 private:
  int device_, index_, parts_;
  int sm_count_ = 0, device_sm_count_ = 0;
  CUgreenCtx green_ = nullptr;
  CUcontext context_ = nullptr;
};

}  // namespace pipescope::exec::cuda
