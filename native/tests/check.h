// A deliberately small unit-test harness for the native core, so the C++ tests need
// nothing beyond the compiler. Each native/tests/test_*.cc becomes one executable
// (registered with ctest); tests register themselves with QE_TEST and use the CHECK
// macros below. A failed CHECK reports file:line and the values, and the test goes on.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace qe::check {

struct TestCase {
  const char* name;
  std::function<void()> body;
};

std::vector<TestCase>& registry();
void fail(const char* file, int line, const std::string& what);
// Path of a file in ../shared/vectors (NIST reference data beside the repository).
std::string vector_path(const std::string& name);
// Whole file as bytes; throws std::runtime_error when it cannot be read.
std::string read_file(const std::string& path);

struct Registrar {
  Registrar(const char* name, std::function<void()> body) { registry().push_back({name, std::move(body)}); }
};

template <typename T>
std::string show(const T& v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace qe::check

#define QE_CAT2(a, b) a##b
#define QE_CAT(a, b) QE_CAT2(a, b)
#define QE_TEST(name)                                                                      \
  static void QE_CAT(qe_test_, name)();                                                    \
  static ::qe::check::Registrar QE_CAT(qe_reg_, name)(#name, &QE_CAT(qe_test_, name));     \
  static void QE_CAT(qe_test_, name)()

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) ::qe::check::fail(__FILE__, __LINE__, "CHECK(" #cond ")");                \
  } while (0)

#define CHECK_EQ(a, b)                                                                     \
  do {                                                                                     \
    /* copies, so CHECK_EQ(f().member, x) cannot keep a dead temporary alive by reference */ \
    const auto qe_a = (a);                                                                 \
    const auto qe_b = (b);                                                                 \
    if (!(qe_a == qe_b))                                                                   \
      ::qe::check::fail(__FILE__, __LINE__,                                                \
                        "CHECK_EQ(" #a ", " #b "): " + ::qe::check::show(qe_a) + " != " +  \
                            ::qe::check::show(qe_b));                                      \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                              \
  do {                                                                                     \
    const double qe_a = (a);                                                               \
    const double qe_b = (b);                                                               \
    if (!(std::fabs(qe_a - qe_b) <= (tol)))                                                \
      ::qe::check::fail(__FILE__, __LINE__,                                                \
                        "CHECK_NEAR(" #a ", " #b "): " + ::qe::check::show(qe_a) + " vs " + \
                            ::qe::check::show(qe_b) + " (tol " #tol ")");                  \
  } while (0)

// Checks that `expr` throws an exception of type `type`.
#define CHECK_THROWS(type, expr)                                                           \
  do {                                                                                     \
    bool qe_thrown = false;                                                                \
    try {                                                                                  \
      (void)(expr);                                                                        \
    } catch (const type&) {                                                                \
      qe_thrown = true;                                                                    \
    }                                                                                      \
    if (!qe_thrown) ::qe::check::fail(__FILE__, __LINE__, "CHECK_THROWS(" #type ", " #expr ")"); \
  } while (0)
