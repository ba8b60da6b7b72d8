//! Recorded circuit shapes: saved and loaded exactly, validated on load,
//! checked against the circuit they are used with.

#[path = "common/circuits.rs"]
mod circuits;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use circuits::*;
use ff::Field;
use groth16_gpu::synthesis::{synthesize, synthesize_batch, CircuitShape};
use groth16_gpu::Error;
use rand_core::OsRng;

fn saved(shape: &CircuitShape) -> Vec<u8> {
    let mut bytes = Vec::new();
    shape.write(&mut bytes).unwrap();
    bytes
}

#[test]
fn a_saved_shape_loads_back_equal_and_proves_the_same() {
    let circuit = ManyInputs {
        values: random_scalars(4, &mut OsRng),
    };
    let shape = CircuitShape::record(ManyInputs {
        values: vec![None; 4],
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.shape");
    shape.write_file(&path).unwrap();
    let loaded = CircuitShape::read_file(&path).unwrap();
    assert_eq!(loaded, shape);
    assert_eq!(
        loaded.synthesize(circuit.clone()).unwrap(),
        synthesize(circuit).unwrap()
    );
}

#[test]
fn a_row_with_many_entries_loads_back() {
    // BooleanHeavy's count constraint holds every bit in one row: far more
    // entries than rows, which the reader's size checks must allow.
    let shape = CircuitShape::record(BooleanHeavy {
        num_bits: 3000,
        bits: None,
    })
    .unwrap();
    assert_eq!(CircuitShape::from_bytes(&saved(&shape)).unwrap(), shape);
}

#[test]
fn every_truncation_and_trailing_byte_is_refused() {
    let shape = CircuitShape::record(FieldHeavy {
        steps: 20,
        start: None,
    })
    .unwrap();
    let bytes = saved(&shape);
    for cut in 0..bytes.len() {
        assert!(
            matches!(
                CircuitShape::from_bytes(&bytes[..cut]),
                Err(Error::MalformedShape(_))
            ),
            "cut at {cut}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        CircuitShape::from_bytes(&longer),
        Err(Error::MalformedShape(_))
    ));
}

#[test]
fn corrupted_bytes_never_panic() {
    let shape = CircuitShape::record(ManyInputs {
        values: vec![None; 3],
    })
    .unwrap();
    let bytes = saved(&shape);
    let mut refused = 0;
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            match CircuitShape::from_bytes(&bad) {
                Err(Error::MalformedShape(_)) => refused += 1,
                Err(e) => panic!("unexpected error kind {e}"),
                // Some flips land in a coefficient's value and stay well-formed.
                Ok(_) => {}
            }
        }
    }
    assert!(refused > bytes.len(), "most corruptions must be refused");
}

/// Same variables as FieldHeavy, one constraint fewer.
#[derive(Clone)]
struct OneConstraintShort(FieldHeavy);

impl Circuit<Scalar> for OneConstraintShort {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut inner = cs.namespace(|| "inner");
        let x = inner.alloc(
            || "x",
            || self.0.start.ok_or(SynthesisError::AssignmentMissing),
        )?;
        for i in 1..self.0.steps {
            let x2 = inner.alloc(|| format!("x{i}"), || Ok(Scalar::ONE))?;
            inner.enforce(|| format!("s{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        }
        inner.alloc_input(|| "out", || Ok(Scalar::ONE))?;
        Ok(())
    }
}

#[test]
fn a_circuit_with_other_constraints_is_refused() {
    let shape = CircuitShape::record(FieldHeavy {
        steps: 10,
        start: None,
    })
    .unwrap();
    let short = OneConstraintShort(FieldHeavy {
        steps: 10,
        start: Some(Scalar::ONE),
    });
    let err = shape.synthesize(short).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch(_)), "{err}");
    assert!(err.to_string().contains("constraints"));
}

#[test]
fn extending_with_an_uncounted_witness_leaves_it_uncounted() {
    use groth16_gpu::synthesis::WitnessAssignment;
    let mut counted = WitnessAssignment::counting();
    counted.enforce(|| "c", |lc| lc, |lc| lc, |lc| lc);
    let mut also_counted = counted.clone();
    also_counted.extend(&WitnessAssignment::counting());
    assert_eq!(also_counted.constraints, Some(1));
    counted.extend(&WitnessAssignment::default());
    assert_eq!(counted.constraints, None);
}

/// Synthesizes its constraint in a sub-system where the system is extensible,
/// as Filecoin's WindowPoSt does per sector; B uses the constant one.
struct OneInBOfASubSystem(Option<Scalar>);

impl Circuit<Scalar> for OneInBOfASubSystem {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        fn body<CS: ConstraintSystem<Scalar>>(
            cs: &mut CS,
            x: Option<Scalar>,
        ) -> Result<(), SynthesisError> {
            let v = cs.alloc(|| "x", || x.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "x*1=x", |lc| lc + v, |lc| lc + CS::one(), |lc| lc + v);
            Ok(())
        }
        if !CS::is_extensible() {
            return body(cs, self.0);
        }
        let mut sub = CS::new();
        sub.alloc_input(|| "sub one", || Ok(Scalar::ONE))?;
        body(&mut sub, self.0)?;
        cs.extend(&sub);
        Ok(())
    }
}

