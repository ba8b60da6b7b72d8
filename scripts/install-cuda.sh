#!/usr/bin/env bash
# Installs the pinned CUDA 13.0 toolchain (nvcc, cudart, crt, nvvm, cccl) from
# PyPI into <crate>/.cuda/pip and lays out a CUDA root at <crate>/.cuda/root
# that build.rs finds by itself. Needs only python3 + pip; no GPU, no root.
#
# The pins matter: a newer nvvm emits PTX that the 13.0 ptxas rejects.
# Running it again is cheap: installed wheels and the root are reused.
set -euo pipefail

crate_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cuda_dir="$crate_dir/.cuda"
pip_dir="$cuda_dir/pip"
root_dir="$cuda_dir/root"
pins=(
  nvidia-cuda-nvcc==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-crt==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-cccl==13.0.85
)

# A pin is installed when pip left its dist-info with exactly that version.
missing=()
for pin in "${pins[@]}"; do
  name="${pin%%==*}"
  version="${pin##*==}"
  dist_info="$pip_dir/${name//-/_}-${version}.dist-info"
  [[ -d "$dist_info" ]] || missing+=("$pin")
done

if ((${#missing[@]})); then
  echo "install-cuda: installing ${missing[*]} into $pip_dir"
  python3 -m pip install --disable-pip-version-check --no-input --quiet \
    --upgrade --target "$pip_dir" "${pins[@]}"
else
  echo "install-cuda: pinned wheels already in $pip_dir"
fi

wheel_root="$pip_dir/nvidia/cu13"
[[ -x "$wheel_root/bin/nvcc" ]] || { echo "install-cuda: no nvcc under $wheel_root" >&2; exit 1; }

# nvcc finds its siblings (nvcc.profile, cicc, lib64) relative to its own
# resolved path, so bin/ is copied, not linked; everything else is a link.
rm -rf "$root_dir"
mkdir -p "$root_dir"
cp -a "$wheel_root/bin" "$root_dir/bin"
for dir in include lib nvvm; do
  ln -s "$wheel_root/$dir" "$root_dir/$dir"
done
ln -s lib "$root_dir/lib64"

# The headers nvcc and the host compiler need: the runtime, crt (split out of
# the runtime wheel into its own) and CCCL (nvcc.profile adds include/cccl).
for header in cuda_runtime.h crt/host_config.h cccl/cub/cub.cuh \
  cccl/thrust/version.h cccl/cuda/std/cstdint; do
  [[ -e "$root_dir/include/$header" ]] || {
    echo "install-cuda: header include/$header missing from $root_dir" >&2
    exit 1
  }
done
[[ -e "$root_dir/lib64/libcudart_static.a" ]] || {
  echo "install-cuda: lib64/libcudart_static.a missing from $root_dir" >&2
  exit 1
}

"$root_dir/bin/nvcc" --version
echo "install-cuda: done. build.rs finds this root by itself; to use it elsewhere:"
echo "export CUDA_PATH=$root_dir"
