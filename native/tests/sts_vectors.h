// NIST's two reference sequences (../shared/vectors), loaded once per test executable:
// the first 10^6 bits of e (ASCII) and data.sha1 read as raw bytes, MSB first.
#pragma once

#include <cstdint>
#include <string>

#include "sts/sts.h"
#include "tests/check.h"

namespace qe::check {

inline const qe::sts::Bits& e_bits() {
  static const qe::sts::Bits bits = qe::sts::bits_from_ascii(read_file(vector_path("data.e")), 1000000);
  return bits;
}

inline const qe::sts::Bits& sha1_bits() {
  static const qe::sts::Bits bits = [] {
    const std::string raw = read_file(vector_path("data.sha1"));
    return qe::sts::bits_from_bytes(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), 1000000);
  }();
  return bits;
}

}  // namespace qe::check
