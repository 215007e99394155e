// Where a test, benchmark or experiment finds the source tree (bundled profiles, models,
// test data), the build folder and the built `pipescope` CLI: this build's absolute paths,
// defined in one generated translation unit (the root CMakeLists.txt's
// pipescope_source_paths). They are kept out of the compile flags on purpose: a -D naming
// the folder is part of every object's compiler-cache key, so a fresh clone (CI's) missed
// the cache on every test object (docs/ci.md).
#pragma once

namespace pipescope::source_paths {

const char* source_dir();  // the repository root this build was configured from
const char* binary_dir();  // the build folder
const char* cli_binary();  // the built `pipescope`
const char* gui_binary();  // the built `pipescope-gui` ("" in a build without the GUI)

}  // namespace pipescope::source_paths

// The names the tests have always used, now expressions rather than string literals:
// write std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/...".
#define PIPESCOPE_SOURCE_DIR (::pipescope::source_paths::source_dir())
#define PIPESCOPE_BINARY (::pipescope::source_paths::cli_binary())
#define PIPESCOPE_GUI_EXE (::pipescope::source_paths::gui_binary())
