// Prints the schedule comparison table of docs/schedules-new.md: the bubble of every
// built-in schedule at p = 8, m = 24, T_F = 18.5, T_B = 18.1, T_W = 9.3, T_comm = 0.6 ms
// and at two more settings:
//   build/bin/schedule_table [-o docs/schedules-new-table.md]
#include <iostream>
#include <sstream>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "experiments/schedule_table.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      output = argv[++i];
    } else {
      std::cerr << "usage: schedule_table [-o FILE]\n";
      return 2;
    }
  }
  try {
    const std::vector<TableSetting> settings = {
        {8, 24, 18.5, 18.1, 9.3, 0.6},  // the setting
        {8, 24, 10.0, 10.0, 10.0, 0.0},  // the papers' unit picture: F = B = W, free links
        {4, 8, 12.0, 14.0, 4.0, 2.0},    // few micro-batches, small W, slow links
    };
    std::ostringstream md;
    for (const TableSetting& t : settings) md << table_markdown(t, schedule_table(t)) << "\n";
    if (output.empty()) {
      std::cout << md.str();
    } else {
      write_file_atomically(output, md.str());
    }
  } catch (const std::exception& e) {
    std::cerr << "schedule_table: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
