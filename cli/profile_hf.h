// `pipescope profile synth --hf-config config.json --gpu NAME ...`: the flags of the
// Hugging Face synthesiser (interop/hf_profile.h), kept apart from cmd_profile.cpp's
// other kinds. GPU names are looked up in $PIPESCOPE_GPU_DIR, then in the bundled
// profiles/gpus/ (installed beside the binary, else the source tree's: core/data_dir.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "interop/hf_profile.h"

namespace pipescope::cli {

struct HfSynthArgs {
  std::string config;
  std::string gpu;
  std::string dtype = "bf16";
  int tensor_parallel = 1;
  bool full_activations = false;
  int gpus = 0;
  std::string hardware_output;

  void add_to(CLI::App* synth);
  bool requested() const { return !config.empty(); }
  // The --gpu file (a name from profiles/gpus/ or a path); throws InputError naming --gpu.
  GpuModel load_gpu() const;
  // The profile as JSON text; writes --hardware-output when given.
  std::string run(const std::vector<double>& batch_sizes, int64_t sequence, const std::string& name) const;
};

}  // namespace pipescope::cli
