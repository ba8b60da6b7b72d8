// G1's instance of fixed_base.cuh (one translation unit per curve keeps
// each nvcc run small).
#include "fixed_base.cuh"
#include "fixed_base_entry.h"

namespace groth16_gpu {
namespace keygen {

void fixed_base_mul_g1(const GpuDevice& device, const uint64_t* table, size_t table_points,
                       uint32_t bits, const uint64_t* scalars, size_t n, uint64_t* out,
                       size_t batch, uint64_t* staging, size_t staging_bytes) {
  fixed_base_mul_on<ff::Fp>(device, table, table_points, bits, scalars, n, out, batch,
                            staging, staging_bytes);
}

}  // namespace keygen
}  // namespace groth16_gpu
