//! Filecoin's PoRep partition and WindowPoSt circuits (storage-proofs 19.1)
//! against bellperson 0.27: for the same key, r and s our proofs, direct and
//! pre-compiled, are bellperson's bytes, and bellperson's verifier accepts
//! them with the public inputs that Filecoin's crates compute.

#[path = "common/filecoin.rs"]
mod filecoin;

use std::time::Instant;

use bellpepper_core::Circuit;
use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use ff::Field;
use filecoin::{Partitions, PorepConfig, PostConfig};
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{create_proof, generate_parameters_for_shape_random};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// Also turns on logging: `RUST_LOG=bellperson=info` shows bellperson's own
/// synthesis time beside ours.
fn fresh_rng() -> ChaCha20Rng {
    let _ = env_logger::builder().is_test(true).try_init();
    let seed = rand_core::OsRng.next_u64();
    eprintln!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// Keys from a random trapdoor for the blank circuit's shape (ours, handed
/// to bellperson through the `.params` bytes), then per partition: our
/// direct and pre-compiled proofs equal bellperson's for the same r and s,
/// and bellperson verifies ours, rejecting it for changed inputs.
fn check_against_bellperson<C>(name: &str, circuits: Partitions<C>, rng: &mut ChaCha20Rng)
where
    C: Circuit<Scalar> + Clone + Send,
{
    let start = Instant::now();
    let shape = CircuitShape::record(circuits.blank).expect("record the shape");
    eprintln!(
        "{name}: {} constraints, {} inputs, {} aux ({:.1?} to record)",
        shape.num_constraints(),
        shape.num_inputs(),
        shape.num_aux(),
        start.elapsed()
    );

    let start = Instant::now();
    let key = generate_parameters_for_shape_random(&shape, &mut *rng).expect("our generator");
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    let theirs = bp::Parameters::<Bls12>::read(&bytes[..], false).expect("bellperson reads ours");
    drop(bytes);
    let pvk = bp::prepare_verifying_key(&theirs.vk);
    eprintln!("{name}: keys in {:.1?}", start.elapsed());

    let mut batch = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (k, partition) in circuits.partitions.into_iter().enumerate() {
        assert_eq!(
            partition.inputs.len() + 1,
            shape.num_inputs(),
            "{name}: the crate's public inputs do not fit the circuit"
        );
        let r = Scalar::random(&mut *rng);
        let s = Scalar::random(&mut *rng);

        let start = Instant::now();
        let their_proof = bp::create_proof(partition.circuit.clone(), &theirs, r, s).unwrap();
        let mut their_bytes = Vec::new();
        their_proof.write(&mut their_bytes).unwrap();
        let their_time = start.elapsed();

        let start = Instant::now();
        let direct = create_proof(partition.circuit.clone(), &key, r, s).unwrap();
        let direct_time = start.elapsed();
        assert_eq!(
            direct.to_bytes().to_vec(),
            their_bytes,
            "{name} partition {k}: direct path differs from bellperson"
        );

        batch.0.push(partition.circuit.clone());
        batch.1.push(r);
        batch.2.push(s);
        batch.3.push(direct);

        let start = Instant::now();
        let assignment = shape.synthesize(partition.circuit).unwrap();
        let precompiled = groth16_gpu::groth16::prove(&key, &assignment, r, s).unwrap();
        let precompiled_time = start.elapsed();
        assert_eq!(
            precompiled, direct,
            "{name} partition {k}: pre-compiled path"
        );
        eprintln!(
            "{name} partition {k}: proofs equal; bellperson {their_time:.1?}, \
             ours direct {direct_time:.1?}, pre-compiled {precompiled_time:.1?}"
        );

        let decoded = bp::Proof::<Bls12>::read(&direct.to_bytes()[..]).unwrap();
        assert!(
            bp::verify_proof(&pvk, &decoded, &partition.inputs).unwrap(),
            "{name} partition {k}: bellperson rejects our proof"
        );
        let mut wrong = partition.inputs.clone();
        wrong[0] += Scalar::ONE;
        assert!(
            !bp::verify_proof(&pvk, &decoded, &wrong).unwrap(),
            "{name} partition {k}: accepted with a changed input"
        );
    }

    // All partitions at once: the first one's shape recorded as it is
    // synthesized, the others' witnesses checked against it.
    let (mut circuits, mut r_s, mut s_s, mut expected) = batch;
    if circuits.len() == 1 {
        // One partition: prove it twice, so the batch has a witness-only member.
        circuits.push(circuits[0].clone());
        r_s.push(r_s[0]);
        s_s.push(s_s[0]);
        expected.push(expected[0]);
    }
    let start = Instant::now();
    let proofs = groth16_gpu::create_proof_batch(circuits, &key, r_s, s_s).unwrap();
    assert_eq!(proofs, expected, "{name}: batch path");
    eprintln!(
        "{name}: batch of {} proofs equal in {:.1?}",
        proofs.len(),
        start.elapsed()
    );
}

#[test]
fn porep_partition_matches_bellperson() {
    let mut rng = fresh_rng();
    let start = Instant::now();
    let circuits = filecoin::porep_partitions(PorepConfig::SMALL, &mut rng);
    eprintln!("porep: sector replicated in {:.1?}", start.elapsed());
    check_against_bellperson("porep", circuits, &mut rng);
}

#[test]
fn window_post_matches_bellperson() {
    let mut rng = fresh_rng();
    let config = PostConfig {
        sectors: 2,
        challenges_per_sector: 2,
    };
    let circuits = filecoin::post_partition(config, &mut rng);
    check_against_bellperson("window post", circuits, &mut rng);
}

/// A production-layered PoRep partition (11 layers, as a 32 GiB sector's;
/// two challenges) synthesized in parts, its challenges on separate
/// threads: the witness the circuit's own synthesis makes, value for value,
/// and it satisfies the recorded shape; its shape recorded in parts is the
/// blank circuit's. Joined into a caller's buffer, it is the same witness.
#[test]
fn porep_challenges_in_parts_give_the_sequential_witness() {
    let mut rng = fresh_rng();
    let config = PorepConfig {
        layers: 11,
        challenges_per_partition: 2,
        ..PorepConfig::SMALL
    };
    let (set, parts) = filecoin::porep_partitions_and_parts(config, &mut rng);
    let shape = CircuitShape::record(set.blank).expect("record the shape");
    eprintln!(
        "porep, 11 layers, 2 challenges: {} constraints",
        shape.num_constraints()
    );
    let circuit = set.partitions.into_iter().next().unwrap().circuit;
    let parts = parts.into_iter().next().unwrap();
    let sequential = shape.witness(circuit).unwrap();
    let whole = shape.witness(parts.clone()).unwrap();
    assert!(whole.input == sequential.input && whole.aux == sequential.aux);
    for threads in [1, 2, 5] {
        let joined = parts.witness_in_parts(&shape, threads).unwrap();
        assert_eq!(joined.input, sequential.input, "{threads} parts: inputs");
        assert!(
            joined.aux == sequential.aux,
            "{threads} parts: aux values differ"
        );
        assert_eq!(
            joined.constraints, sequential.constraints,
            "{threads} parts"
        );
    }
    // Joined into a buffer with room to spare, a run a challenge.
    let mut buffer = vec![Scalar::ZERO; shape.num_aux() + 1];
    let into = parts
        .witness_in_parts_into(&shape, usize::MAX, &mut buffer)
        .unwrap();
    let values = into.values(&buffer);
    assert!(values.input == &sequential.input[..] && values.aux == &sequential.aux[..]);
    assert_eq!(values.constraints, sequential.constraints);
    shape
        .assign(parts.witness_in_parts(&shape, 2).unwrap())
        .expect("the joined witness satisfies the shape");
    // The shape recorded the same way, a challenge a thread, is the blank
    // circuit's.
    assert!(parts.shape_in_parts(2).unwrap() == shape, "shape in parts");
}

/// A proof from a witness synthesized a challenge a thread is bellperson's
/// proof of the partition circuit, byte for byte, for the same key, r and
/// s, and bellperson's verifier accepts it with the crates' public inputs.
#[test]
#[cfg_attr(
    feature = "cuda",
    ignore = "CPU only: runs in the default-feature pass (a 2^22 key on the CPU)"
)]
fn porep_proof_from_parts_matches_bellperson() {
    let mut rng = fresh_rng();
    let config = PorepConfig {
        challenges_per_partition: 2,
        ..PorepConfig::SMALL
    };
    let (set, parts) = filecoin::porep_partitions_and_parts(config, &mut rng);
    let shape = CircuitShape::record(set.blank).expect("record the shape");
    let key = generate_parameters_for_shape_random(&shape, &mut rng).expect("our generator");
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    let theirs = bp::Parameters::<Bls12>::read(&bytes[..], false).expect("bellperson reads ours");
    let pvk = bp::prepare_verifying_key(&theirs.vk);
    let partition = set.partitions.into_iter().next().unwrap();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let mut their_bytes = Vec::new();
    bp::create_proof(partition.circuit, &theirs, r, s)
        .unwrap()
        .write(&mut their_bytes)
        .unwrap();
    let witness = parts[0]
        .witness_in_parts(&shape, parts[0].challenges())
        .unwrap();
    let ours = groth16_gpu::groth16::prove(&key, &shape.assign(witness).unwrap(), r, s).unwrap();
    assert_eq!(ours.to_bytes().to_vec(), their_bytes);
    let decoded = bp::Proof::<Bls12>::read(&ours.to_bytes()[..]).unwrap();
    assert!(bp::verify_proof(&pvk, &decoded, &partition.inputs).unwrap());
}
