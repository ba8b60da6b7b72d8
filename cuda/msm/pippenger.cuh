// The per-thread steps of the bucket (Pippenger) MSM and of batch addition,
// as __host__ __device__ functions: the GPU kernels (msm_kernels.cuh) and the
// host reference path (host_reference.cu) run exactly these, so host tests
// check the same arithmetic and bucket logic that the GPU runs.
//
// Layout of one MSM: c-bit signed digits, W = ceil(256 / c) windows,
// B = 2^(c-1) buckets per window (digit magnitudes 1..B). Each (point,
// window) pair with a nonzero digit becomes an entry: key = w B + |d| - 1,
// value = point index, bit 31 set when d < 0. A zero digit gets the sentinel
// key W B, which sorts after every bucket and is never read.
#pragma once

#include "../ec/xyzz.cuh"

namespace groth16_gpu {
namespace msm {

/// Bit 31 of an entry's value: the digit was negative.
constexpr uint32_t kNegative = 0x80000000u;

/// Window geometry for c-bit signed digits of 255-bit scalars.
///
/// With precomputed copies of the bases (copy k holds 2^(c k) P for each
/// base P, `stride` points apart), K consecutive windows share one bucket
/// set: window w adds into set w / K through copy w % K. Then only
/// ceil(W / K) sets are reduced, so c can grow (fewer windows, fewer
/// additions) without the per-window reduction growing with it, and the
/// sums come back 2^(c K) apart.
struct Geometry {
  uint32_t c;        // window bits
  uint32_t windows;  // W = ceil(256 / c): 256 bits leave room for the top carry
  uint32_t buckets;  // B = 2^(c-1) per bucket set
  uint32_t copies;   // K: windows per bucket set (1: no copies)
  uint32_t stride;   // points between copies of the bases (0 without copies)
  G16_HD static Geometry of(uint32_t c) { return {c, (256 + c - 1) / c, 1u << (c - 1), 1, 0}; }
  G16_HD static Geometry with_copies(uint32_t c, uint32_t copies, uint32_t stride) {
    Geometry g = of(c);
    g.copies = copies;
    g.stride = copies > 1 ? stride : 0;
    return g;
  }
  /// Bucket sets, and so window sums in the result.
  G16_HD uint32_t sets() const { return (windows + copies - 1) / copies; }
  /// Bits between consecutive sums of the result.
  G16_HD uint32_t shift() const { return c * copies; }
  G16_HD uint32_t total_buckets() const { return sets() * buckets; }
  G16_HD uint32_t sentinel() const { return total_buckets(); }
};

/// Bits [offset, offset + c) of a canonical scalar; bits past 255 read as 0.
G16_HD uint32_t scalar_bits(const ff::Fr& k, uint32_t offset, uint32_t c) {
  uint32_t limb = offset / 32, shift = offset % 32;
  if (limb >= 8) return 0;
  uint64_t word = k.l[limb];
  if (limb + 1 < 8) word |= static_cast<uint64_t>(k.l[limb + 1]) << 32;
  return static_cast<uint32_t>(word >> shift) & ((1u << c) - 1);
}

/// Writes the entries of one scalar (Montgomery form, as blstrs holds it):
/// key and value of window w at [w * n + slot], the value naming bases[base]
/// in the window's copy (slot and base differ when the scalars are a sparse
/// subset of the bases). Calls count(key) for every nonzero digit, so the
/// caller can histogram the buckets.
///
/// Digit rule: d = bits + carry; d > B becomes d - 2^c with carry 1, so each
/// digit lies in (-B, B] and the top window (bits 240.. for c = 16) absorbs
/// the last carry because the scalar is < 2^255.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable  // the host path's Count is host-only
#endif
template <class Count>
G16_HD void scalar_entries(const ff::Fr& mont, uint32_t slot, uint32_t base, uint32_t n,
                           Geometry g, uint32_t* keys, uint32_t* values, Count& count) {
  // Montgomery -> canonical; any 256-bit input comes out reduced mod r.
  ff::Fr k = mont.from_montgomery();
  uint32_t carry = 0;
  uint32_t set = 0, copy = 0;  // w / K and w % K, kept without a division
  for (uint32_t w = 0; w < g.windows; w++) {
    uint32_t d = scalar_bits(k, w * g.c, g.c) + carry;
    bool negative = d > g.buckets;
    carry = negative ? 1 : 0;
    uint32_t magnitude = negative ? (1u << g.c) - d : d;
    uint32_t key = magnitude == 0 ? g.sentinel() : set * g.buckets + magnitude - 1;
    keys[w * n + slot] = key;
    values[w * n + slot] = (base + copy * g.stride) | (negative ? kNegative : 0);
    if (magnitude != 0) count(key);
    if (++copy == g.copies) {
      copy = 0;
      set++;
    }
  }
}

/// Pieces of a bucket whose sorted entries are [offset, offset + count):
/// the runs left when all entries are cut at every multiple of `block`, the
/// first level's share of one thread (sum_block).
G16_HD uint32_t piece_count(uint32_t offset, uint32_t count, uint32_t block) {
  return count == 0 ? 0 : (offset + count - 1) / block - offset / block + 1;
}

/// Where the piece of `bucket` that starts at sorted entry `start` goes:
/// the bucket's pieces lie in order from piece_offsets[bucket], and every
/// piece but its first starts at a multiple of `block`.
G16_HD uint32_t piece_slot(const uint32_t* entry_offsets, const uint32_t* piece_offsets,
                           uint32_t bucket, uint32_t start, uint32_t block) {
  return piece_offsets[bucket] + start / block - entry_offsets[bucket] / block;
}

/// Points read and partial sums written whole, by one thread.
template <class F>
struct WholePoints {
  const ec::Affine<F>* bases;
  ec::Xyzz<F>* out;

