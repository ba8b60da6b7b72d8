//! Our keys and proofs against bellperson 0.27, the oracle: the same trapdoor
//! gives byte-identical parameters, the same r and s byte-identical proofs,
//! and bellperson's verifier accepts ours.

#[path = "common/circuits.rs"]
mod circuits;

use bellpepper_core::{Circuit, SynthesisError};
use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use circuits::*;
use ff::Field;
use groth16_gpu::params::CheckMode;
use groth16_gpu::synthesis::{synthesize, CircuitShape};
use groth16_gpu::{
    create_proof, generate_parameters, prepare_verifying_key, verify_proof, Error, Proof,
    ProvingKey,
};
use group::Group;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

fn fresh_rng() -> ChaCha20Rng {
    let seed = rand_core::OsRng.next_u64();
    eprintln!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

struct Trapdoor {
    g1: G1Projective,
    g2: G2Projective,
    alpha: Scalar,
    beta: Scalar,
    gamma: Scalar,
    delta: Scalar,
    tau: Scalar,
}

impl Trapdoor {
    fn random(rng: &mut ChaCha20Rng) -> Self {
        Self {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }

    fn ours<C: Circuit<Scalar>>(&self, c: C) -> Result<ProvingKey, Error> {
        generate_parameters(
            c, self.g1, self.g2, self.alpha, self.beta, self.gamma, self.delta, self.tau,
        )
    }

    fn bellperson<C: Circuit<Scalar>>(
        &self,
        c: C,
    ) -> Result<bp::Parameters<Bls12>, SynthesisError> {
        bp::generate_parameters::<Bls12, C>(
            c, self.g1, self.g2, self.alpha, self.beta, self.gamma, self.delta, self.tau,
        )
    }
}

/// The whole comparison for one circuit: keys, proofs on both synthesis
/// paths, verification both ways, and a tampered proof rejected.
fn check_against_bellperson<C>(blank: C, circuit: C, public_inputs: &[Scalar])
where
    C: Circuit<Scalar> + Clone + Send,
{
    let mut rng = fresh_rng();
    let trapdoor = Trapdoor::random(&mut rng);
    let ours = trapdoor.ours(blank.clone()).expect("our generator");
    let theirs = trapdoor
        .bellperson(blank.clone())
        .expect("bellperson's generator");

    let mut our_bytes = Vec::new();
    ours.write(&mut our_bytes).unwrap();
    let mut their_bytes = Vec::new();
    theirs.write(&mut their_bytes).unwrap();
    assert!(
        our_bytes == their_bytes,
        "parameters differ from bellperson's"
    );
    assert_eq!(our_bytes.len() as u64, ours.serialized_len());
    assert_eq!(
        ProvingKey::from_bytes(&their_bytes, CheckMode::Subgroup).unwrap(),
        ours
    );
    let reread = bp::Parameters::<Bls12>::read(&our_bytes[..], true).unwrap();
    assert!(
        reread == theirs,
        "bellperson reads our parameters back differently"
    );

    let r = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    let their_proof = bp::create_proof(circuit.clone(), &theirs, r, s).unwrap();
    let mut their_proof_bytes = Vec::new();
    their_proof.write(&mut their_proof_bytes).unwrap();

    // create_proof records the circuit's shape as it synthesizes it (and
    // keeps it for this circuit type and key).
    let direct = create_proof(circuit.clone(), &ours, r, s).unwrap();
    assert_eq!(
        direct.to_bytes().to_vec(),
        their_proof_bytes,
        "create_proof"
    );

    // The batch then proves all three from the kept shape, witness only.
    let batch =
        groth16_gpu::create_proof_batch(vec![circuit.clone(); 3], &ours, vec![r; 3], vec![s; 3])
            .unwrap();
    assert!(batch.iter().all(|proof| *proof == direct), "batch path");

    let shape = CircuitShape::record(blank).unwrap();
    let recorded = shape.synthesize(circuit.clone()).unwrap();
    assert_eq!(
        recorded,
        synthesize(circuit).unwrap(),
        "synthesis paths differ"
    );
    let precompiled = groth16_gpu::groth16::prove(&ours, &recorded, r, s).unwrap();
    assert_eq!(precompiled, direct, "pre-compiled path");

    let their_pvk = bp::prepare_verifying_key(&theirs.vk);
    let decoded = bp::Proof::<Bls12>::read(&direct.to_bytes()[..]).unwrap();
    assert!(bp::verify_proof(&their_pvk, &decoded, public_inputs).unwrap());

    let pvk = prepare_verifying_key(&ours.vk);
    assert!(verify_proof(&pvk, &direct, public_inputs).unwrap());
    let forged = Proof {
        a: direct.c,
        ..direct
    };
    assert!(!verify_proof(&pvk, &forged, public_inputs).unwrap());
    let mut wrong_inputs = public_inputs.to_vec();
    wrong_inputs[0] += Scalar::ONE;
    assert!(!verify_proof(&pvk, &direct, &wrong_inputs).unwrap());
}

#[test]
fn sha256_gadget() {
    let message: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
    let inputs = Sha256Circuit::public_inputs(&message);
    check_against_bellperson(
        Sha256Circuit::blank(message.len()),
        Sha256Circuit::new(message),
        &inputs,
    );
}

#[test]
fn boolean_heavy() {
    let mut rng = fresh_rng();
    let circuit = BooleanHeavy::random(3000, &mut rng);
    let inputs = circuit.public_inputs();
    check_against_bellperson(
        BooleanHeavy {
            num_bits: 3000,
            bits: None,
        },
        circuit,
        &inputs,
    );
}

#[test]
fn field_heavy_not_a_power_of_two() {
    let mut rng = fresh_rng();
    let circuit = FieldHeavy {
        steps: 5000,
        start: Some(Scalar::random(&mut rng)),
    };
    let inputs = vec![circuit.result()];
    check_against_bellperson(
        FieldHeavy {
            steps: 5000,
            start: None,
        },
        circuit,
        &inputs,
    );
}

#[test]
fn several_public_inputs_and_a_c_only_aux_variable() {
    let mut rng = fresh_rng();
    let circuit = ManyInputs {
        values: random_scalars(7, &mut rng),
    };
    let inputs = circuit.public_inputs();
    check_against_bellperson(
        ManyInputs {
            values: vec![None; 7],
        },
        circuit,
        &inputs,
    );
}

#[test]
fn edge_values_zero_and_minus_one() {
    for start in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE] {
        let circuit = FieldHeavy {
            steps: 33,
            start: Some(start),
        };
        let inputs = vec![circuit.result()];
        check_against_bellperson(
            FieldHeavy {
                steps: 33,
                start: None,
            },
            circuit,
            &inputs,
        );
    }
}

#[test]
fn unconstrained_aux_variable_is_refused_like_bellperson() {
    let mut rng = fresh_rng();
    let trapdoor = Trapdoor::random(&mut rng);
    assert!(matches!(
        trapdoor.bellperson(UnusedAux),
        Err(SynthesisError::UnconstrainedVariable)
    ));
    assert!(matches!(
        trapdoor.ours(UnusedAux),
        Err(Error::Synthesis(SynthesisError::UnconstrainedVariable))
    ));
}

#[test]
fn random_proofs_batch_verify() {
    let mut rng = fresh_rng();
    let key = groth16_gpu::generate_random_parameters(
        FieldHeavy {
            steps: 100,
            start: None,
        },
        &mut rng,
    )
    .unwrap();
    let circuits: Vec<FieldHeavy> = (0..4)
        .map(|_| FieldHeavy {
            steps: 100,
            start: Some(Scalar::random(&mut rng)),
        })
        .collect();
    let inputs: Vec<Vec<Scalar>> = circuits.iter().map(|c| vec![c.result()]).collect();
    let proofs = groth16_gpu::create_random_proof_batch(circuits, &key, &mut rng).unwrap();
    let pvk = prepare_verifying_key(&key.vk);
    let refs: Vec<&Proof> = proofs.iter().collect();
    assert!(groth16_gpu::verify_proofs_batch(&pvk, &mut rng, &refs, &inputs).unwrap());
    let mut bad_inputs = inputs.clone();
    bad_inputs[2][0] += Scalar::ONE;
    assert!(!groth16_gpu::verify_proofs_batch(&pvk, &mut rng, &refs, &bad_inputs).unwrap());
    for (p, i) in proofs.iter().zip(&inputs) {
        assert_eq!(Proof::from_bytes(&p.to_bytes()).unwrap(), *p);
        assert!(verify_proof(&pvk, p, i).unwrap());
    }
}

#[test]
fn random_parameters_match_bellperson_for_the_same_rng() {
    let seed = rand_core::OsRng.next_u64();
    let blank = FieldHeavy {
        steps: 64,
        start: None,
    };
    let ours = groth16_gpu::generate_random_parameters(
        blank.clone(),
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    let theirs =
        bp::generate_random_parameters::<Bls12, _, _>(blank, &mut ChaCha20Rng::seed_from_u64(seed))
            .unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    ours.write(&mut a).unwrap();
    theirs.write(&mut b).unwrap();
    assert!(
        a == b,
        "seed {seed}: random parameters differ from bellperson's"
    );
}

/// bellperson's bytes for each of its proofs.
fn bellperson_bytes(proofs: &[bp::Proof<Bls12>]) -> Vec<Vec<u8>> {
    proofs
        .iter()
        .map(|proof| {
            let mut bytes = Vec::new();
            proof.write(&mut bytes).unwrap();
            bytes
        })
        .collect()
}

fn our_bytes(proofs: &[Proof]) -> Vec<Vec<u8>> {
    proofs
        .iter()
        .map(|proof| proof.to_bytes().to_vec())
        .collect()
}

/// The `*_in_priority` functions (Filecoin proves WinningPoSt through
/// `create_random_proof_batch_in_priority`): bellperson's proofs for the
/// same r and s, and for the same generator's draws.
#[test]
fn priority_functions_match_bellperson() {
    let mut rng = fresh_rng();
    let trapdoor = Trapdoor::random(&mut rng);
    let blank = FieldHeavy {
        steps: 60,
        start: None,
    };
    let ours = trapdoor.ours(blank.clone()).unwrap();
    let theirs = trapdoor.bellperson(blank).unwrap();
    let circuits: Vec<FieldHeavy> = (0..3)
        .map(|_| FieldHeavy {
            steps: 60,
            start: Some(Scalar::random(&mut rng)),
        })
        .collect();
    let r_s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
    let s_s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();

    let batch = groth16_gpu::create_proof_batch_in_priority(
        circuits.clone(),
        &ours,
        r_s.clone(),
        s_s.clone(),
    )
    .unwrap();
    let their_batch =
        bp::create_proof_batch_in_priority(circuits.clone(), &theirs, r_s.clone(), s_s.clone())
            .unwrap();
    assert_eq!(our_bytes(&batch), bellperson_bytes(&their_batch), "batch");
    let pvk = prepare_verifying_key(&ours.vk);
    for (proof, circuit) in batch.iter().zip(&circuits) {
        assert!(verify_proof(&pvk, proof, &[circuit.result()]).unwrap());
    }

    let one =
        groth16_gpu::create_proof_in_priority(circuits[1].clone(), &ours, r_s[1], s_s[1]).unwrap();
    assert_eq!(one, batch[1], "one proof in priority");

    let seed = rng.next_u64();
    let random = groth16_gpu::create_random_proof_batch_in_priority(
        circuits.clone(),
        &ours,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    let their_random = bp::create_random_proof_batch_in_priority(
        circuits.clone(),
        &theirs,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    assert_eq!(
        our_bytes(&random),
        bellperson_bytes(&their_random),
        "random batch"
    );

    let random_one = groth16_gpu::create_random_proof_in_priority(
        circuits[0].clone(),
        &ours,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    let their_random_one = bp::create_random_proof_in_priority(
        circuits[0].clone(),
        &theirs,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    assert_eq!(
        our_bytes(&[random_one]),
        bellperson_bytes(&[their_random_one]),
        "one random proof"
    );
}

/// Proofs laid end to end (Filecoin's multi-partition proofs): our
/// `read_many` reads bellperson's bytes back, bellperson's reads ours, and
/// a wrong length or a corrupted proof is an error.
#[test]
fn proofs_read_many_as_bellperson() {
    let mut rng = fresh_rng();
    let blank = FieldHeavy {
        steps: 40,
        start: None,
    };
    let key = groth16_gpu::generate_random_parameters(blank, &mut rng).unwrap();
    let circuits: Vec<FieldHeavy> = (0..5)
        .map(|_| FieldHeavy {
            steps: 40,
            start: Some(Scalar::random(&mut rng)),
        })
        .collect();
    let proofs = groth16_gpu::create_random_proof_batch(circuits, &key, &mut rng).unwrap();
    let bytes: Vec<u8> = our_bytes(&proofs).concat();
    assert_eq!(Proof::read_many(&bytes, 5).unwrap(), proofs);
    let theirs = bp::Proof::<Bls12>::read_many(&bytes, 5).unwrap();
    assert_eq!(bellperson_bytes(&theirs).concat(), bytes);
    assert_eq!(Proof::read_many(&[], 0).unwrap(), Vec::<Proof>::new());
    assert!(Proof::read_many(&bytes, 4).is_err());
    assert!(Proof::read_many(&bytes[..bytes.len() - 1], 5).is_err());
    assert!(Proof::read_many(&bytes, usize::MAX).is_err());
    let mut corrupt = bytes.clone();
    corrupt[3 * 192 + 50] ^= 0x40;
    assert!(matches!(
        Proof::read_many(&corrupt, 5),
        Err(Error::MalformedProof(_))
    ));
}
