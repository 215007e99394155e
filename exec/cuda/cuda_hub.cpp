// CudaEndpoint: the per-device side of CudaHub. Events are created on the thread that
// records them (the worker's context, a green context in partitions mode).
#include "exec/cuda/cuda_hub.h"

#include "core/error.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/nccl_endpoint.h"

#include <algorithm>

namespace pipescope::exec::cuda {

namespace {

CudaBackend& cuda_backend_of(Backend& be, const char* what) {
  auto* cb = dynamic_cast<CudaBackend*>(&be);
  if (!cb) throw RunError(std::string("the CUDA transport ") + what + " a tensor of the " + be.name() + " backend");
  return *cb;
}

}  // namespace

class CudaEndpoint : public Endpoint {
 public:
  CudaEndpoint(CudaHub& hub, int device) : hub_(hub), device_(device) {}
  ~CudaEndpoint() override {
    if (transfer_) cudaStreamDestroy(transfer_);
  }
  int device() const override { return device_; }
  int positions() const override { return hub_.devices_; }

  void send(int to, const MessageKey& key, const Tensor& t) override {
    CudaBackend& be = cuda_backend_of(t.buffer->backend(), "cannot send");
    CudaHub::Message m;
    m.rows = t.rows;
    m.cols = t.cols;
    m.bytes = t.bytes();
    m.owner = be.shared_allocator();
    m.staging = m.owner->allocate(static_cast<std::size_t>(m.bytes));
    PS_CUDA_CHECK(cudaMemcpyAsync(m.staging, be.device_address(t.data()), static_cast<std::size_t>(m.bytes),
                                  cudaMemcpyDeviceToDevice, be.stream()));
    PS_CUDA_CHECK(cudaEventCreateWithFlags(&m.ready, cudaEventDisableTiming));
    PS_CUDA_CHECK(cudaEventRecord(m.ready, be.stream()));
    std::lock_guard<std::mutex> lock(hub_.mu_);
    hub_.boxes_.at(to)[key].push_back(std::move(m));
    hub_.cv_.notify_all();
  }

  Tensor recv(int from, const MessageKey& key, int64_t rows, int64_t cols, Context ctx,
              Clock::time_point deadline) override {
    CudaHub::Message m;
    {
      std::unique_lock<std::mutex> lock(hub_.mu_);
      auto& box = hub_.boxes_[device_];
      auto ready = [&] {
        if (!hub_.control_.failure().empty()) return true;
        auto it = box.find(key);
        return it != box.end() && !it->second.empty();
      };
      if (!hub_.cv_.wait_until(lock, deadline, ready)) {
        throw RunError("device " + std::to_string(device_) + " timed out waiting for the " + key.describe() +
                       " from device " + std::to_string(from));
      }
      auto it = box.find(key);
      if (it == box.end() || it->second.empty()) {
        throw RunError("device " + std::to_string(device_) + " stopped while waiting for the " + key.describe() +
                       " because " + hub_.control_.failure());
      }
      m = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) box.erase(it);
    }
    if (m.rows != rows || m.cols != cols) {
      m.owner->free_after(m.staging, m.ready);
      throw RunError("device " + std::to_string(device_) + " received [" + std::to_string(m.rows) + ", " +
                     std::to_string(m.cols) + "] as the " + key.describe() + ", expected [" + std::to_string(rows) +
                     ", " + std::to_string(cols) + "]");
    }
    CudaBackend& be = cuda_backend_of(ctx.backend, "cannot receive into");
    Tensor t = Tensor::empty(ctx, rows, cols);
    if (t.bytes() != m.bytes) throw RunError("the sender and the receiver store different dtypes");
    if (!transfer_) PS_CUDA_CHECK(cudaStreamCreateWithFlags(&transfer_, cudaStreamNonBlocking));
    // The fresh block may have been used by earlier compute: copy after that, and after the sender's copy.
    cudaEvent_t compute_done = nullptr, copied = nullptr;
    PS_CUDA_CHECK(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming));
    PS_CUDA_CHECK(cudaEventRecord(compute_done, be.stream()));
    PS_CUDA_CHECK(cudaStreamWaitEvent(transfer_, compute_done, 0));
    PS_CUDA_CHECK(cudaStreamWaitEvent(transfer_, m.ready, 0));
    PS_CUDA_CHECK(cudaMemcpyAsync(be.device_address(t.data()), m.staging, static_cast<std::size_t>(m.bytes),
                                  cudaMemcpyDefault, transfer_));
    PS_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    PS_CUDA_CHECK(cudaEventRecord(copied, transfer_));
    PS_CUDA_CHECK(cudaStreamWaitEvent(be.stream(), copied, 0));
    PS_CUDA_CHECK(cudaEventDestroy(compute_done));  // released by the driver once complete
    PS_CUDA_CHECK(cudaEventDestroy(m.ready));
    m.owner->free_after(m.staging, copied);  // the allocator destroys `copied`
    return t;
  }

  void barrier(Clock::time_point deadline, const std::string& where) override {
    hub_.control_.endpoint(device_).barrier(deadline, where);
  }

  void flush(Clock::time_point) override {}  // staging blocks are released by the receivers' copies

  void report_failure(const std::string& message) override {
    hub_.control_.endpoint(device_).report_failure(message);
    std::lock_guard<std::mutex> lock(hub_.mu_);
    hub_.cv_.notify_all();
  }

 private:
  CudaHub& hub_;
  int device_;
  cudaStream_t transfer_ = nullptr;  // created on the worker's thread, in its context
};

