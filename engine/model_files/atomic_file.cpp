#include "engine/model_files/atomic_file.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace astrai {

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot open " + tmp + " for writing");
    try {
      write(out);
      out.flush();
    } catch (...) {  // no half-written file is left
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": writing failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place");
  }
}

}  // namespace astrai
