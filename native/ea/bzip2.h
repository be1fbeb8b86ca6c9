// bzip2, loaded at run time: the IID track's compression statistic (§5.1) is defined as
// the length of a bzip2 compression. ea/bzip2_size.h computes that length itself and calls
// libbz2 only for text its model declines (and the tests compare the two). Loading libbz2 with dlopen
// instead of linking it keeps the addon free of a library dependency: a prebuilt binary
// loads on any glibc host (libbz2.so.1.0 is part of every Debian/Ubuntu base system, as
// dpkg needs it), and cross-building the arm64 prebuild needs no arm64 libbz2.
#pragma once

#include <string>

namespace qe::ea {

// Throws std::runtime_error naming the package to install when libbz2 cannot be loaded.
// Call once before starting threads; afterwards bzip2_compress is safe from any thread.
void require_bzip2();

// BZ2_bzBuffToBuffCompress(dest, dest_len, source, source_len, block_size_100k, 0, 0):
// returns true and sets *dest_len on success (BZ_OK). require_bzip2() must have succeeded.
bool bzip2_compress(char* dest, unsigned* dest_len, char* source, unsigned source_len, int block_size_100k);

}  // namespace qe::ea
