// The `main` of a program that prints a markdown table for docs/: `-o FILE` writes it
// atomically instead of to stdout; an error prints "NAME: what" and exits 2.
//   int main(int argc, char** argv) { return run_table_program(argc, argv, "schedule_table", make_md); }
#pragma once

#include <functional>
#include <iostream>
#include <string>

#include "core/atomic_file.h"

namespace pipescope {

inline int run_table_program(int argc, char** argv, const char* name, const std::function<std::string()>& make) {
  std::string output;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o" && i + 1 < argc) {
      output = argv[++i];
    } else {
      std::cerr << "usage: " << name << " [-o FILE]\n";
      return 2;
    }
  }
  try {
    const std::string md = make();
    if (output.empty()) {
      std::cout << md;
    } else {
      write_file_atomically(output, md);
    }
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace pipescope
