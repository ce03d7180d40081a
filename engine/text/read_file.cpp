#include "engine/text/read_file.h"

#include <fstream>
#include <stdexcept>

namespace astrai {

std::string read_whole_file(const std::string& path, const std::string& label) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(label + ": cannot open");
  // In blocks, not character by character through istreambuf_iterator: a
  // real tokenizer.json is 7-11 MB, read character by character in about a
  // second under the sanitizers. Reading to the end (no size asked for
  // first) takes pipes and FIFOs too. istream::read turns the file buffer's
  // exceptions (reading a directory) into badbit, reported below with the
  // label.
  std::string bytes;
  char block[64 * 1024];
  while (in.read(block, sizeof block) || in.gcount() > 0) bytes.append(block, size_t(in.gcount()));
  if (in.bad()) throw std::runtime_error(label + ": read error");
  return bytes;
}

}  // namespace astrai
