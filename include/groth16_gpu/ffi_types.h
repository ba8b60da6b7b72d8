/*
 * Plain C layouts shared by the Rust crate and the CUDA code.
 *
 * The Rust side (src/ffi_types.rs) is generated from this header by bindgen;
 * tests/gpu_bindgen.rs regenerates it and fails when the two drift apart.
 * Every struct here has the exact memory layout of the blstrs type named in
 * its comment, so slices of blstrs values can be copied to the GPU as bytes.
 */
#ifndef GROTH16_GPU_FFI_TYPES_H
#define GROTH16_GPU_FFI_TYPES_H

#include <stdint.h>

/** 32-bit limbs in an element of the base field Fp (381 bits). */
#define G16_FP_LIMBS 12
/** 32-bit limbs in an element of the scalar field Fr (255 bits). */
#define G16_FR_LIMBS 8

/**
 * An element of Fp, laid out as blstrs::Fp: Montgomery form, least
 * significant limb first (blst's 6 x u64 read as 12 x u32 on little-endian).
 */
typedef struct g16_fp {
  /** The limbs, least significant first. */
  uint32_t limbs[G16_FP_LIMBS];
} g16_fp;

/** An element of `Fp2 = Fp[u] / (u^2 + 1)`, laid out as blstrs::Fp2: c0 + c1 u. */
typedef struct g16_fp2 {
  /** The constant coefficient. */
  g16_fp c0;
  /** The coefficient of u. */
  g16_fp c1;
} g16_fp2;

/** An element of Fr, laid out as blstrs::Scalar: Montgomery form, least significant limb first. */
typedef struct g16_fr {
  /** The limbs, least significant first. */
  uint32_t limbs[G16_FR_LIMBS];
} g16_fr;

/** A G1 point in affine coordinates, laid out as blstrs::G1Affine; the identity is (0, 0). */
typedef struct g16_g1_affine {
  /** The x coordinate. */
  g16_fp x;
  /** The y coordinate. */
  g16_fp y;
} g16_g1_affine;

/** A G2 point in affine coordinates, laid out as blstrs::G2Affine; the identity is (0, 0). */
typedef struct g16_g2_affine {
  /** The x coordinate. */
  g16_fp2 x;
  /** The y coordinate. */
  g16_fp2 y;
} g16_g2_affine;

/** What a C-level GPU entry point reports. */
typedef enum g16_status {
  /** The call succeeded. */
  G16_OK = 0,
  /** A CUDA runtime call failed. */
  G16_ERR_CUDA = 1,
  /** An argument was out of range (a length, an ordinal, a null pointer). */
  G16_ERR_INVALID_ARGUMENT = 2,
  /** The device had too little free memory. */
  G16_ERR_OUT_OF_MEMORY = 3
} g16_status;

/**
 * How one GPU MSM call runs, passed with the call (src/backend/cuda's
 * MsmTuning): every field 0 takes the built-in choice, so a zeroed struct
 * is the default (flags are 0 or 1). Out-of-range values are refused (invalid_argument)
 * before any work. No setting changes a result, only its speed.
 */
typedef struct g16_msm_tuning {
  /** Window bits, 4..=22, shifted copies left aside (0: chosen by the size). */
  uint32_t window_bits;
  /** Sorted entries per first-level thread, 32..=4096 (0: grown from 32). */
  uint32_t first_block;
  /** Partial sums a bucket may hold when the window segments walk it, 1..=1024 (0: 8). */
  uint32_t inline_pieces;
  /** Buckets per window segment, a power of two in 4..=1024 (0: 32). */
  uint32_t segment;
  /** G2's first level: 1 whole points, 2 pairs of threads, 3 pairs at 128 registers (0: 3). */
  uint32_t g2_first_level;
  /** 1: G2's task levels and window reduction stay whole behind a pair first level. */
  uint32_t g2_whole_reduction;
  /** 1: each chunk prints where its device time goes (stderr). */
  uint32_t phase_timing;
  /** Most points one chunk takes (0: as memory and the 2^30-entry bound allow). */
  uint64_t chunk_cap;
  /** First-level threads kept as the blocks grow (0: 2^20). */
  uint64_t first_level_threads;
} g16_msm_tuning;

/** What one GPU MSM call ran with, the defaults filled in, and its device time. */
typedef struct g16_msm_report {
  /** Device time by CUDA events, scalar upload to window sums, in milliseconds. */
  float device_ms;
  /** Window bits c. */
  uint32_t window_bits;
  /** Copies of the bases the call went through (1: the points alone). */
  uint32_t copies;
  /** Chunks the points ran in. */
  uint32_t chunks;
  /** Sorted entries per first-level thread in the first chunk. */
  uint32_t first_block;
  /** Partial sums a bucket may hold when the window segments walk it. */
  uint32_t inline_pieces;
  /** Buckets per window segment. */
  uint32_t segment;
  /** Most task levels a chunk ran. */
  uint32_t task_levels;
  /** G2's first-level layout (1, 2 or 3; 0 for G1). */
  uint32_t g2_first_level;
  /** 1 where the task levels and window reduction ran over thread pairs. */
  uint32_t pair_reduction;
  /** 1 where the chunks printed their phases. */
  uint32_t phase_timing;
  /** Points in a chunk (the last may hold fewer). */
  uint64_t chunk_points;
} g16_msm_report;

#endif /* GROTH16_GPU_FFI_TYPES_H */