#[test]
fn a_sub_system_using_one_in_b_marks_our_one() {
    let circuit = || OneInBOfASubSystem(Some(Scalar::from(3u64)));
    let shape = CircuitShape::record(OneInBOfASubSystem(None)).unwrap();
    let direct = synthesize(circuit()).unwrap();
    assert!(direct.b_input_density.is_used(0));
    assert_eq!(direct, shape.synthesize(circuit()).unwrap());
}

/// x·x = y with y's value given apart from x: a wrong y leaves the shape's
/// counts intact and its one constraint unsatisfied.
struct SquareWithClaimedValue {
    x: Option<Scalar>,
    y: Option<Scalar>,
}

impl Circuit<Scalar> for SquareWithClaimedValue {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || self.x.ok_or(SynthesisError::AssignmentMissing))?;
        let y = cs.alloc(|| "y", || self.y.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn a_witness_that_breaks_a_constraint_is_refused() {
    let shape = CircuitShape::record(SquareWithClaimedValue { x: None, y: None }).unwrap();
    // 0 and 1 take the check's short cuts; the others its product.
    for x in [0u64, 1, 2, 7]
        .map(Scalar::from)
        .into_iter()
        .chain([-Scalar::ONE])
    {
        let circuit = |y| SquareWithClaimedValue {
            x: Some(x),
            y: Some(y),
        };
        assert_eq!(
            shape.synthesize(circuit(x.square())).unwrap(),
            synthesize(circuit(x.square())).unwrap()
        );
        let err = shape
            .synthesize(circuit(x.square() + Scalar::ONE))
            .unwrap_err();
        assert!(
            matches!(err, Error::Unsatisfied { constraint: 0 }),
            "x = {x:?}: {err}"
        );
    }
}

/// Takes the square of x, or of x + 1 when its two variables' handles are
/// equal: what a circuit that told variables apart by handle could do. The
/// counts are the same either way, so only the satisfaction check sees it.
struct TellsVariablesApart(Option<Scalar>);

impl Circuit<Scalar> for TellsVariablesApart {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
        let probe = cs.alloc(|| "probe", || Ok(Scalar::ZERO))?;
        let bump = if probe == x {
            Scalar::ONE
        } else {
            Scalar::ZERO
        };
        let y = cs.alloc(
            || "y",
            || {
                let x = self.0.ok_or(SynthesisError::AssignmentMissing)?;
                Ok((x + bump).square())
            },
        )?;
        cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        cs.enforce(
            || "probe*1=0",
            |lc| lc + probe,
            |lc| lc + CS::one(),
            |lc| lc,
        );
        Ok(())
    }
}

#[test]
fn a_circuit_that_tells_variables_apart_is_refused_not_misproved() {
    let circuit = || TellsVariablesApart(Some(Scalar::from(5u64)));
    // Direct synthesis hands out distinct variables: the circuit is satisfied.
    let direct = synthesize(circuit()).unwrap();
    assert_eq!(direct.a[0] * direct.b[0], direct.c[0]);
    // The witness-only system's placeholders are all alike.
    let shape = CircuitShape::record(TellsVariablesApart(None)).unwrap();
    let err = shape.synthesize(circuit()).unwrap_err();
    assert!(matches!(err, Error::Unsatisfied { constraint: 0 }), "{err}");
}

#[test]
fn a_batch_synthesizes_as_each_circuit_alone() {
    let steps = 50;
    let circuits: Vec<FieldHeavy> = random_scalars(4, &mut OsRng)
        .into_iter()
        .map(|start| FieldHeavy { steps, start })
        .collect();
    for n in 0..=circuits.len() {
        let batch = synthesize_batch(circuits[..n].to_vec()).unwrap();
        let alone: Vec<_> = circuits[..n]
            .iter()
            .map(|c| synthesize(c.clone()).unwrap())
            .collect();
        assert_eq!(batch, alone, "{n} circuits");
    }
    // A circuit built in sub-systems, which the witness-only system extends.
    let circuit = || OneInBOfASubSystem(Some(Scalar::from(3u64)));
    assert_eq!(
        synthesize_batch(vec![circuit(), circuit(), circuit()]).unwrap(),
        vec![synthesize(circuit()).unwrap(); 3]
    );
}

#[test]
fn a_batch_refuses_a_circuit_of_another_shape() {
    let x = Scalar::from(3u64);
    let square = |y| SquareWithClaimedValue {
        x: Some(x),
        y: Some(y),
    };
    let err =
        synthesize_batch(vec![square(x.square()), square(x.square() + Scalar::ONE)]).unwrap_err();
    assert!(matches!(err, Error::Unsatisfied { constraint: 0 }), "{err}");
    let start = Some(Scalar::ONE);
    let err = synthesize_batch(vec![
        FieldHeavy { steps: 10, start },
        FieldHeavy { steps: 11, start },
    ])
    .unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch(_)), "{err}");
}
