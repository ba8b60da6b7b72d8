// The bridge's fixed-base entry (include/groth16_gpu/fixed_base.h):
// dispatch to the curve's code.
#include "fixed_base_entry.h"

namespace groth16_gpu {

size_t fixed_base_windows(uint32_t bits) {
  // Scalars are below r < 2^255.
  return bits == 0 ? 0 : (255 + bits - 1) / bits;
}

void fixed_base_mul(const GpuDevice& device, bool g2, const uint64_t* table,
                    size_t table_points, uint32_t bits, const uint64_t* scalars, size_t n,
                    uint64_t* out, size_t batch, uint64_t* staging, size_t staging_bytes) {
  if (g2) {
    keygen::fixed_base_mul_g2(device, table, table_points, bits, scalars, n, out, batch, staging,
                               staging_bytes);
  } else {
    keygen::fixed_base_mul_g1(device, table, table_points, bits, scalars, n, out, batch, staging,
                               staging_bytes);
  }
}

}  // namespace groth16_gpu
