// Fixed-base scalar multiplication on the GPU, for generating proving keys:
// out[i] = scalars[i] · base for one base, through window tables the host
// builds (table[w · (2^bits - 1) + d - 1] = d · 2^(bits w) · base, affine).
// Each result is one mixed addition a window, then a batch normalization to
// affine on the device; results come back in blst's affine layout, the
// identity as all zeros.
#pragma once

#include <cstddef>
#include <cstdint>

#include "groth16_gpu/device.h"

namespace groth16_gpu {

/// Windows of `bits` bits that cover a 255-bit scalar.
size_t fixed_base_windows(uint32_t bits);

/// out[i] = scalars[i] · base for i < n. `table` holds
/// fixed_base_windows(bits) · (2^bits - 1) affine points (12 words each for
/// G1, 24 for G2); `scalars` are n blstrs Scalars (4 words, Montgomery);
/// `out` has room for n affine points. `batch` caps the scalars per device
/// pass (0: chosen by free memory). `staging` (null for none) is
/// `staging_bytes` of page-locked host memory the points come back through
/// (else straight into `out`, through the driver's bounce buffers); it must
/// not be in use elsewhere during the call. Bits outside 1..=16 or a short
/// table throw std::invalid_argument; too little device memory throws
/// (nothing stays allocated).
void fixed_base_mul(const GpuDevice& device, bool g2, const uint64_t* table,
                    size_t table_points, uint32_t bits, const uint64_t* scalars,
                    size_t n, uint64_t* out, size_t batch, uint64_t* staging,
                    size_t staging_bytes);

}  // namespace groth16_gpu
