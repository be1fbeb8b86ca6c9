# Sourced by the scripts that compile C++ through ccache. ccache's keys include absolute
# paths unless told otherwise, so a fresh clone at another path (every CI run) missed all
# that an earlier clone had compiled. With the base directory set to this checkout, paths
# below it are hashed relative to it, and the compile directory is left out of the hash
# (it only reaches debug information), so identical sources hit wherever they are cloned.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# The compiler launcher settings when ccache is installed (empty arrays without it), spelled
# for cmake (-D) and for cmake-js (--CD).
ccache_cmake_args=()
ccache_cmake_js_args=()
if command -v ccache >/dev/null; then
  ccache_cmake_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  ccache_cmake_js_args=(--CDCMAKE_CXX_COMPILER_LAUNCHER=ccache --CDCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
