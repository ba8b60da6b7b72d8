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

#endif /* GROTH16_GPU_FFI_TYPES_H */
