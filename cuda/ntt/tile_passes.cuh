// Radix-2 NTT stages in passes over shared-memory tiles: a pass loads a
// tile of 2^10 values (the 2^R values each of its R stages combines, for
// 2^(10 - R) neighbouring columns), runs those R stages in shared memory up
// to three at a time (eight values a thread in registers, 128 threads a
// tile), and stores the tile. Up to eight stages a pass, so 2^24 takes three
// passes over memory where radix-8 passes in registers took eight.
//
// Decimation in time (DIT) takes bit-reversed input to natural output;
// decimation in frequency (DIF) natural to bit-reversed. Chaining DIF
// inverse -> DIT forward needs no bit reversal in between, which is what the
// H polynomial does. The first pass can multiply its input by powers and the
// last its output, at the natural or the bit-reversed index, so scalings
// cost no pass of their own.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "../ff/bls12_381.cuh"

namespace groth16_gpu {
namespace ntt {

using ff::Fr;

/// base^i for every i < n, from two small tables: scale · base^i =
/// lo[i mod 2^lo_bits] · hi[i >> lo_bits], where lo[j] = scale · base^j and
/// hi[k] = base^(k 2^lo_bits). A table of n powers then costs one product
/// per value instead of an exponentiation per value.
struct PowerTables {
  const Fr* lo = nullptr;
  const Fr* hi = nullptr;
  int lo_bits = 0;

  __device__ Fr at(size_t i) const {
    return lo[i & ((size_t{1} << lo_bits) - 1)] * hi[i >> lo_bits];
  }
};

/// Whether, and at which index, a pass multiplies a value by a power.
enum class PowerIndex : int { kNone, kNatural, kReversed };

struct Scaling {
  PowerTables tables;
  PowerIndex index = PowerIndex::kNone;

  /// v · tables.at(address or its bit reversal over log_n bits).
  __device__ Fr apply(Fr v, size_t address, int log_n) const {
    if (index == PowerIndex::kNone) return v;
    size_t i = index == PowerIndex::kNatural
                   ? address
                   : __brevll(static_cast<unsigned long long>(address)) >> (64 - log_n);
    return v * tables.at(i);
  }
};

enum class Order { kDit, kDif };

constexpr int kTileLog = 10;
constexpr int kMaxPassStages = 8;
constexpr int kPassThreads = 128;
/// Stages a thread runs in registers between two trips through the tile:
/// three (eight values, 128 threads for a tile of 1024) measured 53.3 ms
/// for the 2^24 H polynomial against 54.4 with two (256 threads).
constexpr int kMaxRound = 3;

/// One pass: stages s .. s + stages - 1 of a transform of 2^log_n values
/// (stage t combines values 2^t apart), over tiles of 2^tile_log values.
struct PassShape {
  int log_n;
  int s;
  int stages;
  int tile_log;
};

/// Where a tile's values live. Shared slot e = m 2^col_log + c holds value m
/// (< 2^stages) of the tile's column c; column g of the transform is the
/// values hi 2^(s + stages) + m 2^s + j with g = hi 2^s + j.
struct TileMap {
  int s, stages, col_log;
  size_t block;

  __device__ size_t column_j(uint32_t c) const {
    return ((block << col_log) + c) & ((size_t{1} << s) - 1);
  }

  __device__ size_t address_of(uint32_t e) const {
    uint32_t m = e >> col_log;
    size_t g = (block << col_log) + (e & ((1u << col_log) - 1));
    size_t hi = g >> s;
    return (hi << (s + stages)) | (size_t{m} << s) | (g & ((size_t{1} << s) - 1));
  }

  /// The x-th value a block moves, chosen so that neighbouring threads touch
  /// neighbouring addresses: in slot order when a tile's columns are
  /// neighbours (2^col_log <= 2^s), in address order when the tile is one
  /// contiguous block (its columns then span whole groups of 2^(s + stages)).
  __device__ void locate(uint32_t x, uint32_t& e, size_t& address) const {
    if (col_log > s) {
      address = (block << (col_log + stages)) + x;
      uint32_t m = (x >> s) & ((1u << stages) - 1);
      uint32_t c = ((x >> (s + stages)) << s) | (x & ((1u << s) - 1));
      e = (m << col_log) | c;
    } else {
      e = x;
      address = address_of(e);
    }
  }
};

/// The tile in shared memory, one plane per 32-bit word of a value, so a
/// warp reading neighbouring slots reads 32 banks.
struct Tile {
  uint32_t (*words)[1 << kTileLog];

