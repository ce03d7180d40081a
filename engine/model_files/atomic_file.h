// Writes a file so that no half-written one is ever left under its name: the
// bytes go to PATH.tmp, which is renamed over PATH once complete. A writer
// that throws (a tensor's producer failing, say) or a failed write (disk
// full) removes the temporary file and throws; PATH is untouched. The model
// file writers (GGUF, safetensors) both use it.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace astrai {

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace astrai
