//! The shapes that create_proof and create_proof_batch keep across calls:
//! reused for the same circuit type and key, never for a circuit they do
//! not fit, and bounded. One test: the cache is the process's, and tests run at once.

#[path = "common/circuits.rs"]
mod circuits;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use circuits::*;
use ff::Field;
use groth16_gpu::groth16::{
    clear_shape_cache, prove, set_shape_cache_capacity, shape_cache_len,
    DEFAULT_SHAPE_CACHE_CAPACITY,
};
use groth16_gpu::synthesis::{synthesize, CircuitShape};
use groth16_gpu::{
    create_proof, create_proof_batch, generate_parameters_for_shape_random, Error, ProvingKey,
};
use rand_core::OsRng;

/// y = k x: the factor k is the circuit's own, so circuits with another k
/// have the same counts but other constraints.
#[derive(Clone)]
struct Scaled {
    k: u64,
    x: Option<Scalar>,
}

impl Circuit<Scalar> for Scaled {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || self.x.ok_or(SynthesisError::AssignmentMissing))?;
        let y = cs.alloc_input(
            || "y",
            || {
                self.x
                    .map(|x| x * Scalar::from(self.k))
                    .ok_or(SynthesisError::AssignmentMissing)
            },
        )?;
        cs.enforce(
            || "k x = y",
            |lc| lc + (Scalar::from(self.k), x),
            |lc| lc + CS::one(),
            |lc| lc + y,
        );
        Ok(())
    }
}

fn key_for<C: Circuit<Scalar>>(blank: C) -> ProvingKey {
    let shape = CircuitShape::record(blank).unwrap();
    generate_parameters_for_shape_random(&shape, &mut OsRng).unwrap()
}

fn field(start: u64) -> FieldHeavy {
    FieldHeavy {
        steps: 300,
        start: Some(Scalar::from(start)),
    }
}

/// create_proof_batch's proofs equal the CPU prover's of each circuit.
fn check_batch<C: Circuit<Scalar> + Clone + Send>(circuits: Vec<C>, key: &ProvingKey) {
    let r_s: Vec<Scalar> = circuits.iter().map(|_| Scalar::random(OsRng)).collect();
    let s_s: Vec<Scalar> = circuits.iter().map(|_| Scalar::random(OsRng)).collect();
    let proofs = create_proof_batch(circuits.clone(), key, r_s.clone(), s_s.clone()).unwrap();
    for (((circuit, proof), r), s) in circuits.into_iter().zip(proofs).zip(r_s).zip(s_s) {
        assert_eq!(
            proof,
            prove(key, &synthesize(circuit).unwrap(), r, s).unwrap()
        );
    }
}

/// create_proof_batch of two circuits, r and s one: for the calls that fail.
fn batch_of_two<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    key: &ProvingKey,
) -> Result<Vec<groth16_gpu::Proof>, Error> {
    create_proof_batch(circuits, key, vec![Scalar::ONE; 2], vec![Scalar::ONE; 2])
}

#[test]
fn kept_shapes_are_reused_refused_where_they_do_not_fit_and_bounded() {
    assert_eq!(DEFAULT_SHAPE_CACHE_CAPACITY, 2);
    clear_shape_cache();
    let field_key = key_for(FieldHeavy {
        steps: 300,
        start: None,
    });

    // A batch (of one or more) records its shape, and the next call of that
    // type and key, create_proof's too, proves from the kept shape.
    check_batch(Vec::<FieldHeavy>::new(), &field_key);
    assert_eq!(shape_cache_len(), 0);
    check_batch(vec![field(1)], &field_key);
    assert_eq!(shape_cache_len(), 1);
    check_batch(vec![field(2), field(3)], &field_key);
    check_batch(vec![field(4), field(0), field(5)], &field_key);
    let (r, s) = (Scalar::random(OsRng), Scalar::random(OsRng));
    let single = create_proof(field(6), &field_key, r, s).unwrap();
    assert_eq!(
        single,
        prove(&field_key, &synthesize(field(6)).unwrap(), r, s).unwrap()
    );
    assert_eq!(shape_cache_len(), 1);

    // Another key for the same circuit type is another shape.
    let other_key = key_for(FieldHeavy {
        steps: 300,
        start: None,
    });
    check_batch(vec![field(7), field(8)], &other_key);
    assert_eq!(shape_cache_len(), 2);

    // A circuit whose constraints differ from the kept shape (same type,
    // same counts) is an error, not a proof, and the shape is dropped.
    let scaled_key = key_for(Scaled { k: 2, x: None });
    let scaled = |k, x: u64| Scaled {
        k,
        x: Some(Scalar::from(x)),
    };
    check_batch(vec![scaled(2, 5), scaled(2, 6)], &scaled_key);
    assert_eq!(shape_cache_len(), 2, "the least recently used was dropped");
    let result = batch_of_two(vec![scaled(3, 5), scaled(3, 6)], &scaled_key);
    assert!(
        matches!(result, Err(Error::Unsatisfied { .. })),
        "{result:?}"
    );
    assert_eq!(shape_cache_len(), 1);
    check_batch(vec![scaled(2, 7), scaled(2, 8)], &scaled_key);

    // A circuit with other counts under a kept shape is an error too.
    let longer = FieldHeavy {
        steps: 301,
        start: Some(Scalar::ONE),
    };
    let result = batch_of_two(vec![longer.clone(), longer], &other_key);
    assert!(matches!(result, Err(Error::ShapeMismatch(_))), "{result:?}");

    // A batch that fails (its circuits do not fit the key) keeps nothing,
    // so a later batch of that type and key is recorded from its own.
    let cached = shape_cache_len();
    let wrong_key = key_for(FieldHeavy {
        steps: 200,
        start: None,
    });
    let result = batch_of_two(vec![field(1), field(2)], &wrong_key);
    assert!(
        matches!(result, Err(Error::KeyMismatch { .. })),
        "{result:?}"
    );
    assert_eq!(shape_cache_len(), cached);
    let short = |start| FieldHeavy {
        steps: 200,
        start: Some(Scalar::from(start)),
    };
    check_batch(vec![short(1), short(2)], &wrong_key);

    // Capacity 0 keeps none.
    set_shape_cache_capacity(0);
    assert_eq!(shape_cache_len(), 0);
    check_batch(vec![field(9), field(10)], &field_key);
    assert_eq!(shape_cache_len(), 0);
    set_shape_cache_capacity(DEFAULT_SHAPE_CACHE_CAPACITY);
}
