// Writes an output file atomically: the text goes to a temporary file beside the
// target, which is renamed over the target only once it is complete. A failed or
// interrupted command therefore never leaves a truncated file behind.
#pragma once

#include <string>

namespace pipescope {

// Throws InputError naming `path` when the directory is not writable.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace pipescope
