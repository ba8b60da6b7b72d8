//! A recorded shape's rows evaluated on the device (`DeviceShape`) against
//! the host's evaluation. `reference_*` tests run the device's per-row steps
//! on the CPU (no GPU needed); `gpu_*` tests print `skipped: no CUDA device`
//! where there is none. Witnesses are fresh random values each run.
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/gpu.rs"]
mod gpu;

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use circuits::{BooleanHeavy, FieldHeavy, ManyInputs};
use ff::Field;
use groth16_gpu::backend::cpu::Domain;
use groth16_gpu::backend::cuda::{
    reference_first_unsatisfied, reference_matrix_rows, DeviceScalars, DeviceShape, MatrixParts,
};
use groth16_gpu::device::DeviceGuard;
use groth16_gpu::synthesis::{CircuitShape, WitnessAssignment};
use groth16_gpu::Error;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn fresh_rng() -> ChaCha20Rng {
    let seed = rand::random();
    println!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// Rows longer than one device thread takes (the device gives rows of more
/// than 1024 entries a block each) in A, B and C, with coefficients other
/// than one, inputs among the terms and short rows around them.
#[derive(Clone)]
struct WideRows {
    width: usize,
    values: Option<Vec<Scalar>>,
    coefficients: Vec<Scalar>,
}

impl WideRows {
    fn new(width: usize, rng: &mut impl RngCore, with_values: bool) -> Self {
        let mut coefficient_rng = ChaCha20Rng::seed_from_u64(7);
        Self {
            width,
            values: with_values.then(|| (0..width).map(|_| Scalar::random(&mut *rng)).collect()),
            coefficients: (0..width)
                .map(|i| {
                    if i % 3 == 0 {
                        Scalar::ONE
                    } else {
                        Scalar::random(&mut coefficient_rng)
                    }
                })
                .collect(),
        }
    }

    fn input(&self) -> Option<Scalar> {
        self.values.as_ref().map(|v| v[0] + v[1])
    }
}

impl Circuit<Scalar> for WideRows {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let value = |i: usize| {
            self.values
                .as_ref()
                .map(|v| v[i])
                .ok_or(SynthesisError::AssignmentMissing)
        };
        let input = cs.alloc_input(
            || "x0 + x1",
            || self.input().ok_or(SynthesisError::AssignmentMissing),
        )?;
        let xs = (0..self.width)
            .map(|i| cs.alloc(|| format!("x{i}"), || value(i)))
            .collect::<Result<Vec<_>, _>>()?;
        // Short rows: x_i · x_{i+1} = p_i.
        for i in 0..self.width - 1 {
            let p = cs.alloc(|| format!("p{i}"), || Ok(value(i)? * value(i + 1)?))?;
            cs.enforce(
                || format!("p{i}"),
                |lc| lc + xs[i],
                |lc| lc + xs[i + 1],
                |lc| lc + p,
            );
        }
        // Long A: (Σ c_i x_i + input) · (x_0 + 2) = w.
        let weighted = self.values.as_ref().map(|v| {
            v.iter()
                .zip(&self.coefficients)
                .map(|(x, c)| *x * c)
                .sum::<Scalar>()
                + v[0]
                + v[1]
        });
        let w = cs.alloc(
            || "w",
            || {
                Ok(weighted.ok_or(SynthesisError::AssignmentMissing)?
                    * (value(0)? + Scalar::from(2u64)))
            },
        )?;
        let mut sum = LinearCombination::zero() + input;
        for (x, c) in xs.iter().zip(&self.coefficients) {
            sum = sum + (*c, *x);
        }
        cs.enforce(
            || "long a",
            |_| sum.clone(),
            |lc| lc + xs[0] + (Scalar::from(2u64), CS::one()),
            |lc| lc + w,
        );
        // Long B and long C: 1 · (Σ c_i x_i + input) = Σ c_i x_i + input.
        let (b_sum, c_sum) = (sum.clone(), sum);
        cs.enforce(
            || "long b and c",
            |lc| lc + CS::one(),
            move |_| b_sum,
            move |_| c_sum,
        );
        // x0 + x1 = input.
        cs.enforce(
            || "input",
            |lc| lc + xs[0] + xs[1],
            |lc| lc + CS::one(),
            |lc| lc + input,
        );
        Ok(())
    }
}

