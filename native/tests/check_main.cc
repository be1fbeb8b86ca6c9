// Runs every test registered with QE_TEST in this executable. An optional argument
// selects tests whose name contains it. Ends with the plain "N passed, N failed" line.
#include "tests/check.h"

#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

namespace qe::check {

namespace {
int g_failures_in_test = 0;
}

std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

void fail(const char* file, int line, const std::string& what) {
  ++g_failures_in_test;
  std::fprintf(stderr, "  %s:%d: %s\n", file, line, what.c_str());
}

std::string vector_path(const std::string& name) { return std::string(QE_VECTORS_DIR) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace qe::check

int main(int argc, char** argv) {
  using namespace qe::check;
  const std::string_view filter = argc > 1 ? argv[1] : "";
  int passed = 0, failed = 0;
  for (const auto& test : registry()) {
    if (!filter.empty() && std::string_view(test.name).find(filter) == std::string_view::npos) continue;
    g_failures_in_test = 0;
    try {
      test.body();
    } catch (const std::exception& e) {
      fail(__FILE__, __LINE__, std::string("uncaught exception: ") + e.what());
    }
    if (g_failures_in_test == 0) {
      ++passed;
      std::printf("ok   %s\n", test.name);
    } else {
      ++failed;
      std::printf("FAIL %s\n", test.name);
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
