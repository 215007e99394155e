// Prints the memory-bubble frontier tables of docs/memory.md: the bundled 1.3B and 13B GPT
// profiles on 8 H200s (profiles/gpus/h200.json: PCIe Gen5 x16 host link, 64 GB/s each way),
// every schedule with offload none, selective and all, and the 13B model again with a
// GH200-style host link (a what-if on the same GPU). Run from the source tree's root:
//   build/bin/frontier_table [-o FILE]
#include <sstream>
#include <string>
#include <vector>

#include "experiments/frontier_table.h"
#include "experiments/table_program.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  return run_table_program(argc, argv, "frontier_table", [] {
    std::ostringstream md;
    std::vector<FrontierSetting> settings;
    for (const char* profile : {"profiles/gpt-1.3b-h200.json", "profiles/gpt-13b-h200.json"}) {
      FrontierSetting s;
      s.profile_path = profile;
      s.hardware_path = "profiles/gpus/h200.json";
      settings.push_back(s);
    }
    // What-if: the 13B model with a GH200-style NVLink-C2C host link, 450 GB/s each way
    // (NVIDIA's GH200 datasheet: 900 GB/s both directions), latency as the file's PCIe.
    FrontierSetting c2c = settings.back();
    c2c.host_link = HostLink{{450.0, 10.0}, {450.0, 10.0}};
    c2c.host_link_name = "a GH200-style host link (NVLink-C2C, 450 GB/s each way; what-if)";
    settings.push_back(c2c);
    for (const FrontierSetting& s : settings) md << frontier_markdown(s, frontier_table(s)) << "\n";
    return md.str();
  });
}
