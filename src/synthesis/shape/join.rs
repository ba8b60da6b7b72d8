//! A circuit's shape from its parts recorded apart (on separate threads):
//! the shape one recording of the whole circuit makes.

use super::CircuitShape;
use crate::synthesis::matrix::VariableShift;
use crate::Error;

impl CircuitShape {
    /// Joins the shapes of a circuit's parts, each recorded from the
    /// circuit's shared beginning (`prefix`, recorded alone) followed by
    /// that part's own constraints, into the shape of the whole circuit:
    /// the prefix once, then each part's own constraints and variables in
    /// order. The counterpart of
    /// [`WitnessAssignment::join_parts`](crate::synthesis::WitnessAssignment::join_parts);
    /// the result equals [`record`](Self::record) of the whole circuit when
    /// the circuit synthesizes in that order.
    ///
    /// ```
    /// # use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    /// # use blstrs::Scalar;
    /// /// A shared input x, then x^2 = y for each power in `squares`.
    /// struct Squares(Vec<u64>);
    /// impl Circuit<Scalar> for Squares {
    ///     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
    ///         let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3u64)))?;
    ///         for k in self.0 {
    ///             let y = cs.alloc(|| "y", || Ok(Scalar::from(9u64)))?;
    ///             cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + (Scalar::from(k), x), |lc| lc + y);
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// use groth16_gpu::synthesis::CircuitShape;
    ///
    /// let prefix = CircuitShape::record(Squares(vec![]))?;
    /// let parts = [CircuitShape::record(Squares(vec![1, 2]))?, CircuitShape::record(Squares(vec![5]))?];
    /// let joined = CircuitShape::join_parts(&prefix, &parts)?;
    /// assert_eq!(joined, CircuitShape::record(Squares(vec![1, 2, 5]))?);
    /// # Ok::<(), groth16_gpu::Error>(())
    /// ```
    pub fn join_parts(prefix: &CircuitShape, parts: &[CircuitShape]) -> Result<Self, Error> {
        let prefix_rows = prefix.circuit_rows();
        for (k, part) in parts.iter().enumerate() {
            let begins_alike = part.num_inputs >= prefix.num_inputs
                && part.num_aux >= prefix.num_aux
                && part.circuit_rows() >= prefix_rows
                && prefix
                    .matrices()
                    .iter()
                    .zip(part.matrices())
                    .all(|(shared, own)| shared.rows_equal(own, 0..prefix_rows));
            if !begins_alike {
                return Err(Error::ShapeMismatch(format!(
                    "shape part {k} does not begin with the shared prefix's {prefix_rows} constraints, {} inputs and {} aux variables",
                    prefix.num_inputs, prefix.num_aux
                )));
            }
        }
        let [mut a, mut b, mut c] = prefix.matrices().map(|m| m.first_rows(prefix_rows));
        let (mut inputs, mut aux) = (prefix.num_inputs, prefix.num_aux);
        for part in parts {
            let shift = VariableShift {
                prefix_inputs: u32_count(prefix.num_inputs)?,
                prefix_aux: u32_count(prefix.num_aux)?,
                input_offset: u32_count(inputs)?,
                aux_offset: u32_count(aux)?,
            };
            let own_rows = prefix_rows..part.circuit_rows();
            for (joined, own) in [&mut a, &mut b, &mut c].into_iter().zip(part.matrices()) {
                joined.append_rows(own, own_rows.clone(), shift);
            }
            inputs += part.num_inputs - prefix.num_inputs;
            aux += part.num_aux - prefix.num_aux;
        }
        u32_count(inputs)?;
        u32_count(aux)?;
        // The per-input constraints close the whole circuit, as recording adds them.
        for input in 0..inputs {
            a.push_unit_input_row(input);
            b.push_empty_row();
            c.push_empty_row();
        }
        Ok(CircuitShape::from_matrices(inputs, aux, [a, b, c]))
    }

    /// Constraints the circuit itself made (the per-input ones left out).
    fn circuit_rows(&self) -> usize {
        self.num_constraints() - self.num_inputs
    }
}

