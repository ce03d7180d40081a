#include "engine/text/read_file.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace astrai {

std::string read_whole_file(const std::string& path, const std::string& label) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(label + ": cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(label + ": read error");
  return bytes;
}

}  // namespace astrai
