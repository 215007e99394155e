// Prints Korthikanti et al.'s Tables 5 and 4 beside llm/'s predictions on an A100 GPU
// file (docs/llm-scale.md):  build/bin/korthikanti_table5 [--gpu FILE] [-o FILE]
#include <iostream>
#include <string>

#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "experiments/korthikanti_table5.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  std::string output, gpu_file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      output = argv[++i];
    } else if (arg == "--gpu" && i + 1 < argc) {
      gpu_file = argv[++i];
    } else {
      std::cerr << "usage: korthikanti_table5 [--gpu FILE] [-o FILE]\n";
      return 2;
    }
  }
  try {
    if (gpu_file.empty()) gpu_file = data_dir("profiles/gpus") + "/a100-80gb.json";
    const GpuModel gpu = load_gpu_model(gpu_file);
    const std::string md = korthikanti_markdown(korthikanti_table5(gpu), korthikanti_table4(gpu));
    if (output.empty()) {
      std::cout << md;
    } else {
      write_file_atomically(output, md);
    }
  } catch (const std::exception& e) {
    std::cerr << "korthikanti_table5: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