/// A recorded shape, a witness of it and the host's a, b, c.
struct Case {
    name: &'static str,
    shape: CircuitShape,
    witness: WitnessAssignment,
    abc: [Vec<Scalar>; 3],
}

fn case<C: Circuit<Scalar>>(name: &'static str, blank: C, circuit: C) -> Case {
    let shape = CircuitShape::record(blank).expect("record the shape");
    let witness = shape.witness(circuit).expect("witness");
    let assignment = shape.assign(witness.clone()).expect("assign");
    Case {
        name,
        shape,
        witness,
        abc: [assignment.a, assignment.b, assignment.c],
    }
}

fn cases(rng: &mut ChaCha20Rng) -> Vec<Case> {
    let wide = WideRows::new(3000, rng, true);
    let bits = BooleanHeavy::random(2500, rng);
    let many = ManyInputs {
        values: circuits::random_scalars(9, rng),
    };
    let steps = 5000;
    vec![
        case(
            "wide rows",
            WideRows {
                values: None,
                ..wide.clone()
            },
            wide,
        ),
        case(
            "boolean",
            BooleanHeavy {
                num_bits: 2500,
                bits: None,
            },
            bits,
        ),
        case(
            "many inputs",
            ManyInputs {
                values: vec![None; 9],
            },
            many,
        ),
        case(
            "field",
            FieldHeavy { steps, start: None },
            FieldHeavy {
                steps,
                start: Some(Scalar::random(&mut *rng)),
            },
        ),
    ]
}

fn parts(shape: &CircuitShape) -> [MatrixParts<'_>; 3] {
    shape
        .matrices()
        .map(|matrix| MatrixParts::from(matrix.raw_parts()))
}

fn joined(witness: &WitnessAssignment) -> Vec<Scalar> {
    [&witness.input[..], &witness.aux[..]].concat()
}

/// The witness with one aux value changed, and the first row that breaks.
fn broken(case: &Case) -> (WitnessAssignment, usize) {
    let mut witness = case.witness.clone();
    let last = witness.aux.len() - 1;
    witness.aux[last] += Scalar::ONE;
    let row = match case.shape.assign(witness.clone()) {
        Err(Error::Unsatisfied { constraint }) => constraint,
        other => panic!("{}: a changed witness gave {other:?}", case.name),
    };
    (witness, row)
}

#[test]
fn reference_rows_equal_the_hosts_evaluation() {
    let mut rng = fresh_rng();
    for case in cases(&mut rng) {
        let witness = joined(&case.witness);
        for (which, matrix) in parts(&case.shape).into_iter().enumerate() {
            let rows = reference_matrix_rows(matrix, &witness, case.witness.input.len())
                .expect("a recorded matrix");
            assert_eq!(rows, case.abc[which], "{}: matrix {which}", case.name);
        }
        let [a, b, c] = &case.abc;
        assert_eq!(reference_first_unsatisfied(a, b, c), None, "{}", case.name);
        let (witness, row) = broken(&case);
        let witness = joined(&witness);
        let [a, b, c] = parts(&case.shape)
            .map(|m| reference_matrix_rows(m, &witness, case.witness.input.len()).unwrap());
        assert_eq!(
            reference_first_unsatisfied(&a, &b, &c),
            Some(row),
            "{}",
            case.name
        );
    }
}

