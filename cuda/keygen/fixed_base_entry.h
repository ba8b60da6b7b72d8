// The per-curve fixed-base entry points that fixed_base.cu dispatches to.
#pragma once

#include "groth16_gpu/fixed_base.h"

namespace groth16_gpu {
namespace keygen {

void fixed_base_mul_g1(const GpuDevice& device, const uint64_t* table, size_t table_points,
                       uint32_t bits, const uint64_t* scalars, size_t n, uint64_t* out,
                       size_t batch, uint64_t* staging, size_t staging_bytes);
void fixed_base_mul_g2(const GpuDevice& device, const uint64_t* table, size_t table_points,
                       uint32_t bits, const uint64_t* scalars, size_t n, uint64_t* out,
                       size_t batch, uint64_t* staging, size_t staging_bytes);

}  // namespace keygen
}  // namespace groth16_gpu
