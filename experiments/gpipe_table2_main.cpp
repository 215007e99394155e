// Regenerates the shape of GPipe's Table 2 (docs/gpipe-table2.md) from the shipped
// uniform transformer-like and uneven AmoebaNet-like profiles:
//   build/bin/gpipe_table2 [--profiles DIR] [-o docs/gpipe-table2.md]
#include <iostream>
#include <sstream>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "experiments/gpipe_table2.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  std::string dir = "profiles", output;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--profiles" || arg == "-o") && i + 1 < argc) {
      (arg == "-o" ? output : dir) = argv[++i];
    } else {
      std::cerr << "usage: gpipe_table2 [--profiles DIR] [-o FILE]\n";
      return 2;
    }
  }
  try {
    const Profile uniform = load_profile(dir + "/toy-uniform.json");
    const Profile uneven = load_profile(dir + "/amoebanet-like.json");
    const std::vector<std::vector<double>> paper_transformer = {{1.0, 1.07, 1.3}, {1.7, 3.2, 4.8}, {1.8, 3.4, 6.3}};
    const std::vector<std::vector<double>> paper_amoeba = {{1.0, 1.13, 1.38}, {1.07, 1.26, 1.72}, {1.21, 1.84, 3.48}};
    std::ostringstream md;
    md << "# GPipe Table 2, regenerated\n\n"
       << "Normalised training throughput of a GPipe-scheduled step (`pipescope` simulator, ideal links,\n"
       << "unbounded memory, mini-batch N = 32 split into M micro-batches), speed-up against K = 2, M = 1.\n"
       << "Each cell: ours (paper). Paper: Huang et al., GPipe, NeurIPS 2019, Table 2 (TPUs; the paper\n"
       << "adjusted batch sizes to fit memory, so the trends are what compare). Regenerate with\n"
       << "`build/bin/gpipe_table2 -o docs/gpipe-table2.md`.\n\n"
       << "## Transformer-like, uniform layers (`profiles/toy-uniform.json`, uniform partition)\n\n"
       << speedup_markdown(gpipe_table2(uniform, "uniform"), paper_transformer)
       << "\n## AmoebaNet-like, uneven layers (`profiles/amoebanet-like.json`, uniform partition)\n\n"
       << speedup_markdown(gpipe_table2(uneven, "uniform"), paper_amoeba)
       << "\n## AmoebaNet-like with the `optimal` partition\n\n"
       << speedup_markdown(gpipe_table2(uneven, "optimal"), paper_amoeba)
       << "\nReading: a GPipe step with stage times t_s takes (sum t_s + (M-1) max t_s) x N/M, so throughput\n"
       << "rises with M everywhere; with uniform layers it is near-linear in K once M >> K (K = 8, M = 32:\n"
       << "16 / (78/32) = 6.56x, paper 6.3x). AmoebaNet-like layers (every 4th layer 4x heavier, 28 units)\n"
       << "make K = 8 with equal layer counts clearly sub-linear: stages 2,5,2,5,... units, 4.90x; the\n"
       << "optimal partition (stages 3,4,3,4,...) recovers part of it, 5.89x. At M = 1 pipelining does not\n"
       << "help at all (one micro-batch visits the stages one at a time: 1.00x); the paper's 1.07x-1.38x there\n"
       << "come from its per-K batch adjustments, which this fixed-batch table leaves out.\n";
    std::cout << md.str();
    if (!output.empty()) write_file_atomically(output, md.str());
  } catch (const InputError& e) {
    std::cerr << "gpipe_table2: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
