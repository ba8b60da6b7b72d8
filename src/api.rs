//! Entry points shaped like bellperson's, so Filecoin code can switch with
//! small changes. They run on the process's default prover pool
//! ([`ProverPool::global`]): with feature `cuda` on every GPU this process
//! sees, the key kept resident there for the next call
//! (`groth16::gpu::keep_keys_resident`), else on the CPU; the proofs are
//! the same bytes either way. Provers that keep a key on a device across
//! calls use `groth16::gpu::GpuProvingKey` directly.

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;
use std::sync::Arc;

use crate::error::catch_circuit_panic;
use crate::groth16::shape_cache::{self, ShapeId};
use crate::groth16::{check_batch_lengths, Priority, Proof};
use crate::params::ProvingKey;
use crate::pool::{PoolError, ProverPool};
use crate::synthesis::{batch_witnesses, synthesize, Assignment, CircuitShape, WitnessAssignment};
use crate::Error;

/// Synthesizes `circuit` and proves it with the given `r` and `s`.
///
/// Like [`create_proof_batch`], it records the circuit's shape as it
/// synthesizes it and keeps that for later calls with the same circuit
/// type and key, which then compute only the witness; a circuit whose
/// witness breaks a constraint is [`Error::Unsatisfied`], not a proof.
pub fn create_proof<C: Circuit<Scalar>>(
    circuit: C,
    key: &ProvingKey,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, Error> {
    prove_one(circuit, key, r, s, Priority::Normal)
}

/// [`create_proof`] ahead of other work for a device (bellperson's name):
/// for a proof with a deadline, such as WinningPoSt. It waits ahead of
/// every other bellperson-shaped call for a GPU, and a batch holding one
/// ([`create_proof_batch`]) hands it over once its proof in flight is
/// done. On the CPU it is `create_proof`.
pub fn create_proof_in_priority<C: Circuit<Scalar>>(
    circuit: C,
    key: &ProvingKey,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, Error> {
    prove_one(circuit, key, r, s, Priority::Urgent)
}

fn prove_one<C: Circuit<Scalar>>(
    circuit: C,
    key: &ProvingKey,
    r: Scalar,
    s: Scalar,
    priority: Priority,
) -> Result<Proof, Error> {
    let id = ShapeId::of::<C>(key);
    let (shape, witness, recorded) = match shape_cache::cached(&id) {
        Some(shape) => {
            let witness = shape.witness(circuit)?;
            (shape, witness, false)
        }
        None => {
            let (shape, witness) = CircuitShape::record_with_witness(circuit)?;
            (Arc::new(shape), witness, true)
        }
    };
    let proofs = prove_witnesses(key, &shape, vec![witness], &[r], &[s], priority);
    settle_kept_shape(id, shape, recorded, &proofs);
    Ok(proofs?.pop().expect("one proof for one witness"))
}

/// [`create_proof`] with `r` then `s` drawn from `rng`.
pub fn create_random_proof<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    key: &ProvingKey,
    rng: &mut R,
) -> Result<Proof, Error> {
    let (r, s) = random_r_s(rng);
    create_proof(circuit, key, r, s)
}

/// [`create_proof_in_priority`] with `r` then `s` drawn from `rng`.
pub fn create_random_proof_in_priority<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    key: &ProvingKey,
    rng: &mut R,
) -> Result<Proof, Error> {
    let (r, s) = random_r_s(rng);
    create_proof_in_priority(circuit, key, r, s)
}

fn random_r_s<R: RngCore>(rng: &mut R) -> (Scalar, Scalar) {
    let r = Scalar::random(&mut *rng);
    (r, Scalar::random(&mut *rng))
}

/// Synthesizes the circuits in parallel and proves each with its `r` and `s`.
///
/// Circuits proved with one key share one shape: the first is recorded and
/// the rest compute only their witnesses ([`synthesize_batch`]), so a
/// circuit that does not fit the first one's constraints is an error rather
/// than an invalid proof. The recorded shape is kept for later batches of
/// the same circuit type and key (see [`set_shape_cache_capacity`]), which
/// then compute only witnesses. On the GPUs the batch spreads over every
/// free device, each proof's A, B, C evaluated into the upload buffer
/// while the previous proof runs; a device that fails leaves its proofs to
/// the others, and the CPU proves what no device could.
///
/// [`synthesize_batch`]: crate::synthesis::synthesize_batch
/// [`set_shape_cache_capacity`]: crate::groth16::set_shape_cache_capacity
pub fn create_proof_batch<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    key: &ProvingKey,
    r_s: Vec<Scalar>,
    s_s: Vec<Scalar>,
) -> Result<Vec<Proof>, Error> {
    prove_many(circuits, key, r_s, s_s, Priority::Normal)
}

/// [`create_proof_batch`] ahead of other work for a device, as
/// [`create_proof_in_priority`] (bellperson's name; Filecoin proves
/// WinningPoSt through it). A batch in priority does not hand its device
/// over to another.
pub fn create_proof_batch_in_priority<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    key: &ProvingKey,
    r_s: Vec<Scalar>,
    s_s: Vec<Scalar>,
) -> Result<Vec<Proof>, Error> {
    prove_many(circuits, key, r_s, s_s, Priority::Urgent)
}

