// Internals of the DFT test, exposed for the unit tests (compared there with a direct
// O(n^2) DFT).
#pragma once

#include <vector>

#include "sts/sts.h"

namespace qe::sts::detail {

// |F_k| for k = 0 .. floor(n/2) - 1, where F = DFT of x_j = 2 bit_j - 1 (length n, any n).
std::vector<double> dft_half_moduli(const Bits& bits);

}  // namespace qe::sts::detail
