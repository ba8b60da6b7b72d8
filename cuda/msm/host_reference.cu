// The MSM and batch addition on the CPU alone, step by step as the GPU runs
// them (cuda/msm/msm_device.cuh) and with the same per-thread functions
// (pippenger.cuh): the reference that host tests compare with blstrs. Slow;
// for small inputs.
#include <algorithm>
#include <numeric>
#include <vector>

#include "../ff/fp2_pairs.cuh"
#include "groth16_gpu/msm.h"
#include "layout.cuh"
#include "pippenger.cuh"
#include "shifted_copies.cuh"

namespace groth16_gpu {
namespace {

using msm::Geometry;
using msm::Task;

/// Sorted entries per block at the first level, items per task after it:
/// the GPU's steps with 4 where it has 32, so small tests cross blocks.
constexpr uint32_t kPerTask = 4;
/// Partial sums a bucket may hold when the window segments walk it: the
/// GPU's rule with 2 where it has 8, so small tests run both paths.
constexpr uint32_t kInlinePieces = 2;
/// Buckets per window segment in the reduction (a divisor of B, capped).
constexpr uint32_t kSegment = 8;

struct HostCount {
  std::vector<uint32_t>* counts;
  void operator()(uint32_t key) { (*counts)[key]++; }
};

std::vector<uint32_t> exclusive_scan(const std::vector<uint32_t>& v) {
  std::vector<uint32_t> out(v.size());
  uint32_t acc = 0;
  for (size_t i = 0; i < v.size(); i++) {
    out[i] = acc;
    acc += v[i];
  }
  return out;
}

/// The bases and their `copies` shifted copies for `bits`-bit windows,
/// made as the device makes them: runs of kShiftRun through shift_run.
template <class F>
std::vector<ec::Affine<F>> shifted_copies(const ec::Affine<F>* bases, size_t n, uint32_t bits,
                                          uint32_t copies) {
  std::vector<ec::Affine<F>> all(bases, bases + n);
  all.resize(n * copies);
  std::vector<ec::Xyzz<F>> scratch(msm::kShiftRun);
  std::vector<F> prefix(msm::kShiftRun);
  for (uint32_t k = 1; k < copies; k++) {
    for (size_t start = 0; start < n; start += msm::kShiftRun) {
      uint32_t run = static_cast<uint32_t>(std::min<size_t>(msm::kShiftRun, n - start));
      msm::shift_run(all.data() + (k - 1) * n + start, all.data() + k * n + start,
                     scratch.data(), prefix.data(), run, bits);
    }
  }
  return all;
}

template <class F>
uint32_t host_msm(const uint64_t* base_words, const uint64_t* scalar_words, size_t n,
                  uint32_t c, uint32_t copy_bits, uint32_t copy_count, uint64_t* out,
                  size_t out_words) {
  using Xyzz = ec::Xyzz<F>;
  const auto* bases = reinterpret_cast<const ec::Affine<F>*>(base_words);
  const auto* scalars = reinterpret_cast<const ff::Fr*>(scalar_words);
  std::vector<ec::Affine<F>> copied;
  Geometry g{};
  if (copy_bits > 0) {
    uint32_t copies = checked_copy_count(n, copy_bits, copy_count);  // checks the bits
    copied = shifted_copies(bases, n, copy_bits, copies);
    bases = copied.data();
    g = Geometry::with_copies(copy_bits, copies, static_cast<uint32_t>(n));
  } else {
    if (c == 0) c = msm::choose_window_bits(n);
    if (c > 16) throw std::invalid_argument("window bits above 16");
    g = Geometry::of(c);
  }
  uint32_t nb = g.total_buckets();
  uint32_t n32 = static_cast<uint32_t>(n);

  // Entries and their bucket histogram.
  size_t m = n * g.windows;
  std::vector<uint32_t> keys(m), values(m), counts(nb + 1, 0);
  HostCount count{&counts};
  for (uint32_t i = 0; i < n32; i++) {
    msm::scalar_entries(scalars[i], i, i, n32, g, keys.data(), values.data(), count);
  }
  // Sort by key (the GPU's radix sort is stable too).
  std::vector<uint32_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<uint32_t> sorted_keys(m), sorted(m);
  for (size_t k = 0; k < m; k++) {
    sorted_keys[k] = keys[order[k]];
    sorted[k] = values[order[k]];
  }
  counts.resize(nb);
  std::vector<uint32_t> offsets = exclusive_scan(counts);

  // First level: blocks of kPerTask sorted entries, one partial sum per
  // bucket piece (the sentinel's entries, sorted last, left out).
  uint32_t entries = offsets[nb - 1] + counts[nb - 1];
  std::vector<uint32_t> pcounts(nb);
  for (uint32_t b = 0; b < nb; b++) pcounts[b] = msm::piece_count(offsets[b], counts[b], kPerTask);
  std::vector<uint32_t> poffsets = exclusive_scan(pcounts);
  std::vector<Xyzz> parts(poffsets[nb - 1] + pcounts[nb - 1]);
  for (uint32_t start = 0; start < entries; start += kPerTask) {
    msm::sum_block(bases, sorted_keys.data(), sorted.data(), offsets.data(), poffsets.data(),
                   start, std::min(kPerTask, entries - start), kPerTask, parts.data());
  }
  counts.swap(pcounts);
  offsets.swap(poffsets);

  // Levels: cut each bucket's partial sums into tasks, sum each task, while
  // some bucket holds more than kInlinePieces.
  uint32_t most = *std::max_element(counts.begin(), counts.end());
  while (most > kInlinePieces) {
    std::vector<uint32_t> tcounts(nb);
    for (uint32_t b = 0; b < nb; b++) tcounts[b] = msm::task_count(counts[b], kPerTask);
    std::vector<uint32_t> toffsets = exclusive_scan(tcounts);
    std::vector<Task> tasks(toffsets[nb - 1] + tcounts[nb - 1]);
    for (uint32_t b = 0; b < nb; b++) {
      msm::bucket_tasks(offsets[b], counts[b], toffsets[b], kPerTask, tasks.data());
    }
    std::vector<Xyzz> next(tasks.size());
    for (size_t t = 0; t < tasks.size(); t++) {
      next[t] = msm::sum_range(parts.data(), tasks[t].start, tasks[t].len);
    }
    parts.swap(next);
    counts.swap(tcounts);
    offsets.swap(toffsets);
    most = msm::task_count(most, kPerTask);
  }
  msm::BucketPieces<F> buckets{parts.data(), counts.data(), offsets.data()};

  // Window reduction: segments, then each set's segments summed.
  uint32_t seg_len = std::min(g.buckets, kSegment);
  uint32_t segs = g.buckets / seg_len;
  std::vector<Xyzz> windows(g.sets());
  for (uint32_t w = 0; w < g.sets(); w++) {
    std::vector<Xyzz> seg(segs);
    for (uint32_t j = 0; j < segs; j++) {
      seg[j] = msm::window_segment(buckets, w * g.buckets, j, seg_len);
    }
    windows[w] = msm::sum_range(seg.data(), 0, segs);
  }
  msm::write_windows(windows.data(), g.sets(), out, out_words);
  return g.shift();
}

template <class F>
void host_batch(const uint64_t* base_words, const uint64_t* bitmap, size_t n,
                uint64_t* out, size_t out_words) {
  const auto* bases = reinterpret_cast<const ec::Affine<F>*>(base_words);
  // The device's steps: masked words, their popcounts scanned into ranks,
  // then runs of kSelectedPerThread selected bases in rank order.
  uint32_t words = static_cast<uint32_t>((n + 63) / 64);
  std::vector<uint64_t> masked(words);
  std::vector<uint32_t> ranks_before(words);
  uint32_t selected = 0;
  for (uint32_t w = 0; w < words; w++) {
    masked[w] = msm::masked_word(bitmap, w, static_cast<uint32_t>(n));
    ranks_before[w] = selected;
    selected += msm::popcount64(masked[w]);
  }
  std::vector<ec::Xyzz<F>> parts;
  for (uint32_t first = 0; first < selected; first += msm::kSelectedPerThread) {
    uint32_t count = std::min(msm::kSelectedPerThread, selected - first);
    parts.push_back(msm::sum_selected_ranks(bases, masked.data(), ranks_before.data(), words,
                                            first, count));
  }
  // The device's reduce_rows: groups of kReduceGroup part sums, each summed
  // in order, level after level until one sum is left.
  while (parts.size() > 1) {
    std::vector<ec::Xyzz<F>> next;
    for (size_t start = 0; start < parts.size(); start += msm::kReduceGroup) {
      size_t len = std::min<size_t>(msm::kReduceGroup, parts.size() - start);
      next.push_back(msm::sum_range(parts.data(), static_cast<uint32_t>(start),
                                    static_cast<uint32_t>(len)));
    }
    parts.swap(next);
  }
  ec::Xyzz<F> total = parts.empty() ? ec::Xyzz<F>::identity() : parts[0];
  msm::write_windows(&total, 1, out, out_words);
}

}  // namespace

uint32_t host_msm_windows(bool g2, const uint64_t* bases, const uint64_t* scalars,
                          size_t n, uint32_t window_bits, uint32_t copy_bits,
                          uint32_t copy_count, uint64_t* out, size_t out_words) {
  if (n >= (1u << 31)) throw std::invalid_argument("MSM of 2^31 or more points");
  return g2 ? host_msm<ff::Fp2>(bases, scalars, n, window_bits, copy_bits, copy_count, out,
                                out_words)
            : host_msm<ff::Fp>(bases, scalars, n, window_bits, copy_bits, copy_count, out,
                               out_words);
}

void host_batch_add(bool g2, const uint64_t* bases, const uint64_t* bitmap, size_t n,
                    uint64_t* out, size_t out_words) {
  if (n >= (1u << 31)) throw std::invalid_argument("batch of 2^31 or more points");
  if (g2) {
    host_batch<ff::Fp2>(bases, bitmap, n, out, out_words);
  } else {
    host_batch<ff::Fp>(bases, bitmap, n, out, out_words);
  }
}

namespace {

/// A field value from its blst words (the layouts agree: layout.cuh).
template <class T>
T from_words(const uint64_t* w) {
  T x;
  std::memcpy(&x, w, sizeof(x));
  return x;
}

template <class T>
void to_words(const T& x, uint64_t* out) {
  std::memcpy(out, &x, sizeof(x));
}

}  // namespace

void host_field_op(uint32_t op, const uint64_t* a, const uint64_t* b, uint64_t* out) {
  using ff::Fp;
  using ff::Fp2;
  using ff::Fr;
  switch (op) {
    case 0: return to_words(from_words<Fp>(a) * from_words<Fp>(b), out);
    case 1: return to_words(from_words<Fp>(a) + from_words<Fp>(b), out);
    case 2: return to_words(from_words<Fp>(a) - from_words<Fp>(b), out);
    case 3: return to_words(from_words<Fp2>(a) * from_words<Fp2>(b), out);
    case 4: return to_words(from_words<Fp2>(a).sqr(), out);
    case 5: return to_words(from_words<Fr>(a).from_montgomery(), out);
    case 6: return to_words(from_words<Fr>(a) * from_words<Fr>(b), out);
    case 7: return to_words(from_words<Fp>(a).sqr(), out);
    case 8: return to_words(from_words<Fr>(a).sqr(), out);
    case 9: return to_words(from_words<Fp>(a).inverse(), out);
    case 10: return to_words(from_words<Fp2>(a).inverse(), out);
    case 11: return to_words(ff::pair_mul_both(from_words<Fp2>(a), from_words<Fp2>(b)), out);
    default: throw std::invalid_argument("unknown field op");
  }
}

}  // namespace groth16_gpu