fn prove_many<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    key: &ProvingKey,
    r_s: Vec<Scalar>,
    s_s: Vec<Scalar>,
    priority: Priority,
) -> Result<Vec<Proof>, Error> {
    check_batch_lengths(circuits.len(), r_s.len(), s_s.len())?;
    if circuits.is_empty() {
        return Ok(Vec::new());
    }
    let id = ShapeId::of::<C>(key);
    let started = std::time::Instant::now();
    let (shape, witnesses, recorded) = match shape_cache::cached(&id) {
        Some(shape) => {
            let witnesses = circuits
                .into_par_iter()
                .map(|circuit| shape.witness(circuit))
                .collect::<Result<Vec<_>, Error>>()?;
            (shape, witnesses, false)
        }
        None => {
            let (shape, witnesses) = batch_witnesses(circuits)?;
            (Arc::new(shape), witnesses, true)
        }
    };
    log::debug!(
        "create_proof_batch: {} witnesses in {:.3} s",
        witnesses.len(),
        started.elapsed().as_secs_f64()
    );
    let proofs = prove_witnesses(key, &shape, witnesses, &r_s, &s_s, priority);
    log::debug!(
        "create_proof_batch: proved {:.3} s after the start",
        started.elapsed().as_secs_f64()
    );
    settle_kept_shape(id, shape, recorded, &proofs);
    proofs
}

/// After proving from `shape`: keeps a shape just recorded once it has
/// proved with the key (a batch that fails, say with the key of another
/// circuit, leaves nothing behind), and drops a kept shape that a circuit
/// did not fit, so that the next call records anew.
fn settle_kept_shape(
    id: ShapeId,
    shape: Arc<CircuitShape>,
    recorded: bool,
    proofs: &Result<Vec<Proof>, Error>,
) {
    match proofs {
        Ok(_) if recorded => shape_cache::remember(id, shape),
        Err(Error::ShapeMismatch(_) | Error::Unsatisfied { .. }) => shape_cache::forget(&id),
        _ => {}
    }
}

/// Proves witnesses of `shape` on the process's default pool
/// ([`ProverPool::global`]): on the GPUs when there are any, each proof's
/// A, B, C evaluated into the upload buffer while the previous proof runs,
/// and on the CPU what every device failed. A witness that does not fit the
/// shape fails the batch before any proving; the first failure stops it.
fn prove_witnesses(
    key: &ProvingKey,
    shape: &Arc<CircuitShape>,
    witnesses: Vec<WitnessAssignment>,
    r_s: &[Scalar],
    s_s: &[Scalar],
    priority: Priority,
) -> Result<Vec<Proof>, Error> {
    for witness in &witnesses {
        shape.check_counts(witness)?;
    }
    let pool = ProverPool::global()?.with_priority(priority);
    let reports = pool.prove_witnesses_lent(key, shape, witnesses, r_s, s_s);
    let mut proofs = Vec::with_capacity(reports.len());
    let mut first_error = None;
    for report in reports {
        match report.result {
            Ok(proof) => proofs.push(proof),
            // Stopped by another job's failure: that one is the error.
            Err(Error::Pool(PoolError::Cancelled)) => {}
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(proofs),
    }
}

/// [`create_proof_batch`] with all `r` values, then all `s` values, drawn
/// from `rng` (bellperson's order).
pub fn create_random_proof_batch<C: Circuit<Scalar> + Send, R: RngCore>(
    circuits: Vec<C>,
    key: &ProvingKey,
    rng: &mut R,
) -> Result<Vec<Proof>, Error> {
    let (r_s, s_s) = random_batch_r_s(circuits.len(), rng);
    create_proof_batch(circuits, key, r_s, s_s)
}

/// [`create_proof_batch_in_priority`] with all `r` values, then all `s`
/// values, drawn from `rng` (bellperson's order).
pub fn create_random_proof_batch_in_priority<C: Circuit<Scalar> + Send, R: RngCore>(
    circuits: Vec<C>,
    key: &ProvingKey,
    rng: &mut R,
) -> Result<Vec<Proof>, Error> {
    let (r_s, s_s) = random_batch_r_s(circuits.len(), rng);
    create_proof_batch_in_priority(circuits, key, r_s, s_s)
}

fn random_batch_r_s<R: RngCore>(n: usize, rng: &mut R) -> (Vec<Scalar>, Vec<Scalar>) {
    let r_s = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    let s_s = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    (r_s, s_s)
}

/// Proves each circuit on its own: a circuit whose synthesis fails, or
/// panics, fails only its own entry; the others are proved. The outer error
/// is for arguments that do not fit (lengths of `r_s`, `s_s`).
pub fn create_proofs_isolated<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    key: &ProvingKey,
    r_s: Vec<Scalar>,
    s_s: Vec<Scalar>,
) -> Result<Vec<Result<Proof, Error>>, Error> {
    check_batch_lengths(circuits.len(), r_s.len(), s_s.len())?;
    let assignments: Vec<Result<_, Error>> = circuits
        .into_par_iter()
        .map(synthesize_catching_panics)
        .collect();
    let reports = ProverPool::global()?.prove_assignments_lent(key, assignments, &r_s, &s_s);
    Ok(reports.into_iter().map(|report| report.result).collect())
}

/// [`synthesize`], with a panic inside the circuit turned into an error.
fn synthesize_catching_panics<C: Circuit<Scalar>>(circuit: C) -> Result<Assignment, Error> {
    catch_circuit_panic(|| synthesize(circuit))
}
