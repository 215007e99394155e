// Where pipescope's bundled data lives (profiles/, profiles/gpus/, models/, schemas/).
// Invariant: an installed binary reads the data installed beside it, never the source
// tree it was built from; a binary run from its build tree reads the source tree.
//   installed:  <prefix>/bin/pipescope -> <prefix>/share/pipescope/profiles/gpus/h200.json
//   build tree: build/bin/pipescope    -> <source>/profiles/gpus/h200.json
//   std::string gpus = data_dir("profiles/gpus");
#pragma once

#include <string>

namespace pipescope {

// The running executable's path (/proc/self/exe), or "" where it cannot be read.
std::string executable_path();

// The first of <exe's folder>/<PIPESCOPE_DATA_FROM_BIN>/<relative> (the install layout,
// ../share/pipescope with GNUInstallDirs' defaults) and <source tree>/<relative> that
// is a folder; "" when neither is.
std::string data_dir(const std::string& relative);

}  // namespace pipescope