#[test]
fn reference_refuses_a_matrix_naming_what_it_lacks() {
    let mut rng = fresh_rng();
    let case = &cases(&mut rng)[0];
    let witness = joined(&case.witness);
    let [a, _, c] = parts(&case.shape);
    // Too short a witness: the last aux value (w, in C) is missing.
    assert!(reference_matrix_rows(c, &witness[..witness.len() - 1], 2).is_err());
    let bad_slots = vec![7u32; a.coefficients.len()];
    let bad = MatrixParts {
        coefficients: &bad_slots,
        constants: &[],
        ..a
    };
    assert!(reference_matrix_rows(bad, &witness, 2).is_err());
}

#[test]
fn gpu_rows_equal_the_hosts_evaluation() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let cases = cases(&mut rng);
    for device in devices {
        let guard = device.lock();
        for case in &cases {
            let shape = &case.shape;
            let domain = Domain::new(shape.num_constraints()).expect("domain");
            let on_device =
                DeviceShape::upload(&guard, shape.num_inputs(), shape.num_aux(), parts(shape))
                    .expect("upload the shape");
            assert_eq!(on_device.rows(), shape.num_constraints());
            // Twice: the same shape serves every proof.
            for _ in 0..2 {
                let (input, aux) = upload(&guard, &case.witness);
                let inputs = on_device
                    .evaluate(&guard, &domain, &input, &aux)
                    .expect("evaluate")
                    .unwrap_or_else(|row| panic!("{}: row {row} unsatisfied", case.name));
                let [a, b, c] = inputs.download(&guard, domain.size()).expect("download");
                let n = shape.num_constraints();
                for (which, (got, want)) in [a, b, c].iter().zip(&case.abc).enumerate() {
                    assert_eq!(&got[..n], &want[..], "{}: matrix {which}", case.name);
                    assert!(
                        got[n..].iter().all(|v| bool::from(v.is_zero())),
                        "{}: padding",
                        case.name
                    );
                }
            }
            let (witness, row) = broken(case);
            let (input, aux) = upload(&guard, &witness);
            match on_device
                .evaluate(&guard, &domain, &input, &aux)
                .expect("evaluate")
            {
                Err(got) => assert_eq!(got, row, "{}", case.name),
                Ok(_) => panic!("{}: a broken witness evaluated as satisfied", case.name),
            }
        }
    }
}

#[test]
fn gpu_refuses_a_malformed_shape_and_a_short_witness() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let case = &cases(&mut rng)[0];
    let shape = &case.shape;
    let guard = devices[0].lock();
    let [a, b, c] = parts(shape);
    let far_columns = vec![(1u32 << 31) | 4_000_000; a.columns.len()];
    let far = MatrixParts {
        columns: &far_columns,
        ..a
    };
    let error = DeviceShape::upload(&guard, shape.num_inputs(), shape.num_aux(), [far, b, c])
        .err()
        .expect("a column past the aux count is refused");
    println!("refused: {error}");
    let on_device = DeviceShape::upload(&guard, shape.num_inputs(), shape.num_aux(), [a, b, c])
        .expect("the device is fine afterwards");
    let domain = Domain::new(shape.num_constraints()).expect("domain");
    let (input, aux) = upload(&guard, &case.witness);
    let short = DeviceScalars::upload(&guard, &case.witness.aux[1..], case.witness.aux.len() - 1)
        .expect("upload");
    assert!(on_device.evaluate(&guard, &domain, &input, &short).is_err());
    assert!(on_device.evaluate(&guard, &domain, &aux, &aux).is_err());
    assert!(on_device
        .evaluate(&guard, &domain, &input, &aux)
        .expect("evaluate")
        .is_ok());
}

/// A witness's inputs and aux values in device buffers of their own.
fn upload(guard: &DeviceGuard<'_>, witness: &WitnessAssignment) -> (DeviceScalars, DeviceScalars) {
    let input = DeviceScalars::upload(guard, &witness.input, witness.input.len());
    let aux = DeviceScalars::upload(guard, &witness.aux, witness.aux.len());
    (
        input.expect("upload the inputs"),
        aux.expect("upload the aux values"),
    )
}
