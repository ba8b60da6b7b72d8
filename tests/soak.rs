//! Long runs and failure isolation on the CPU backend. The soak's length is
//! set by G16_SOAK_ROUNDS (default 3 rounds per thread, a few seconds).

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/env.rs"]
mod env;

use env::env_or;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use circuits::*;
use ff::Field;
use groth16_gpu::create_proofs_isolated;
use groth16_gpu::{
    create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof, Error,
};
use rand_core::OsRng;

#[test]
fn eight_threads_share_one_key() {
    let rounds: usize = env_or("G16_SOAK_ROUNDS", 3);
    let steps = 500;
    let key = Arc::new(
        generate_random_parameters(FieldHeavy { steps, start: None }, &mut OsRng).unwrap(),
    );
    let pvk = Arc::new(prepare_verifying_key(&key.vk));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (key, pvk) = (key.clone(), pvk.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let circuit = FieldHeavy {
                        steps,
                        start: Some(Scalar::random(OsRng)),
                    };
                    let inputs = [circuit.result()];
                    let proof = create_random_proof(circuit, &key, &mut OsRng).unwrap();
                    assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
                }
                rounds
            })
        })
        .collect();
    let proved: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(proved, 8 * rounds);
}

/// Behaves as FieldHeavy, or panics in the middle of synthesis.
#[derive(Clone)]
enum MaybePanics {
    Fine(FieldHeavy),
    Panics,
}

impl Circuit<Scalar> for MaybePanics {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            MaybePanics::Fine(c) => c.synthesize(cs),
            MaybePanics::Panics => panic!("injected circuit panic"),
        }
    }
}

#[test]
fn a_failing_or_panicking_circuit_fails_only_its_own_proof() {
    let steps = 50;
    let key = generate_random_parameters(FieldHeavy { steps, start: None }, &mut OsRng).unwrap();
    let pvk = prepare_verifying_key(&key.vk);
    let good = |v: u64| FieldHeavy {
        steps,
        start: Some(Scalar::from(v)),
    };
    let circuits = vec![
        MaybePanics::Fine(good(1)),
        MaybePanics::Fine(FieldHeavy { steps, start: None }),
        MaybePanics::Fine(good(2)),
        MaybePanics::Panics,
        MaybePanics::Fine(good(3)),
    ];
    let n = circuits.len();
    let rs: Vec<Scalar> = (0..n).map(|_| Scalar::random(OsRng)).collect();
    let results = create_proofs_isolated(circuits, &key, rs.clone(), rs).unwrap();
    assert!(matches!(
        results[1],
        Err(Error::Synthesis(SynthesisError::AssignmentMissing))
    ));
    assert!(matches!(&results[3], Err(Error::CircuitPanicked(m)) if m.contains("injected")));
    for (i, v) in [(0usize, 1u64), (2, 2), (4, 3)] {
        let proof = results[i].as_ref().unwrap();
        assert!(
            verify_proof(&pvk, proof, &[good(v).result()]).unwrap(),
            "proof {i}"
        );
    }
    // The key and the prover stay usable after the panic.
    let again = create_random_proof(good(4), &key, &mut OsRng).unwrap();
    assert!(verify_proof(&pvk, &again, &[good(4).result()]).unwrap());
}
