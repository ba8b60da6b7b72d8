//! A proof's MSMs over a key whose points reach the device a chunk at a
//! time: the five queries' sums (`streamed_sums`), each a sum over chunks
//! uploaded one ahead of the one being summed (`chunked_sum`). The device
//! side is the caller's: these take any upload and sum, and are tested on
//! the CPU.

use std::ops::Range;
use std::sync::mpsc;

use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use group::prime::PrimeCurveAffine;
use group::Group;

use crate::device::GpuError;
use crate::groth16::prover::MsmSums;
use crate::params::ProvingKey;
use crate::synthesis::Assignment;
use crate::Error;

/// Σ scalars·bases over one whole query, however the bases get there.
pub(super) type QueryMsm<'a, G> =
    dyn Fn(&[G], &[Scalar]) -> Result<<G as PrimeCurveAffine>::Curve, Error> + 'a;

/// The five MSMs of a proof: the H query's through `h` (Σ h's
/// coefficients·bases, wherever they lie), first, so that the memory h
/// holds is free for the rest; the others each through `g1` or `g2` (Σ
/// scalars·bases, however they get the bases), the a and b queries'
/// scalars gathered by their densities first.
pub(super) fn streamed_sums(
    key: &ProvingKey,
    assignment: &Assignment,
    h: impl FnOnce(&[G1Affine]) -> Result<G1Projective, Error>,
    g1: &QueryMsm<'_, G1Affine>,
    g2: &QueryMsm<'_, G2Affine>,
) -> Result<MsmSums, Error> {
    let h = h(&key.h)?;
    let (input, aux) = (&assignment.input, &assignment.aux);
    let mut a = Vec::with_capacity(key.a.len());
    a.extend_from_slice(input);
    assignment.a_aux_density.par_select_into(aux, &mut a);
    let mut b = Vec::with_capacity(key.b_g1.len());
    assignment.b_input_density.par_select_into(input, &mut b);
    assignment.b_aux_density.par_select_into(aux, &mut b);
    Ok(MsmSums {
        h,
        b_g2: g2(&key.b_g2, &b)?,
        l: g1(&key.l, aux)?,
        a: g1(&key.a, &a)?,
        b_g1: g1(&key.b_g1, &b)?,
    })
}

