// REQUIRE(cond): a property a fuzz target checks; when it does not hold, the condition and
// its line go to stderr and the process aborts, so libFuzzer saves the input.
#pragma once
#include <cstdio>
#include <cstdlib>

#define REQUIRE(cond)                                                                  \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
