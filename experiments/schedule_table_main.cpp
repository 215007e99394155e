// Prints the schedule comparison table of docs/schedules-new.md: the bubble of every
// built-in schedule at p = 8, m = 24, T_F = 18.5, T_B = 18.1, T_W = 9.3, T_comm = 0.6 ms
// and at two more settings:
//   build/bin/schedule_table [-o docs/schedules-new-table.md]
#include <sstream>
#include <string>
#include <vector>

#include "experiments/schedule_table.h"
#include "experiments/table_program.h"

int main(int argc, char** argv) {
  using namespace pipescope;
  return run_table_program(argc, argv, "schedule_table", [] {
    const std::vector<TableSetting> settings = {
        {8, 24, 18.5, 18.1, 9.3, 0.6},  // the setting
        {8, 24, 10.0, 10.0, 10.0, 0.0},  // the papers' unit picture: F = B = W, free links
        {4, 8, 12.0, 14.0, 4.0, 2.0},    // few micro-batches, small W, slow links
    };
    std::ostringstream md;
    for (const TableSetting& t : settings) md << table_markdown(t, schedule_table(t)) << "\n";
    return md.str();
  });
}