  G16_HD ec::Affine<F> load(uint32_t i) const { return bases[i]; }
  G16_HD void store(uint32_t slot, const ec::Xyzz<F>& sum) const { out[slot] = sum; }
};

/// sum_block with the points read and the partial sums written through
/// `points` (load(i), store(slot, sum)), in field F: whole points, or a
/// thread's half of each where a pair of threads shares them
/// (fp2_pairs.cuh).
template <class F, class Points>
G16_HD void sum_block_through(const Points& points, const uint32_t* keys, const uint32_t* values,
                              const uint32_t* entry_offsets, const uint32_t* piece_offsets,
                              uint32_t start, uint32_t len, uint32_t block) {
  ec::Xyzz<F> acc = ec::Xyzz<F>::identity();
  uint32_t bucket = keys[start], piece_start = start;
  for (uint32_t e = start; e < start + len; e++) {
    uint32_t key = keys[e];
    if (key != bucket) {
      points.store(piece_slot(entry_offsets, piece_offsets, bucket, piece_start, block), acc);
      acc = ec::Xyzz<F>::identity();
      bucket = key;
      piece_start = e;
    }
    uint32_t v = values[e];
    ec::Affine<F> p = points.load(v & ~kNegative);
    acc = acc.add_affine((v & kNegative) ? -p : p);
  }
  points.store(piece_slot(entry_offsets, piece_offsets, bucket, piece_start, block), acc);
}

/// Sums the sorted entries [start, start + len) (one block, which may span
/// buckets), negating where a digit was negative, into one partial sum per
/// bucket piece (piece_slot). Every thread of the first level so adds the
/// same number of points however the digits fall; cut at bucket ends
/// instead, a warp ran as long as its longest task, and with ~32 entries a
/// bucket (2^20 points, c = 16) a third of the lanes idled.
template <class F>
G16_HD void sum_block(const ec::Affine<F>* bases, const uint32_t* keys, const uint32_t* values,
                      const uint32_t* entry_offsets, const uint32_t* piece_offsets,
                      uint32_t start, uint32_t len, uint32_t block, ec::Xyzz<F>* out) {
  sum_block_through<F>(WholePoints<F>{bases, out}, keys, values, entry_offsets, piece_offsets,
                       start, len, block);
}

/// Sum of in[start, start + len), the items read through `in[i]` in field
/// F: whole points from an array, or a thread's half of each where a pair
/// of threads shares them (kernels.cuh's G2HalfItems).
template <class F, class Items>
G16_HD ec::Xyzz<F> sum_range_through(const Items& in, uint32_t start, uint32_t len) {
  ec::Xyzz<F> acc = ec::Xyzz<F>::identity();
  for (uint32_t k = 0; k < len; k++) acc = acc + in[start + k];
  return acc;
}

/// Sum of in[start, start + len).
template <class F>
G16_HD ec::Xyzz<F> sum_range(const ec::Xyzz<F>* in, uint32_t start, uint32_t len) {
  return sum_range_through<F>(in, start, len);
}

/// A task: sum `len` consecutive items from `start`.
struct Task {
  uint32_t start, len;
};

/// Tasks per bucket of `count` items when a task sums at most `per_task`.
G16_HD uint32_t task_count(uint32_t count, uint32_t per_task) {
  return (count + per_task - 1) / per_task;
}

/// Writes bucket b's tasks at tasks[task_offset ...]: its items
/// [offset, offset + count) cut into runs of at most per_task.
G16_HD void bucket_tasks(uint32_t offset, uint32_t count, uint32_t task_offset,
                         uint32_t per_task, Task* tasks) {
  for (uint32_t t = 0; t * per_task < count; t++) {
    uint32_t len = count - t * per_task < per_task ? count - t * per_task : per_task;
    tasks[task_offset + t] = {offset + t * per_task, len};
  }
}

/// The buckets' partial sums as the levels leave them: bucket b's lie at
/// pieces[offsets[b], offsets[b] + counts[b]), none for an empty bucket.
/// Pieces reads them: an array of whole points, or a pair's halves.
template <class F, class Pieces = const ec::Xyzz<F>*>
struct BucketPieces {
  Pieces pieces;
  const uint32_t* counts;
  const uint32_t* offsets;

