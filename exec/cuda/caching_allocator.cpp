// Best fit from the cache, refusing a cached block more than twice the request (so that
// one huge block does not serve many small tensors); otherwise a fresh cudaMalloc.
#include "exec/cuda/caching_allocator.h"

#include <algorithm>

#include "exec/cuda/cuda_check.h"

namespace pipescope::exec::cuda {

CachingAllocator::CachingAllocator(int device) : device_(device) {}

CachingAllocator::~CachingAllocator() {
  // Destructors must not throw: errors here (a lost device) are ignored.
  cudaSetDevice(device_);
  for (auto& [event, p] : waiting_) {
    cudaEventSynchronize(event);
    cudaEventDestroy(event);
    cudaFree(p);
  }
  for (auto& [p, size] : in_use_) cudaFree(p);
  for (auto& [size, p] : cached_) cudaFree(p);
}

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = 2u << 20;
  if (bytes == 0) bytes = 1;
  if (bytes < kLarge) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  reclaim_locked();
  void* p = nullptr;
  auto it = cached_.lower_bound(size);
  std::size_t got = size;
  if (it != cached_.end() && it->first <= 2 * size) {
    got = it->first;
    p = it->second;
    cached_.erase(it);
  } else {
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free error state of the failed call
      for (auto& [event, q] : waiting_) PS_CUDA_CHECK(cudaEventSynchronize(event));
      reclaim_locked();
      release_cached_locked();
      e = cudaMalloc(&p, size);
    }
    if (e != cudaSuccess) {
      throw RunError("cudaMalloc of " + std::to_string(size) + " bytes failed on device " + std::to_string(device_) +
                     ": " + cudaGetErrorName(e) + " (" + std::to_string(stats_.in_use) + " bytes in use)");
    }
    stats_.reserved += static_cast<int64_t>(size);
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
    ++stats_.mallocs;
  }
  in_use_[p] = got;
  stats_.in_use += static_cast<int64_t>(got);
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return p;
}

void CachingAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(p);
  if (it == in_use_.end()) throw RunError("CachingAllocator::free: pointer was not allocated here");
  cached_.emplace(it->second, p);
  stats_.in_use -= static_cast<int64_t>(it->second);
  in_use_.erase(it);
}

void CachingAllocator::free_after(void* p, cudaEvent_t after) {
  if (!p) return;
  if (!after) {
    free(p);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(p);
  if (it == in_use_.end()) throw RunError("CachingAllocator::free_after: pointer was not allocated here");
  waiting_.emplace_back(after, p);
  waiting_size_[p] = it->second;
  stats_.in_use -= static_cast<int64_t>(it->second);
  in_use_.erase(it);
}

void CachingAllocator::reclaim_locked() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    cudaError_t e = cudaEventQuery(it->first);
    if (e == cudaErrorNotReady) {
      ++it;
      continue;
    }
    PS_CUDA_CHECK(e);
    PS_CUDA_CHECK(cudaEventDestroy(it->first));
    cached_.emplace(waiting_size_.at(it->second), it->second);
    waiting_size_.erase(it->second);
    it = waiting_.erase(it);
  }
}

void CachingAllocator::release_cached_locked() {
  for (auto& [size, p] : cached_) {
    PS_CUDA_CHECK(cudaFree(p));
    stats_.reserved -= static_cast<int64_t>(size);
  }
  cached_.clear();
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  reclaim_locked();
  release_cached_locked();
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace pipescope::exec::cuda