CudaHub::CudaHub(const Schedule& schedule)
    : control_(schedule.positions(), /*spin=*/false), devices_(schedule.positions()), schedule_(schedule), boxes_(schedule.positions()) {
  const int devices = devices_;
  // One GPU per device: let each reach the others directly (NVLink / PCIe peer copies).
  int gpus = 0;
  if (devices > 1 && cudaGetDeviceCount(&gpus) == cudaSuccess && gpus >= devices) {
    nccl_ = true;
    nccl_endpoints_.resize(devices);
    nccl_failed_.assign(devices, 0);
    for (int i = 0; i < devices; ++i) {
      PS_CUDA_CHECK(cudaSetDevice(i));
      for (int j = 0; j < devices; ++j) {
        int can = 0;
        if (i != j && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess && can) {
          cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
          if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
          else PS_CUDA_CHECK(e);
        }
      }
    }
  }
  cudaGetLastError();
  for (int d = 0; d < devices; ++d) endpoints_.push_back(std::make_unique<CudaEndpoint>(*this, d));
}

CudaHub::~CudaHub() {
  // Messages nobody received (a failed run): their staging blocks go back with their allocators.
  for (auto& box : boxes_) {
    for (auto& [key, queue] : box) {
      for (Message& m : queue) {
        if (m.ready) cudaEventSynchronize(m.ready);
        if (m.ready) cudaEventDestroy(m.ready);
        try {
          if (m.owner) m.owner->free(m.staging);
        } catch (const std::exception&) {
        }
      }
    }
  }
}

// Called first by worker `device` on its own thread: in NCCL mode that is where its
// communicators are created (collectively with the other threads). After a failed
// creation it hands out the control endpoint, so that the failure can be reported.
Endpoint& CudaHub::endpoint(int device) {
  if (!nccl_) return *endpoints_.at(device);
  if (nccl_endpoints_.at(device)) return *nccl_endpoints_[device];
  if (nccl_failed_[device]) return control_.endpoint(device);
  try {
    Endpoint& control = control_.endpoint(device);
    auto broadcast = [this, device, &control](void* data, std::size_t bytes) {
      const auto deadline = Clock::now() + std::chrono::seconds(120);
      if (device == 0) {
        const char* p = static_cast<const char*>(data);
        shared_ids_.assign(p, p + bytes);
      }
      control.barrier(deadline, "the exchange of NCCL ids");
      if (device != 0) std::copy(shared_ids_.begin(), shared_ids_.end(), static_cast<char*>(data));
      control.barrier(deadline, "the exchange of NCCL ids");
    };
    nccl_endpoints_[device] = std::make_unique<NcclEndpoint>(
        control, schedule_, device, broadcast, [this] { return control_.failure(); });
  } catch (...) {
    nccl_failed_[device] = 1;
    throw;
  }
  return *nccl_endpoints_[device];
}

}  // namespace pipescope::exec::cuda