  /// acc plus bucket b's sum, one addition a piece.
  G16_HD ec::Xyzz<F> add_bucket(ec::Xyzz<F> acc, uint32_t b) const {
    for (uint32_t k = 0; k < counts[b]; k++) acc = acc + pieces[offsets[b] + k];
    return acc;
  }
};

/// Segment j of one window whose buckets start at `first` (bucket first +
/// m - 1 holds magnitude m): Σ m · S_m over m in [jL + 1, (j + 1)L], by
/// running sums from the top (L additions plus one a piece) plus jL times
/// the segment's plain sum.
template <class F, class Pieces>
G16_HD ec::Xyzz<F> window_segment(const BucketPieces<F, Pieces>& buckets, uint32_t first,
                                  uint32_t j, uint32_t len) {
  ec::Xyzz<F> running = ec::Xyzz<F>::identity();
  ec::Xyzz<F> acc = ec::Xyzz<F>::identity();
  for (uint32_t m = (j + 1) * len; m > j * len; m--) {
    running = buckets.add_bucket(running, first + m - 1);
    acc = acc + running;
  }
  return acc + running.mul_small(j * len);
}

/// Selected bases each batch-addition thread sums: every thread gets the
/// same number of set bits whatever their density, so no lane of a warp
/// idles on unset bits.
constexpr uint32_t kSelectedPerThread = 32;

G16_HD uint32_t popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__popcll(x));
#else
  return static_cast<uint32_t>(__builtin_popcountll(x));
#endif
}

G16_HD uint32_t lowest_bit(uint64_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__ffsll(static_cast<long long>(x)) - 1);
#else
  return static_cast<uint32_t>(__builtin_ctzll(x));
#endif
}

/// Bitmap word w with its bits at and past n cleared (bit i of word i / 64
/// selects base i), so a caller's stray high bits select nothing.
G16_HD uint64_t masked_word(const uint64_t* bitmap, uint32_t w, uint32_t n) {
  uint64_t word = bitmap[w];
  uint32_t start = w * 64;
  return n - start >= 64 ? word : word & ((uint64_t(1) << (n - start)) - 1);
}

