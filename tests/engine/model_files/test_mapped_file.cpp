// MappedFile and ByteReader: little-endian values at the right offsets, exact
// truncation messages, no reads past the end, move-only ownership.
#include <catch2/catch.hpp>

#include <limits>
#include <stdexcept>
#include <utility>

#include "engine/model_files/mapped_file.h"
#include "tests/engine/model_files/byte_builder.h"
#include "tests/support/shared_data.h"

using astrai::ByteReader;
using astrai::MappedFile;
using astrai::test::ByteBuilder;
using Catch::Matchers::Contains;

namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("ByteReader reads little-endian fixed-size values in sequence", "[mapped_file]") {
  // Bytes spelled out by hand: 0x04030201 is stored 01 02 03 04.
  const std::string bytes = std::string("\x01\x02\x03\x04", 4) + std::string("\xFF", 1) + std::string("\x34\x12", 2) +
                            std::string("\x00\x00\xC0\x3F", 4) +  // 1.5f = 0x3FC00000
                            std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8) +
                            std::string("\x00\x00\x00\x00\x00\x00\xF0\xBF", 8);  // -1.0 = 0xBFF0000000000000
  ByteReader r(as_bytes(bytes), "mem");
  CHECK(r.read<uint32_t>("a") == 0x04030201u);
  CHECK(r.read<int8_t>("b") == -1);
  CHECK(r.read<uint16_t>("c") == 0x1234);
  CHECK(r.read<float>("d") == 1.5f);
  CHECK(r.read<uint64_t>("e") == 0x0102030405060708ull);
  CHECK(r.read<double>("f") == -1.0);
  CHECK(r.remaining() == 0);
  CHECK(r.offset() == bytes.size());
}

TEST_CASE("ByteReader names the file, offset, field and sizes when truncated", "[mapped_file]") {
  const std::string bytes("\x01\x02\x03\x04\x05\x06", 6);
  ByteReader r(as_bytes(bytes), "model.bin");
  r.read<uint16_t>("head");
  REQUIRE_THROWS_WITH(r.read<uint64_t>("tensor count"),
                      "model.bin: truncated at offset 2 reading tensor count (8 bytes needed, 4 left)");
  CHECK(r.offset() == 2);  // a failed read does not move the cursor
  // A huge length is refused before anything is allocated or read.
  REQUIRE_THROWS_WITH(r.read_bytes(uint64_t(1) << 60, "name"),
                      "model.bin: truncated at offset 2 reading name (1152921504606846976 bytes needed, 4 left)");
  REQUIRE_THROWS_WITH(r.read_bytes(std::numeric_limits<uint64_t>::max(), "x"), Contains("truncated at offset 2"));
  CHECK(r.read_bytes(4, "rest").size() == 4);
}

TEST_CASE("ByteReader seek stays within the data", "[mapped_file]") {
  const std::string bytes("abcdef", 6);
  ByteReader r(as_bytes(bytes), "mem");
  r.seek(6);
  CHECK(r.remaining() == 0);
  r.seek(2);
  CHECK(std::to_integer<char>(r.read_bytes(1, "c")[0]) == 'c');
  REQUIRE_THROWS_WITH(r.seek(7), Contains("cannot seek to offset 7"));
  REQUIRE_THROWS_WITH(r.fail("bad thing"), "mem: bad thing at offset 3");
}

TEST_CASE("ByteReader reads float arrays", "[mapped_file]") {
  ByteBuilder b;
  b.f32(1.0f).f32(-2.5f).f32(3.25f);
  ByteReader r(as_bytes(b.bytes()), "mem");
  r.read_bytes(0, "nothing");
  float out[3];
  r.read_floats(out, "floats");
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.5f);
  CHECK(out[2] == 3.25f);
  float more[1];
  REQUIRE_THROWS_WITH(r.read_floats(more, "one more"), Contains("(4 bytes needed, 0 left)"));
}

TEST_CASE("MappedFile maps a file read-only and is move-only", "[mapped_file]") {
  const auto path = astrai::test::scratch_dir() / "mapped.bin";
  astrai::test::write_file(path, "hello, map");
  MappedFile f(path.string());
  REQUIRE(f.size() == 10);
  CHECK(std::string(reinterpret_cast<const char*>(f.data()), 10) == "hello, map");
  CHECK(f.path() == path.string());

  MappedFile g(std::move(f));
  CHECK(g.size() == 10);
  CHECK(f.size() == 0);  // NOLINT: moved-from is empty by contract
  CHECK(f.data() == nullptr);
  MappedFile h(path.string());
  h = std::move(g);
  CHECK(std::string(reinterpret_cast<const char*>(h.data()), 5) == "hello");
  static_assert(!std::is_copy_constructible_v<MappedFile>);
}

TEST_CASE("MappedFile handles empty, missing and non-regular files", "[mapped_file]") {
  const auto dir = astrai::test::scratch_dir();
  astrai::test::write_file(dir / "empty.bin", "");
  MappedFile empty((dir / "empty.bin").string());
  CHECK(empty.size() == 0);
  CHECK(empty.bytes().empty());
  ByteReader r(empty.bytes(), "empty.bin");
  REQUIRE_THROWS_WITH(r.read<uint32_t>("magic"), "empty.bin: truncated at offset 0 reading magic (4 bytes needed, 0 left)");

  const auto missing = (dir / "no-such-file.bin").string();
  REQUIRE_THROWS_WITH(MappedFile(missing), missing + ": cannot open (No such file or directory)");
  REQUIRE_THROWS_WITH(MappedFile(dir.string()), dir.string() + ": not a regular file");
}