/// Σ over chunks of `chunk` points: `upload` makes a chunk of bases ready
/// (on a thread of its own, one chunk ahead; given a chunk already summed
/// to refill where one is back, so that at most three are ever made),
/// `sum` adds the share of the scalars at the chunk's range of indices. An
/// error on either side stops both and is returned (the sum's first).
pub(super) fn chunked_sum<B: Sync, C: Send, S: Group>(
    bases: &[B],
    chunk: usize,
    mut upload: impl FnMut(&[B], Option<C>) -> Result<C, Error> + Send,
    mut sum: impl FnMut(&C, Range<usize>) -> Result<S, Error>,
) -> Result<S, Error> {
    let chunk = chunk.max(1);
    std::thread::scope(|scope| {
        // One chunk waits here while the next is uploaded.
        let (send, chunks) = mpsc::sync_channel::<C>(1);
        // Chunks summed, back for the uploader to refill.
        let (give_back, summed_chunks) = mpsc::channel::<C>();
        let uploader = scope.spawn(move || -> Result<(), Error> {
            for part in bases.chunks(chunk) {
                let spare = summed_chunks.try_recv().ok();
                if send.send(upload(part, spare)?).is_err() {
                    break; // the sum stopped on an error
                }
            }
            Ok(())
        });
        let mut total = S::identity();
        let mut summed = Ok(());
        let ranges = (0..bases.len())
            .step_by(chunk)
            .map(|first| first..bases.len().min(first + chunk));
        for (range, resident) in ranges.zip(chunks.iter()) {
            match sum(&resident, range) {
                Ok(value) => total += value,
                Err(error) => {
                    summed = Err(error);
                    break;
                }
            }
            // The uploader may be done; the chunk is then dropped here.
            let _ = give_back.send(resident);
        }
        drop(chunks);
        let uploaded = uploader.join().unwrap_or_else(|_| {
            Err(GpuError::Native("a streamed MSM's upload thread panicked".into()).into())
        });
        summed.and(uploaded).map(|()| total)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::{compute_h, Domain};
    use crate::backend::cpu::{msm, MsmAffine};
    use crate::groth16::prove;
    use crate::groth16::prover::assemble;
    use crate::params::generate_random_parameters;
    use crate::synthesis::synthesize;
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::G1Projective;
    use ff::Field;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    /// Products of neighbours, with an input, zeros, ones and variables
    /// that A and B never use, so both densities leave points out.
    #[derive(Clone)]
    struct Mixed {
        values: Vec<Option<Scalar>>,
    }

    impl Circuit<Scalar> for Mixed {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let missing = || SynthesisError::AssignmentMissing;
            let input = cs.alloc_input(|| "in", || self.values[0].ok_or_else(missing))?;
            let mut vars = vec![input];
            for (i, value) in self.values.iter().enumerate().skip(1) {
                vars.push(cs.alloc(|| format!("x{i}"), || value.ok_or_else(missing))?);
            }
            for i in 0..vars.len() - 1 {
                let product = self.values[i].zip(self.values[i + 1]).map(|(x, y)| x * y);
                let z = cs.alloc(|| format!("z{i}"), || product.ok_or_else(missing))?;
                // z only in C: out of both densities.
                let (x, y) = (vars[i], vars[i + 1]);
                cs.enforce(
                    || format!("product {i}"),
                    |lc| lc + x,
                    |lc| lc + y,
                    |lc| lc + z,
                );
                // Every fifth row also takes A from the constant, every third B.
                let a = if i % 5 == 0 { CS::one() } else { x };
                let b = if i % 3 == 0 { CS::one() } else { y };
                let c = match (i % 5 == 0, i % 3 == 0) {
                    (true, true) => CS::one(),
                    (true, false) => y,
                    (false, true) => x,
                    (false, false) => z,
                };
                cs.enforce(|| format!("row {i}"), |lc| lc + a, |lc| lc + b, |lc| lc + c);
            }
            Ok(())
        }
    }

    /// [`chunked_sum`] on the CPU: chunks copied, summed by the CPU MSM.
    fn cpu_chunked<G: MsmAffine>(
        bases: &[G],
        scalars: &[Scalar],
        chunk: usize,
    ) -> Result<G::Curve, Error>
    where
        G::Curve: Send + Sync,
    {
        if bases.len() != scalars.len() {
            return Err(Error::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            });
        }
        chunked_sum(
            bases,
            chunk,
            |p, _| Ok(p.to_vec()),
            |p: &Vec<G>, range| msm(p, &scalars[range]),
        )
    }

    fn values(n: usize, rng: &mut ChaCha20Rng) -> Vec<Option<Scalar>> {
        (0..n)
            .map(|i| match i % 4 {
                0 => Some(Scalar::ZERO),
                1 => Some(Scalar::ONE),
                _ => Some(Scalar::random(&mut *rng)),
            })
            .collect()
    }

    #[test]
    fn chunks_that_do_not_divide_the_bases_sum_to_the_whole() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let bases: Vec<G1Affine> = (0..1000)
            .map(|_| (G1Projective::generator() * Scalar::random(&mut rng)).into())
            .collect();
        let scalars: Vec<Scalar> = (0..1000).map(|_| Scalar::random(&mut rng)).collect();
        let whole = msm(&bases, &scalars).unwrap();
        for chunk in [1, 7, 333, 999, 1000, 4096] {
            let uploads = std::sync::atomic::AtomicUsize::new(0);
            let made = std::sync::atomic::AtomicUsize::new(0);
            let sum = chunked_sum(
                &bases,
                chunk,
                |part, spare: Option<Vec<G1Affine>>| {
                    uploads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if spare.is_none() {
                        made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    // A spare is refilled in place, as a device buffer is.
                    let mut buffer = spare.unwrap_or_default();
                    buffer.clear();
                    buffer.extend_from_slice(part);
                    Ok(buffer)
                },
                |part: &Vec<G1Affine>, range: Range<usize>| {
                    // Each chunk's scalars are its bases' own.
                    assert_eq!(part[..], bases[range.clone()]);
                    msm(part, &scalars[range])
                },
            )
            .unwrap();
            assert_eq!(sum, whole, "chunks of {chunk}");
            let chunks = 1000usize.div_ceil(chunk);
            assert_eq!(uploads.into_inner(), chunks);
            // One summed, one waiting, one uploading: the rest are refills
            // (fewer are made where sums finish before the next upload).
            let made = made.into_inner();
            assert!((1..=3).contains(&made), "{made} made for chunks of {chunk}");
        }
    }

    #[test]
    fn an_error_on_either_side_stops_the_sum() {
        let bases = vec![G1Affine::generator(); 100];
        let scalars = vec![Scalar::ONE; 100];
        let failing_upload = chunked_sum(
            &bases,
            10,
            |part: &[G1Affine], _| {
                if part.as_ptr() == bases[50..].as_ptr() {
                    return Err(GpuError::Native("upload failed".into()).into());
                }
                Ok(part.to_vec())
            },
            |part: &Vec<G1Affine>, range| msm(part, &scalars[range]),
        );
        assert!(
            matches!(failing_upload, Err(Error::Gpu(GpuError::Native(m))) if m == "upload failed")
        );
        let mut sums = 0;
        let failing_sum = chunked_sum(
            &bases,
            10,
            |part, _| Ok(part.to_vec()),
            |part: &Vec<G1Affine>, range| {
                sums += 1;
                if sums == 3 {
                    return Err(GpuError::Native("sum failed".into()).into());
                }
                msm(part, &scalars[range])
            },
        );
        assert!(matches!(failing_sum, Err(Error::Gpu(GpuError::Native(m))) if m == "sum failed"));
        assert_eq!(sums, 3, "no sum after the failing one");
        let mismatched = cpu_chunked(&bases, &scalars[1..], 10);
        assert!(matches!(mismatched, Err(Error::LengthMismatch { .. })));
    }

    #[test]
    fn streamed_sums_give_the_cpu_provers_proof() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let blank = Mixed {
            values: vec![None; 300],
        };
        let key = generate_random_parameters(blank, &mut rng).unwrap();
        let assignment = synthesize(Mixed {
            values: values(300, &mut rng),
        })
        .unwrap();
        assert!(
            assignment.a_aux_density.total() < assignment.aux.len()
                && assignment.b_aux_density.total() < assignment.aux.len(),
            "the densities leave points out"
        );
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let domain = Domain::new(assignment.num_constraints()).unwrap();
        let h = compute_h(&domain, &assignment.a, &assignment.b, &assignment.c);
        for chunk in [1, 64, 257, 100_000] {
            let sums = streamed_sums(
                &key,
                &assignment,
                |bases| cpu_chunked(bases, &h, chunk),
                &|bases, scalars| cpu_chunked(bases, scalars, chunk),
                &|bases, scalars| cpu_chunked(bases, scalars, chunk),
            )
            .unwrap();
            assert_eq!(
                assemble(&key.vk, &sums, r, s),
                prove(&key, &assignment, r, s).unwrap(),
                "chunks of {chunk}"
            );
        }
    }
}
