// read_whole_file against the bytes the test wrote: files of any size around
// its 64 KiB read chunk (empty, one byte, a chunk exactly, a chunk and one,
// several chunks and a tail), NUL and CR LF bytes kept as they are; a FIFO
// (no size to ask for) read to its end; and the errors name the label.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "engine/text/read_file.h"
#include "tests/support/shared_data.h"

namespace fs = std::filesystem;
using astrai::read_whole_file;

namespace read_file_test {

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string bytes(n, '\0');
  for (char& b : bytes) b = char(rng() % 256);
  if (n > 2) bytes.replace(n / 2, 2, "\r\n");
  return bytes;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace read_file_test

TEST_CASE("read_whole_file returns a file's bytes exactly, at every size around its read chunk", "[text][read_file]") {
  using namespace read_file_test;
  const fs::path path = astrai::test::scratch_dir() / "read_whole_file.bin";
  constexpr size_t kChunk = 64 * 1024;
  for (size_t n : {size_t(0), size_t(1), kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 123}) {
    INFO(n << " bytes");
    const std::string bytes = random_bytes(n, uint32_t(n) + 1);
    write_bytes(path, bytes);
    const std::string read = read_whole_file(path.string(), "the file");
    CHECK(read.size() == n);
    CHECK(read == bytes);
  }
  fs::remove(path);
}

TEST_CASE("read_whole_file reads a FIFO to its end", "[text][read_file]") {
  using namespace read_file_test;
  const fs::path path = astrai::test::scratch_dir() / "read_whole_file.fifo";
  fs::remove(path);
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  const std::string bytes = random_bytes(200 * 1024 + 7, 9);
  std::thread writer([&] { write_bytes(path, bytes); });
  const std::string read = read_whole_file(path.string(), "the fifo");
  writer.join();
  CHECK(read == bytes);
  fs::remove(path);
}

TEST_CASE("read_whole_file names its label when a file cannot be opened or read", "[text][read_file]") {
  const fs::path dir = astrai::test::scratch_dir();
  CHECK_THROWS_WITH(read_whole_file((dir / "no such file").string(), "tokenizer file 'x'"),
                    "tokenizer file 'x': cannot open");
  // A directory opens as an ifstream on Linux, but reading it fails.
  CHECK_THROWS_WITH(read_whole_file(dir.string(), "the folder"), "the folder: read error");
}