/// A variable count as the matrices store it (31 bits, the top one marks aux).
fn u32_count(count: usize) -> Result<u32, Error> {
    u32::try_from(count)
        .ok()
        .filter(|&n| n < 1 << 31)
        .ok_or_else(|| Error::ShapeMismatch(format!("{count} variables do not fit 31-bit columns")))
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;

    use crate::synthesis::{CircuitShape, WitnessAssignment};
    use crate::Error;

    /// A shared beginning (an input and an aux variable, a constraint with
    /// constant 7), then per step an input, two aux variables and
    /// constraints over the shared variables and the step's own, with
    /// constants that repeat across steps and some new to each.
    struct Steps(Vec<u64>);

    impl Circuit<Scalar> for Steps {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(2u64)))?;
            let w = cs.alloc(|| "w", || Ok(Scalar::from(14u64)))?;
            cs.enforce(
                || "7x = w",
                |lc| lc + (Scalar::from(7u64), x),
                |lc| lc + CS::one(),
                |lc| lc + w,
            );
            for k in self.0 {
                let c = Scalar::from(k);
                let i = cs.alloc_input(|| "i", || Ok(Scalar::from(2 * k)))?;
                let u = cs.alloc(|| "u", || Ok(c * Scalar::from(28u64)))?;
                let v = cs.alloc(|| "v", || Ok(Scalar::from(4u64)))?;
                cs.enforce(|| "k x * w = u", |lc| lc + (c, x), |lc| lc + w, |lc| lc + u);
                cs.enforce(|| "x * x = v", |lc| lc + x, |lc| lc + x, |lc| lc + v);
                cs.enforce(
                    || "k x * 1 = i",
                    |lc| lc + (c, x),
                    |lc| lc + CS::one(),
                    |lc| lc + i,
                );
                cs.enforce(
                    || "(3v + u) * 0 = 0",
                    |lc| lc + (Scalar::from(3u64), v) + u,
                    |lc| lc,
                    |lc| lc,
                );
            }
            Ok(())
        }
    }

    fn record_parts(runs: &[&[u64]]) -> (CircuitShape, Vec<CircuitShape>) {
        let prefix = CircuitShape::record(Steps(vec![])).unwrap();
        let parts = runs
            .iter()
            .map(|run| CircuitShape::record(Steps(run.to_vec())).unwrap())
            .collect();
        (prefix, parts)
    }

    #[test]
    fn parts_join_into_the_whole_circuits_shape() {
        let cases: [&[&[u64]]; 5] = [
            &[],
            &[&[5, 9, 1]],
            &[&[5], &[9, 5], &[1]],
            &[&[11, 12], &[12, 13, 11], &[], &[14]],
            &[&[1], &[1], &[1]],
        ];
        for runs in cases {
            let (prefix, parts) = record_parts(runs);
            let joined = CircuitShape::join_parts(&prefix, &parts).unwrap();
            let whole: Vec<u64> = runs.concat();
            assert_eq!(
                joined,
                CircuitShape::record(Steps(whole.clone())).unwrap(),
                "{runs:?}"
            );

            // The joined witness satisfies the joined shape.
            let witness = |steps: &[u64]| {
                let mut witness = WitnessAssignment::counting();
                Steps(steps.to_vec()).synthesize(&mut witness).unwrap();
                witness
            };
            let witness_parts = runs.iter().map(|run| witness(run)).collect();
            let joined_witness =
                WitnessAssignment::join_parts(witness(&[]), witness_parts).unwrap();
            joined.assign(joined_witness).unwrap();
        }
    }

    #[test]
    fn a_part_that_does_not_begin_with_the_prefix_is_refused() {
        let (_, parts) = record_parts(&[&[3], &[4]]);
        // A "prefix" with one step more than the parts share.
        let prefix = CircuitShape::record(Steps(vec![3])).unwrap();
        let refused = CircuitShape::join_parts(&prefix, &parts);
        assert!(
            matches!(&refused, Err(Error::ShapeMismatch(m)) if m.contains("part 1")),
            "{refused:?}"
        );
    }
}
