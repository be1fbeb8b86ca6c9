# Sourced by the scripts that compile C++ through ccache. ccache's keys include absolute
# paths unless told otherwise, so a fresh clone at another path (every CI run) missed all
# that an earlier clone had compiled. With the base directory set to this checkout, paths
# below it are hashed relative to it, and the compile directory is left out of the hash
# (it only reaches debug information), so identical sources hit wherever they are cloned.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