  __device__ Fr get(uint32_t e) const {
    Fr v;
#pragma unroll
    for (int w = 0; w < Fr::N; w++) v.l[w] = words[w][e];
    return v;
  }
  __device__ void put(uint32_t e, const Fr& v) const {
#pragma unroll
    for (int w = 0; w < Fr::N; w++) words[w][e] = v.l[w];
  }
};

__device__ inline Fr load_value(const Fr* values, size_t address) {
  const uint4* p = reinterpret_cast<const uint4*>(values + address);
  uint4 a = p[0], b = p[1];
  Fr v;
  v.l[0] = a.x, v.l[1] = a.y, v.l[2] = a.z, v.l[3] = a.w;
  v.l[4] = b.x, v.l[5] = b.y, v.l[6] = b.z, v.l[7] = b.w;
  return v;
}

__device__ inline void store_value(Fr* values, size_t address, const Fr& v) {
  uint4* p = reinterpret_cast<uint4*>(values + address);
  p[0] = make_uint4(v.l[0], v.l[1], v.l[2], v.l[3]);
  p[1] = make_uint4(v.l[4], v.l[5], v.l[6], v.l[7]);
}

/// Local stages q0 .. q0 + kRound - 1 of a pass on the tile: each thread
/// takes groups of 2^kRound values 2^q0 apart within a column and runs the
/// butterflies in registers, in the order of the radix-2 stages they replace
/// (rising for DIT, falling for DIF).
template <Order kOrder, int kRound>
__device__ void tile_round(const Tile& tile, const TileMap& map, int q0, int log_n,
                           const Fr* twiddles) {
  constexpr int kValues = 1 << kRound;
  const uint32_t tile_values = 1u << (map.col_log + map.stages);
  for (uint32_t k = threadIdx.x; k < (tile_values >> kRound); k += blockDim.x) {
    uint32_t c = k & ((1u << map.col_log) - 1);
    uint32_t group = k >> map.col_log;
    uint32_t m_base = ((group >> q0) << (q0 + kRound)) | (group & ((1u << q0) - 1));
    size_t j = map.column_j(c);
    Fr x[kValues];
#pragma unroll
    for (int u = 0; u < kValues; u++) x[u] = tile.get(((m_base + (u << q0)) << map.col_log) | c);
#pragma unroll
    for (int step = 0; step < kRound; step++) {
      int r = kOrder == Order::kDit ? step : kRound - 1 - step;
      int q = q0 + r;
      int t = map.s + q;
#pragma unroll
      for (int u = 0; u < kValues; u++) {
        if (u & (1 << r)) continue;
        // The butterfly's position within its half, 2^t values long.
        uint32_t m = m_base + (u << q0);
        size_t position = (size_t{m & ((1u << q) - 1)} << map.s) | j;
        Fr w = load_value(twiddles, position << (log_n - t - 1));
        Fr a = x[u], b = x[u | (1 << r)];
        if (kOrder == Order::kDit) {
          Fr v = b * w;
          x[u] = a + v;
          x[u | (1 << r)] = a - v;
        } else {
          x[u] = a + b;
          x[u | (1 << r)] = (a - b) * w;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kValues; u++) tile.put(((m_base + (u << q0)) << map.col_log) | c, x[u]);
  }
}

template <Order kOrder>
__global__ void __launch_bounds__(kPassThreads)
    tile_pass_kernel(Fr* values, PassShape shape, const Fr* twiddles, Scaling pre, Scaling post) {
  __shared__ uint32_t words[Fr::N][1 << kTileLog];
  const Tile tile{words};
  const TileMap map{shape.s, shape.stages, shape.tile_log - shape.stages, blockIdx.x};
  const uint32_t tile_values = 1u << shape.tile_log;
  for (uint32_t x = threadIdx.x; x < tile_values; x += blockDim.x) {
    uint32_t e;
    size_t address;
    map.locate(x, e, address);
    tile.put(e, pre.apply(load_value(values, address), address, shape.log_n));
  }
  __syncthreads();
  // Rounds of up to kMaxRound stages, in the stages' order: rising from
  // the bottom for DIT, falling from the top for DIF.
  for (int done = 0; done < shape.stages;) {
    int round = min(kMaxRound, shape.stages - done);
    int q0 = kOrder == Order::kDit ? done : shape.stages - done - round;
    if (kMaxRound >= 3 && round == 3) {
      tile_round<kOrder, 3>(tile, map, q0, shape.log_n, twiddles);
    } else if (round == 2) {
      tile_round<kOrder, 2>(tile, map, q0, shape.log_n, twiddles);
    } else {
      tile_round<kOrder, 1>(tile, map, q0, shape.log_n, twiddles);
    }
    __syncthreads();
    done += round;
  }
  for (uint32_t x = threadIdx.x; x < tile_values; x += blockDim.x) {
    uint32_t e;
    size_t address;
    map.locate(x, e, address);
    store_value(values, address, post.apply(tile.get(e), address, shape.log_n));
  }
}

/// The passes of a transform of 2^log_n values (log_n >= 1), in the order
/// they run: stages split as evenly as possible into passes of at most
/// kMaxPassStages, rising for DIT, falling for DIF.
inline std::vector<PassShape> plan_passes(int log_n, Order order) {
  int count = (log_n + kMaxPassStages - 1) / kMaxPassStages;
  int tile_log = log_n < kTileLog ? log_n : kTileLog;
  std::vector<PassShape> passes;
  int s = order == Order::kDit ? 0 : log_n;
  for (int i = 0; i < count; i++) {
    int stages = log_n / count + (i < log_n % count ? 1 : 0);
    if (order == Order::kDit) {
      passes.push_back({log_n, s, stages, tile_log});
      s += stages;
    } else {
      s -= stages;
      passes.push_back({log_n, s, stages, tile_log});
    }
  }
  return passes;
}

}  // namespace ntt
}  // namespace groth16_gpu