/// Sum of the selected bases of ranks [first, first + count), a rank being
/// a base's place among the selected ones. `ranks_before[w]` counts the set
/// bits of the words before w (an exclusive scan of their popcounts); the
/// bitmap's bits past the last base must be clear (masked_word).
template <class F>
G16_HD ec::Xyzz<F> sum_selected_ranks(const ec::Affine<F>* bases, const uint64_t* bitmap,
                                      const uint32_t* ranks_before, uint32_t words,
                                      uint32_t first, uint32_t count) {
  ec::Xyzz<F> acc = ec::Xyzz<F>::identity();
  if (count == 0) return acc;
  // The last word whose ranks start at or before `first` holds that rank.
  uint32_t lo = 0, hi = words;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (ranks_before[mid] <= first) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  uint32_t w = lo;
  uint64_t bits = bitmap[w];
  for (uint32_t skip = first - ranks_before[w]; skip > 0; skip--) bits &= bits - 1;
  for (uint32_t k = 0; k < count; k++) {
    while (bits == 0) bits = bitmap[++w];
    uint32_t i = w * 64 + lowest_bit(bits);
    bits &= bits - 1;
    acc = acc.add_affine(bases[i]);
  }
  return acc;
}

/// Items per thread in the row reductions (device_msm.cuh's reduce_rows;
/// host_reference.cu's batch addition reduces its part sums the same way):
/// short groups keep each level's sequential chain short, and the rows are
/// few, so more levels cost less than long chains on idle SMs.
constexpr uint32_t kReduceGroup = 8;

/// The largest window the model may choose. Measured on an H200 with the
/// first level in blocks (`gpu_msm --window-sweep`, scalars on the device,
/// ms at c = 12 / 13 / 16): G1 2^17 5.9 / 4.9 / 5.5, 2^18 7.2 / 7.4 / 7.3,
/// 2^19 10.3 / 9.9 / 9.6, 2^20 - 2 16.7 / 15.5 / 14.7, 2^22 56.3 / 52.9 /
/// 42.4; G2 2^17 13.9 / 12.0 / 14.9, 2^18 20.6 / 18.5 / 19.2, 2^19 32.3 /
/// 29.0 / 28.1, 2^20 - 2 54.3 / 49.4 / 45.4. c = 14, 15, 17 and 18 lost to
/// 16 at every size from 2^18 (more windows, or twice the buckets for the
/// same windows). So 13 up to 2^18 points (a tie for G1 there) and 16
/// above; the model counts one addition per bucket, but a bucket's
/// reduction costs several.
///
/// From kWideWindowsFrom points up to 20 bits: there an entry (a point in
/// a window: sorted, then added) costs ~0.6 ns on an H200 and a bucket's
/// reduction ~2.9 ns, so 20 bits' 13 windows against 16's 16 cut the
/// entries by 19 % for ~20 ms more of buckets a chunk (a 2^27-point h MSM
/// of a Filecoin partition, 1.29 s at 16 bits, runs as two chunks).
constexpr uint64_t kWideWindowsFrom = uint64_t(1) << 24;
inline uint32_t max_window_bits(uint64_t n) {
  if (n <= (uint64_t(1) << 18)) return 13;
  return n < kWideWindowsFrom ? 16 : 20;
}

/// Points from which an MSM over bases with shifted copies goes through
/// them; below it the copies' wide window has more buckets than entries to
/// fill them, and copy 0 (the bases themselves) serves with the size's own
/// window.
constexpr uint64_t kCopiesFrom = uint64_t(1) << 18;

G16_HD bool plan_uses_copies(uint32_t copies, uint64_t n) { return copies > 1 && n >= kCopiesFrom; }

/// Window bits of the shifted copies made for `len` bases when the caller
/// names none.
inline uint32_t copy_window_bits(uint64_t len) { return len >= (uint64_t(1) << 20) ? 20 : 16; }

/// Window bits for n points: minimizes W (n + 2^c), the entries plus about
/// the bucket-reduction work, over 4 <= c <= max_window_bits(n).
inline uint32_t choose_window_bits(uint64_t n) {
  uint32_t best = 4;
  double best_cost = 1e300;
  for (uint32_t c = 4; c <= max_window_bits(n); c++) {
    double cost = static_cast<double>(Geometry::of(c).windows) *
                  (static_cast<double>(n) + static_cast<double>(1u << c));
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  return best;
}

}  // namespace msm
}  // namespace groth16_gpu
