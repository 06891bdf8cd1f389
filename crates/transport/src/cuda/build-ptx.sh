#!/bin/sh
# Regenerates src/transport/cuda/kernels.ptx from kernels.cu with Debian's clang-14
# (apt-get install clang-14); no CUDA toolkit. Run after editing kernels.cu
# and commit both: xferbench embeds the PTX and never compiles at build time.
set -eu
cd "$(dirname "$0")"
command -v clang-14 >/dev/null || { echo "build-ptx: needs clang-14 (apt-get install clang-14)" >&2; exit 1; }
clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_70 -nocudainc -nocudalib \
  -Xclang -target-feature -Xclang +ptx63 -O3 -S -o kernels.ptx kernels.cu
