// Driver entry points are looked up once per process; a missing one (an old driver)
// throws RunError naming it.
#include "exec/cuda/green_context.h"

#include <cudaTypedefs.h>

#include <mutex>
#include <vector>

#include "exec/cuda/cuda_check.h"

namespace pipescope::exec::cuda {

namespace {

struct DriverApi {
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetDevResource_v12040 get_dev_resource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 split_by_count = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 generate_desc = nullptr;
  PFN_cuGreenCtxCreate_v12040 green_create = nullptr;
  PFN_cuGreenCtxDestroy_v12040 green_destroy = nullptr;
  PFN_cuCtxFromGreenCtx_v12040 ctx_from_green = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
};

template <class F> void load(F& fn, const char* symbol, unsigned version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, version, cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !p) {
    throw RunError(std::string("green contexts need the driver entry point ") + symbol + " (CUDA " +
                   std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) +
                   " driver or newer): " + (e != cudaSuccess ? cudaGetErrorName(e) : "symbol not found"));
  }
  fn = reinterpret_cast<F>(p);
}

const DriverApi& driver() {
  static std::once_flag once;
  static DriverApi api;
  static std::string failure;
  std::call_once(once, [] {
    try {
      load(api.get_error_name, "cuGetErrorName", 6000);
      load(api.device_get, "cuDeviceGet", 2000);
      load(api.get_dev_resource, "cuDeviceGetDevResource", 12040);
      load(api.split_by_count, "cuDevSmResourceSplitByCount", 12040);
      load(api.generate_desc, "cuDevResourceGenerateDesc", 12040);
      load(api.green_create, "cuGreenCtxCreate", 12040);
      load(api.green_destroy, "cuGreenCtxDestroy", 12040);
      load(api.ctx_from_green, "cuCtxFromGreenCtx", 12040);
      load(api.ctx_set_current, "cuCtxSetCurrent", 4000);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw RunError(failure);
  return api;
}

void check_cu(CUresult r, const char* what, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver().get_error_name) driver().get_error_name(r, &name);
  throw_cuda(what, name ? name : "CUresult " + std::to_string(static_cast<int>(r)), file, line);
}

#define PS_CU_CHECK(call) check_cu((call), #call, __FILE__, __LINE__)

}  // namespace

GreenPartition::GreenPartition(int device, int index, int parts) : device_(device), index_(index), parts_(parts) {
  if (parts < 1 || index < 0 || index >= parts) {
    throw InputError("SM partition " + std::to_string(index) + " of " + std::to_string(parts) + " does not exist");
  }
  const DriverApi& api = driver();
  PS_CUDA_CHECK(cudaSetDevice(device));
  PS_CUDA_CHECK(cudaFree(nullptr));  // the primary context exists before green contexts retain it
  CUdevice dev;
  PS_CU_CHECK(api.device_get(&dev, device));
  CUdevResource all{};
  PS_CU_CHECK(api.get_dev_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  device_sm_count_ = static_cast<int>(all.sm.smCount);
  const unsigned align = std::max(1u, std::max(all.sm.smCoscheduledAlignment, all.sm.minSmPartitionSize));
  unsigned per_part = static_cast<unsigned>(device_sm_count_ / parts) / align * align;
  if (per_part < all.sm.minSmPartitionSize) {
    throw InputError("cannot split " + std::to_string(device_sm_count_) + " SMs into " + std::to_string(parts) +
                     " partitions of at least " + std::to_string(all.sm.minSmPartitionSize) + " SMs");
  }
  unsigned groups = static_cast<unsigned>(parts);
  std::vector<CUdevResource> split(groups);
  CUdevResource remaining{};
  PS_CU_CHECK(api.split_by_count(split.data(), &groups, &all, &remaining, 0, per_part));
  if (static_cast<int>(groups) < parts) {
    throw RunError("the driver split " + std::to_string(device_sm_count_) + " SMs into only " +
                   std::to_string(groups) + " groups of " + std::to_string(per_part) + ", not " +
                   std::to_string(parts));
  }
  sm_count_ = static_cast<int>(split[index].sm.smCount);
  CUdevResourceDesc desc = nullptr;
  PS_CU_CHECK(api.generate_desc(&desc, &split[index], 1));
  PS_CU_CHECK(api.green_create(&green_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  PS_CU_CHECK(api.ctx_from_green(&context_, green_));
}

GreenPartition::~GreenPartition() {
  if (green_) driver().green_destroy(green_);
}

void GreenPartition::make_current() { PS_CU_CHECK(driver().ctx_set_current(context_)); }

std::string GreenPartition::describe() const {
  return "SM partition " + std::to_string(index_ + 1) + " of " + std::to_string(parts_) + ": " +
         std::to_string(sm_count_) + " of " + std::to_string(device_sm_count_) + " SMs";
}

}  // namespace pipescope::exec::cuda
