// Writes an output file atomically: the text goes to a temporary file beside the
// target, which is renamed over the target only once it is complete. A failed or
// interrupted command therefore never leaves a truncated file behind.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pipescope {

// Throws InputError naming `path` when the directory is not writable.
void write_file_atomically(const std::string& path, const std::string& contents);

// All of a command's output files, all or nothing: every temporary file is written
// first, and only when all of them are complete are they renamed over their targets.
// When one cannot be written, none of the targets is touched and the temporary
// files are removed. (A rename that fails after earlier renames succeeded, which
// needs the folder to change under the command, can still leave some targets new.)
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace pipescope
