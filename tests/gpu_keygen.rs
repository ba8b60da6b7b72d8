//! Keys generated on the GPU against the CPU generator, and the fixed-base
//! kernel against blstrs. Every GPU test prints `skipped: no CUDA device`
//! where there is none. Inputs are fresh random values each run (the seed
//! is printed).
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/gpu.rs"]
mod gpu;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use circuits::{random_scalars, BooleanHeavy, FieldHeavy, ManyInputs, UnusedAux};
use ff::Field;
use groth16_gpu::backend::cuda::{fixed_base_mul, fixed_base_windows, GpuCurve, PointStaging};
use groth16_gpu::device::DeviceGuard;
use groth16_gpu::params::{generate_parameters_for_shape_on_gpu, Trapdoor};
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{generate_parameters_for_shape, Error, ProvingKey};
use group::{
    prime::{PrimeCurve, PrimeCurveAffine},
    Group,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn fresh_rng() -> ChaCha20Rng {
    let seed = rand::random();
    println!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// Runs `test` with device 0's guard, or says it skipped.
fn on_first_device(test: impl FnOnce(&DeviceGuard<'_>)) {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let _memory = gpu::shared_device_memory();
    test(&devices[0].lock());
}

/// The window table of `base` for `bits`-bit windows, as the kernel takes
/// it: entry w · (2^bits − 1) + d − 1 is d · 2^(bits·w) · base.
fn table<G: PrimeCurve>(base: G, bits: u32) -> Vec<G::Affine> {
    let mut window_base = base;
    let mut multiples = Vec::new();
    for _ in 0..fixed_base_windows(bits) {
        let mut multiple = G::identity();
        for _ in 1..(1u32 << bits) {
            multiple += window_base;
            multiples.push(multiple);
        }
        for _ in 0..bits {
            window_base = window_base.double();
        }
    }
    // One inversion for the lot: a 16-bit table is a million points.
    let mut points = vec![G::Affine::identity(); multiples.len()];
    G::batch_normalize(&multiples, &mut points);
    points
}

/// Zero, one, r − 1, a power of two at a window's edge, the largest u64,
/// one value repeated, and random scalars: `n` in all (n >= 9).
fn edge_and_random_scalars(n: usize, rng: &mut ChaCha20Rng) -> Vec<Scalar> {
    let repeated = Scalar::random(&mut *rng);
    let mut scalars = vec![
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(1u64 << 16),
        Scalar::from(u64::MAX),
        repeated,
        repeated,
        repeated,
        Scalar::ZERO,
    ];
    scalars.extend((scalars.len()..n).map(|_| Scalar::random(&mut *rng)));
    scalars
}

fn check_against_blstrs<G>(guard: &DeviceGuard<'_>, rng: &mut ChaCha20Rng, bits: u32, n: usize)
where
    G: PrimeCurve<Scalar = Scalar> + Send + Sync,
    G::Affine: GpuCurve<Curve = G>,
{
    let base = G::random(&mut *rng);
    let points = table(base, bits);
    let scalars = edge_and_random_scalars(n, rng);
    let expected: Vec<G::Affine> = scalars.iter().map(|s| (base * *s).to_affine()).collect();
    // Points straight back, or through page-locked slots: of 512 bytes (a
    // point split across two slots, pieces dealt over four threads) or
    // room for all. One pass, and passes of 7 (an odd last pass, two in
    // flight).
    let mut stagings = [4 << 10, 64 << 20].map(|bytes| PointStaging::new(guard, bytes));
    for staging in [None].into_iter().chain(stagings.iter_mut().map(Some)) {
        let slots = staging.as_ref().map(|s| (s.bytes(), s.is_pinned()));
        let mut staging = staging;
        for batch in [None, Some(7)] {
            let got = fixed_base_mul(
                guard,
                &points,
                bits,
                &scalars,
                batch,
                staging.as_deref_mut(),
            )
            .expect("fixed-base mul");
            assert_eq!(got.len(), n);
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                assert_eq!(
                    g, e,
                    "{bits}-bit windows, batch {batch:?}, staging {slots:?}, scalar {i}"
                );
            }
        }
    }
}

#[test]
fn gpu_fixed_base_matches_blstrs_in_g1_and_g2() {
    on_first_device(|guard| {
        let mut rng = fresh_rng();
        // Widths that divide 255 evenly and not, narrow and the widest;
        // lengths that are not powers of two.
        for (bits, n) in [(1, 9), (5, 1000), (8, 4099), (13, 333), (16, 2049)] {
            check_against_blstrs::<G1Projective>(guard, &mut rng, bits, n);
        }
        for (bits, n) in [(3, 70), (8, 1029), (16, 257)] {
            check_against_blstrs::<G2Projective>(guard, &mut rng, bits, n);
        }
    });
}

#[test]
fn gpu_fixed_base_refuses_bad_tables() {
    on_first_device(|guard| {
        let base = G1Projective::generator();
        let points = table(base, 4);
        let scalars = [Scalar::ONE; 3];
        for bits in [0, 17] {
            let error = fixed_base_mul(guard, &points, bits, &scalars, None, None).unwrap_err();
            assert!(error.to_string().contains("window bits"), "{error}");
        }
        let short = &points[..points.len() - 1];
        let error = fixed_base_mul(guard, short, 4, &scalars, None, None).unwrap_err();
        assert!(error.to_string().contains("table"), "{error}");
        // The device still works after the refusals.
        let got: Vec<G1Affine> = fixed_base_mul(guard, &points, 4, &scalars, None, None).unwrap();
        assert_eq!(got, vec![G1Affine::from(base); 3]);
        let none: Vec<G2Affine> = fixed_base_mul(
            guard,
            &table(G2Projective::generator(), 4),
            4,
            &[],
            None,
            None,
        )
        .unwrap();
        assert!(none.is_empty());
    });
}

/// A public input that no constraint names.
#[derive(Clone)]
struct UnusedInput;

impl Circuit<Scalar> for UnusedInput {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        cs.alloc_input(|| "unused input", || Ok(Scalar::from(7u64)))?;
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
        cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

fn gpu_and_cpu_keys(
    guard: &DeviceGuard<'_>,
    shape: &CircuitShape,
    rng: &mut ChaCha20Rng,
) -> (Result<ProvingKey, Error>, Result<ProvingKey, Error>) {
    let t = Trapdoor::random(rng);
    let gpu = generate_parameters_for_shape_on_gpu(shape, &t, guard);
    let cpu =
        generate_parameters_for_shape(shape, t.g1, t.g2, t.alpha, t.beta, t.gamma, t.delta, t.tau);
    (gpu, cpu)
}

fn key_bytes(key: &ProvingKey) -> Vec<u8> {
    let mut bytes = Vec::new();
    key.write(&mut bytes).expect("serialize a key");
    bytes
}

#[test]
fn gpu_keys_are_byte_identical_to_cpu_keys() {
    on_first_device(|guard| {
        let mut rng = fresh_rng();
        let shapes = [
            (
                "inputs only in C, a C-only aux variable",
                CircuitShape::record(ManyInputs {
                    values: random_scalars(5, &mut rng),
                }),
            ),
            ("an unconstrained input", CircuitShape::record(UnusedInput)),
            (
                "field-heavy, 1000 steps (not a power of two)",
                CircuitShape::record(FieldHeavy {
                    steps: 1000,
                    start: None,
                }),
            ),
            (
                "field-heavy, 5000 steps",
                CircuitShape::record(FieldHeavy {
                    steps: 5000,
                    start: None,
                }),
            ),
            (
                "boolean-heavy",
                CircuitShape::record(BooleanHeavy::random(3000, &mut rng)),
            ),
        ];
        for (what, shape) in shapes {
            let shape = shape.expect("record the shape");
            let (gpu, cpu) = gpu_and_cpu_keys(guard, &shape, &mut rng);
            let (gpu, cpu) = (gpu.expect("GPU key"), cpu.expect("CPU key"));
            assert!(gpu == cpu, "{what}: keys differ");
            assert!(key_bytes(&gpu) == key_bytes(&cpu), "{what}: bytes differ");
            println!("{what}: {} bytes, equal", key_bytes(&gpu).len());
        }
    });
}

#[test]
fn gpu_keygen_refuses_an_unconstrained_aux_variable_like_the_cpu() {
    on_first_device(|guard| {
        let shape = CircuitShape::record(UnusedAux).unwrap();
        let (gpu, cpu) = gpu_and_cpu_keys(guard, &shape, &mut fresh_rng());
        for result in [gpu, cpu] {
            assert!(
                matches!(
                    result,
                    Err(Error::Synthesis(SynthesisError::UnconstrainedVariable))
                ),
                "{result:?}"
            );
        }
    });
}
