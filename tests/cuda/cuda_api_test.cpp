// The CUDA backend's CUDA-free surface, checked on every machine that builds it: the
// device query never throws and names why there is no GPU; backend specs parse or fail
// with a message that names the bad part; without a GPU, asking for the backend throws
// RunError (exit 3), never crashes; the pipescope binary says so with exit code 3.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "exec/backends/backend.h"
#include "exec/cuda/cuda_api.h"
#include "tests/support/source_paths.h"

namespace pipescope::exec {
namespace {

TEST(CudaApi, StatusNamesTheReasonWhenThereIsNoDevice) {
  const CudaStatus s = cuda_status();
  // Either GPUs, or none and a reason such as "cudaGetDeviceCount returned 35 (...)".
  if (s.devices == 0) {
    EXPECT_FALSE(s.reason.empty());
  } else {
    EXPECT_TRUE(s.reason.empty()) << s.reason;
  }
  EXPECT_GE(s.runtime_version, 13000) << "built against CUDA 13";
  EXPECT_FALSE(s.nccl_version.empty()) << "ncclGetVersion works without a GPU";
}

TEST(CudaApi, SpecsParse) {
  EXPECT_EQ(parse_cuda_backend_spec("cuda").dtype, Dtype::Fp32);
  EXPECT_EQ(parse_cuda_backend_spec("cuda").partitions, 0);
  EXPECT_EQ(parse_cuda_backend_spec("cuda:bf16").dtype, Dtype::Bf16);
  const CudaBackendSpec s = parse_cuda_backend_spec("cuda:bf16:part=4");
  EXPECT_EQ(s.dtype, Dtype::Bf16);
  EXPECT_EQ(s.partitions, 4);
  EXPECT_EQ(parse_cuda_backend_spec("cuda:part=2:fp32").partitions, 2);
}

TEST(CudaApi, BadSpecsNameTheBadPart) {
  try {
    parse_cuda_backend_spec("cuda:fp16");
    FAIL() << "fp16 is not offered";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"fp16\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_cuda_backend_spec("cuda:part=0"), InputError);
  EXPECT_THROW(parse_cuda_backend_spec("cuda:part=x"), InputError);
  EXPECT_THROW(parse_cuda_backend_spec("cudabf16"), InputError);
}

TEST(CudaApi, RegistryOffersCuda) {
  const std::vector<std::string> names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
}

TEST(CudaApi, NoDeviceMeansRunErrorNotACrash) {
  if (cuda_status().devices > 0) GTEST_SKIP() << "this machine has a GPU; the no-GPU path is not reachable";
  try {
    make_backend("cuda:bf16");
    FAIL() << "no GPU, yet a backend was made";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("no usable CUDA device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pipescope::exec

namespace pipescope::exec {
namespace {

int run_command(const std::string& args, std::string* err) {
  // One file per test: ctest runs tests in parallel processes.
  const std::string path = ::testing::TempDir() + "cuda_cli_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".stderr";
  const int status = std::system((std::string(PIPESCOPE_BINARY) + " " + args + " > /dev/null 2> " + path).c_str());
  std::ifstream in(path);
  err->assign(std::istreambuf_iterator<char>(in), {});
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The binary built with CUDA starts here (no libcuda is linked): asking for the cuda
// backend without a GPU is a failed run (exit 3) that names the CUDA error; asking the
// cpu backend for bf16 is bad input (exit 2).
TEST(CudaCli, WithoutAGpuTheCommandSaysWhyAndExitsThree) {
  if (cuda_status().devices > 0) GTEST_SKIP() << "this machine has a GPU";
  std::string err;
  EXPECT_EQ(run_command("profile --model " + std::string(PIPESCOPE_SOURCE_DIR) + "/models/gpt-tiny.json --backend cuda --dtype bf16", &err), 3);
  EXPECT_NE(err.find("cudaGetDeviceCount returned"), std::string::npos) << err;
  EXPECT_EQ(run_command("profile gemm --backend cuda", &err), 3);
}

TEST(CudaCli, Bf16OnTheCpuBackendIsBadInput) {
  std::string err;
  EXPECT_EQ(run_command("profile --model " + std::string(PIPESCOPE_SOURCE_DIR) + "/models/gpt-tiny.json --backend cpu --dtype bf16", &err), 2);
  EXPECT_NE(err.find("--dtype bf16"), std::string::npos) << err;
  EXPECT_EQ(run_command("profile --model " + std::string(PIPESCOPE_SOURCE_DIR) + "/models/gpt-tiny.json --backend cuda --sm-partition 0", &err), 2);
}

}  // namespace
}  // namespace pipescope::exec
