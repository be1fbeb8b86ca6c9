// Reads NIST reference P-values from ../shared/vectors/reference-pvalues-*.json:
// the "tests" object (or another top-level object such as "tests_full_precision"),
// test name -> list of P-values, JSON null -> NaN. Only what those files use is parsed.
#pragma once

#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/check.h"

namespace qe::check {

inline std::vector<double> reference_pvalues(const std::string& file, const std::string& test,
                                             const std::string& object = "tests") {
  const std::string json = read_file(vector_path(file));
  const size_t obj = json.find("\"" + object + "\"");
  if (obj == std::string::npos) throw std::runtime_error(file + ": no object " + object);
  const size_t key = json.find("\"" + test + "\"", obj);
  if (key == std::string::npos) throw std::runtime_error(file + ": no test " + test);
  size_t i = json.find('[', key);
  const size_t end = json.find(']', i);
  std::vector<double> values;
  ++i;
  while (i < end) {
    while (i < end && (json[i] == ' ' || json[i] == '\n' || json[i] == ',' || json[i] == '\r')) ++i;
    if (i >= end) break;
    if (json.compare(i, 4, "null") == 0) {
      values.push_back(std::numeric_limits<double>::quiet_NaN());
      i += 4;
    } else {
      char* stop = nullptr;
      values.push_back(std::strtod(json.c_str() + i, &stop));
      i = static_cast<size_t>(stop - json.c_str());
    }
  }
  return values;
}

}  // namespace qe::check
