// Prints the zero-bubble paper's Table 5 beside zb-auto's bubble on the paper's own
// settings, then its measured comparison (Tables 4, 6, 10) predicted on its runtime's
// batched p2p (docs/schedules-new.md, "On the zero-bubble paper's settings"):
//   build/bin/zero_bubble_paper [--steps N] [-o FILE]
#include <iostream>
#include <sstream>
#include <string>

#include "core/atomic_file.h"
#include "experiments/zero_bubble_paper.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  std::string output;
  int steps = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      output = argv[++i];
    } else if (arg == "--steps" && i + 1 < argc) {
      try {
        steps = std::stoi(argv[++i]);
      } catch (const std::exception&) {
        steps = 0;
      }
      if (steps < 3) {
        std::cerr << "zero_bubble_paper: --steps: expected an integer >= 3, got " << argv[i] << "\n";
        return 2;
      }
    } else {
      std::cerr << "usage: zero_bubble_paper [--steps N] [-o FILE]\n";
      return 2;
    }
  }
  try {
    const std::string md = "## Table 5's bubbles on the paper's times\n\n" + paper_markdown(zero_bubble_paper_table(steps)) +
                           "\n## Tables 4, 6 and 10 predicted on the paper's runtime (samples per GPU per second)\n\n" +
                           throughput_markdown(zero_bubble_paper_throughputs(steps));
    if (output.empty()) {
      std::cout << md;
    } else {
      write_file_atomically(output, md);
    }
  } catch (const std::exception& e) {
    std::cerr << "zero_bubble_paper: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
