use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::host_pools::{copy_pool, parallel_copy, run_on};

/// The variables a [`WitnessAssignment`] hands out.
const PLACEHOLDER_AUX: Variable = Variable(Index::Aux(0));
const PLACEHOLDER_INPUT: Variable = Variable(Index::Input(0));

/// A witness-only constraint system: records variable values and never builds
/// a linear combination (enforce's closures are not called). Used with a
/// recorded [`CircuitShape`](super::CircuitShape), which supplies the constraints.
///
/// Every variable it hands out is the same placeholder (one for aux
/// variables, one for inputs). Nothing reads them here, and the linear
/// combinations that gadgets build outside `enforce` (SHA-256's additions,
/// bit packing) then stay one term long instead of growing, re-sorting and
/// being scaled term by term. A circuit must not tell its variables apart
/// by their handles; none of bellpepper's, neptune's or Filecoin's gadgets
/// do, and the shape's satisfaction check refuses a witness that went wrong.
#[derive(Debug, Clone)]
pub struct WitnessAssignment {
    /// Public inputs, the constant one first.
    pub input: Vec<Scalar>,
    /// Auxiliary variables.
    pub aux: Vec<Scalar>,
    /// Constraints enforced, when counted: a cheap check against a recorded
    /// shape (`None` for witnesses built elsewhere).
    pub constraints: Option<usize>,
}

/// A witness's values where they lie, borrowed: a [`WitnessAssignment`]'s
/// vectors, or buffers of the caller's (page-locked memory, say, whose copy
/// to a device needs no staging; see
/// [`join_parts_into`](WitnessAssignment::join_parts_into)).
#[derive(Debug, Clone, Copy)]
pub struct WitnessValues<'a> {
    /// Public inputs, the constant one first.
    pub input: &'a [Scalar],
    /// Auxiliary variables.
    pub aux: &'a [Scalar],
    /// Constraints enforced, when counted.
    pub constraints: Option<usize>,
}

impl<'a> From<&'a WitnessAssignment> for WitnessValues<'a> {
    fn from(witness: &'a WitnessAssignment) -> Self {
        Self {
            input: &witness.input,
            aux: &witness.aux,
            constraints: witness.constraints,
        }
    }
}

impl WitnessAssignment {
    /// Bulk witness generation skips `enforce`: the count no longer means anything.
    fn skip_constraint_count(&mut self) {
        self.constraints = None;
    }

    /// An empty witness (the constant one allocated) that counts constraints.
    pub fn counting() -> Self {
        Self {
            constraints: Some(0),
            ..Self::default()
        }
    }

    /// [`counting`](Self::counting), with room for the given numbers of
    /// inputs and aux variables: a witness of known size then grows without
    /// copying itself (or faulting in pages twice) as it doubles.
    pub fn counting_with_capacity(inputs: usize, aux: usize) -> Self {
        let mut witness = Self::counting();
        witness
            .input
            .reserve(inputs.saturating_sub(witness.input.len()));
        witness.aux.reserve(aux);
        super::huge_pages::advise(witness.aux.spare_capacity_mut());
        witness
    }
}

impl WitnessAssignment {
    /// One witness from parts synthesized apart (on separate threads, say):
    /// each part was synthesized from an empty witness through the same
    /// shared beginning as `prefix` (a circuit's common variables, allocated
    /// again in every part), then its own share. The result holds the
    /// prefix's variables once and then each part's own, in order: the
    /// witness one synthesis of the parts in sequence makes. A part that
    /// does not begin with the prefix's values is an error. Constraint
    /// counts add up, the prefix's counted once, where every one is counted.
    ///
    /// ```
    /// use bellpepper_core::ConstraintSystem;
    /// use blstrs::Scalar;
    /// use groth16_gpu::synthesis::WitnessAssignment;
    /// let part = |own: u64| {
    ///     let mut w = WitnessAssignment::counting();
    ///     w.alloc(|| "shared", || Ok(Scalar::from(7u64))).unwrap();
    ///     w.alloc(|| "own", || Ok(Scalar::from(own))).unwrap();
    ///     w
    /// };
    /// let mut prefix = WitnessAssignment::counting();
    /// prefix.alloc(|| "shared", || Ok(Scalar::from(7u64))).unwrap();
    /// let joined = WitnessAssignment::join_parts(prefix, vec![part(1), part(2)])?;
    /// assert_eq!(joined.aux, [7u64, 1, 2].map(Scalar::from));
    /// # Ok::<(), groth16_gpu::Error>(())
    /// ```
    pub fn join_parts(
        prefix: WitnessAssignment,
        parts: Vec<WitnessAssignment>,
    ) -> Result<WitnessAssignment, crate::Error> {
        check_prefixes(&prefix, &parts)?;
        let (inputs, aux) = (prefix.input.len(), prefix.aux.len());
        let mut joined = prefix;
        let own_inputs: Vec<&[Scalar]> = parts.iter().map(|p| &p.input[inputs..]).collect();
        let own_aux: Vec<&[Scalar]> = parts.iter().map(|p| &p.aux[aux..]).collect();
        append_in_parallel(&mut joined.input, &own_inputs);
        append_in_parallel(&mut joined.aux, &own_aux);
        joined.constraints = joined_constraints(joined.constraints, &parts);
        Ok(joined)
    }

    /// [`join_parts`](Self::join_parts) with the joined aux values written
    /// to the front of `aux_out` (page-locked memory, say, reused from one
    /// witness to the next) instead of a new vector: the result holds the
    /// inputs, how many aux values were written and the constraint count;
    /// [`JoinedInto::values`] pairs them with the buffer again. An `aux_out`
    /// too short for the joined aux values is an error.
    pub fn join_parts_into(
        prefix: WitnessAssignment,
        parts: Vec<WitnessAssignment>,
        aux_out: &mut [Scalar],
    ) -> Result<JoinedInto, crate::Error> {
        check_prefixes(&prefix, &parts)?;
        let (inputs, aux) = (prefix.input.len(), prefix.aux.len());
        // The prefix's aux values once, then each part's own.
        let aux_pieces: Vec<&[Scalar]> = std::iter::once(&prefix.aux[..])
            .chain(parts.iter().map(|p| &p.aux[aux..]))
            .collect();
        let aux_len: usize = aux_pieces.iter().map(|piece| piece.len()).sum();
        if aux_out.len() < aux_len {
            return Err(crate::Error::ShapeMismatch(format!(
                "{aux_len} joined aux values do not fit a buffer of {}",
                aux_out.len()
            )));
        }
        copy_in_parallel(&mut aux_out[..aux_len], &aux_pieces);
        let mut input = prefix.input;
        let own_inputs: Vec<&[Scalar]> = parts.iter().map(|p| &p.input[inputs..]).collect();
        append_in_parallel(&mut input, &own_inputs);
        Ok(JoinedInto {
            input,
            aux_len,
            constraints: joined_constraints(prefix.constraints, &parts),
        })
    }
}

/// A witness joined into the caller's aux buffer
/// ([`WitnessAssignment::join_parts_into`]): its inputs, how many of the
/// buffer's values are its aux values, and its constraint count.
#[derive(Debug, Clone)]
pub struct JoinedInto {
    /// Public inputs, the constant one first.
    pub input: Vec<Scalar>,
    /// The aux values: the buffer's first `aux_len`.
    pub aux_len: usize,
    /// Constraints enforced, when counted.
    pub constraints: Option<usize>,
}

impl JoinedInto {
    /// The witness, its aux values read from `aux_out`, the buffer it was
    /// joined into.
    pub fn values<'a>(&'a self, aux_out: &'a [Scalar]) -> WitnessValues<'a> {
        WitnessValues {
            input: &self.input,
            aux: &aux_out[..self.aux_len.min(aux_out.len())],
            constraints: self.constraints,
        }
    }
}

/// Err unless every part begins with `prefix`'s inputs and aux values.
fn check_prefixes(
    prefix: &WitnessAssignment,
    parts: &[WitnessAssignment],
) -> Result<(), crate::Error> {
    let (inputs, aux) = (prefix.input.len(), prefix.aux.len());
    for (k, part) in parts.iter().enumerate() {
        let begins_alike = part.input.get(..inputs) == Some(&prefix.input[..])
            && part.aux.get(..aux) == Some(&prefix.aux[..]);
        if !begins_alike {
            return Err(crate::Error::ShapeMismatch(format!(
                "witness part {k} does not begin with the shared prefix's {inputs} inputs and {aux} aux values"
            )));
        }
    }
    Ok(())
}

/// The joined constraint count: the parts' added up, the prefix's
/// (`shared`) counted once; None unless every one is counted.
fn joined_constraints(shared: Option<usize>, parts: &[WitnessAssignment]) -> Option<usize> {
    let mut total = shared;
    for part in parts {
        total = match (total, part.constraints, shared) {
            (Some(total), Some(n), Some(shared)) => Some(total + n - shared),
            _ => None,
        };
    }
    total
}

/// Appends `pieces` in order to `values`, copying over every core: a
/// production partition's aux values are GBs, one thread's copy seconds.
fn append_in_parallel(values: &mut Vec<Scalar>, pieces: &[&[Scalar]]) {
    let start = values.len();
    let total: usize = pieces.iter().map(|piece| piece.len()).sum();
    values.reserve_exact(total);
    super::huge_pages::advise(values.spare_capacity_mut());
    // Indexed: rayon writes the zeros in place, in parallel (pages faulted in there too).
    values.par_extend(rayon::iter::repeat_n(Scalar::ZERO, total));
    copy_in_parallel(&mut values[start..], pieces);
}

/// Copies `pieces` in order to the front of `to` on the copy threads:
/// a caller joining one witness while it synthesizes the next on rayon's
/// pool would otherwise wait for those tasks (see [`copy_pool`]).
fn copy_in_parallel(to: &mut [Scalar], pieces: &[&[Scalar]]) {
    run_on(copy_pool(), || {
        let mut rest = to;
        for piece in pieces {
            let (slot, tail) = rest.split_at_mut(piece.len());
            parallel_copy(slot, piece);
            rest = tail;
        }
    })
}

impl Default for WitnessAssignment {
    fn default() -> Self {
        Self {
            input: vec![Scalar::ONE],
            aux: Vec::new(),
            constraints: None,
        }
    }
}

impl ConstraintSystem<Scalar> for WitnessAssignment {
    type Root = Self;

    /// An empty, counting system: no constant one, as bellperson's
    /// `ProvingAssignment::new()`. Circuits that synthesize parts in
    /// sub-systems (WindowPoSt) allocate the sub-system's one themselves,
    /// and [`extend`](ConstraintSystem::extend) drops it.
    fn new() -> Self {
        Self {
            input: Vec::new(),
            aux: Vec::new(),
            constraints: Some(0),
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(PLACEHOLDER_AUX)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        Ok(PLACEHOLDER_INPUT)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if let Some(n) = self.constraints.as_mut() {
            *n += 1;
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        match (self.constraints.as_mut(), other.constraints) {
            (Some(n), Some(m)) => *n += m,
            // An uncounted part leaves the whole uncounted.
            (_, None) => self.skip_constraint_count(),
            (None, Some(_)) => {}
        }
        self.input
            .extend_from_slice(other.input.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.skip_constraint_count();
        self.input.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.skip_constraint_count();
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.skip_constraint_count();
        let aux_start = self.aux.len();
        let input_start = self.input.len();
        self.aux.resize(aux_start + aux_n, Scalar::ZERO);
        self.input.resize(input_start + inputs_n, Scalar::ZERO);
        (&mut self.aux[aux_start..], &mut self.input[input_start..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.skip_constraint_count();
        let start = self.input.len();
        self.input.resize(start + n, Scalar::ZERO);
        &mut self.input[start..]
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.skip_constraint_count();
        let start = self.aux.len();
        self.aux.resize(start + n, Scalar::ZERO);
        &mut self.aux[start..]
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.input
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared beginning (an input and two aux values), then `shares`,
    /// each adding aux values, an input and a constraint.
    fn synthesize(cs: &mut WitnessAssignment, shares: &[u64]) {
        cs.alloc_input(|| "common input", || Ok(Scalar::from(3u64)))
            .unwrap();
        for v in [5u64, 6] {
            cs.alloc(|| "common", || Ok(Scalar::from(v))).unwrap();
        }
        cs.enforce(|| "common", |lc| lc, |lc| lc, |lc| lc);
        for &share in shares {
            cs.alloc(|| "own", || Ok(Scalar::from(share))).unwrap();
            cs.alloc(|| "own square", || Ok(Scalar::from(share * share)))
                .unwrap();
            cs.alloc_input(|| "own input", || Ok(Scalar::from(share + 100)))
                .unwrap();
            cs.enforce(|| "own", |lc| lc, |lc| lc, |lc| lc);
        }
    }

    fn witness_of(shares: &[u64]) -> WitnessAssignment {
        let mut w = WitnessAssignment::counting();
        synthesize(&mut w, shares);
        w
    }

    #[test]
    fn parts_join_into_the_sequential_witness() {
        let shares = [1u64, 2, 3, 4, 5];
        let sequential = witness_of(&shares);
        // Uneven parts, an empty one among them.
        let parts = vec![
            witness_of(&shares[..2]),
            witness_of(&[]),
            witness_of(&shares[2..3]),
            witness_of(&shares[3..]),
        ];
        let joined = WitnessAssignment::join_parts(witness_of(&[]), parts).unwrap();
        assert_eq!(joined.input, sequential.input);
        assert_eq!(joined.aux, sequential.aux);
        assert_eq!(joined.constraints, sequential.constraints);
        let one_part = WitnessAssignment::join_parts(witness_of(&[]), vec![sequential.clone()]);
        assert_eq!(one_part.unwrap().aux, sequential.aux);
    }

    #[test]
    fn a_part_with_another_beginning_is_refused() {
        let mut other = WitnessAssignment::counting();
        other
            .alloc_input(|| "x", || Ok(Scalar::from(4u64)))
            .unwrap();
        let error = WitnessAssignment::join_parts(witness_of(&[]), vec![witness_of(&[1]), other]);
        assert!(error.unwrap_err().to_string().contains("part 1"));
        let short = WitnessAssignment::counting();
        assert!(WitnessAssignment::join_parts(witness_of(&[]), vec![short]).is_err());
    }

    #[test]
    fn an_uncounted_part_leaves_the_joined_count_unknown() {
        let mut uncounted = witness_of(&[7]);
        uncounted.constraints = None;
        let joined =
            WitnessAssignment::join_parts(witness_of(&[]), vec![witness_of(&[1]), uncounted]);
        assert_eq!(joined.unwrap().constraints, None);
    }

    #[test]
    fn parts_join_into_a_buffer_as_into_a_new_witness() {
        let shares = [1u64, 2, 3, 4, 5];
        let sequential = witness_of(&shares);
        let parts = || {
            vec![
                witness_of(&shares[..2]),
                witness_of(&[]),
                witness_of(&shares[2..]),
            ]
        };
        // Room to spare: the values past the joined ones are left alone.
        let sentinel = Scalar::from(99u64);
        let mut buffer = vec![sentinel; sequential.aux.len() + 3];
        let joined =
            WitnessAssignment::join_parts_into(witness_of(&[]), parts(), &mut buffer).unwrap();
        let values = joined.values(&buffer);
        assert_eq!(values.input, &sequential.input[..]);
        assert_eq!(values.aux, &sequential.aux[..]);
        assert_eq!(values.constraints, sequential.constraints);
        assert!(buffer[sequential.aux.len()..]
            .iter()
            .all(|v| *v == sentinel));
        let whole = WitnessValues::from(&sequential);
        assert_eq!((whole.input, whole.aux), (values.input, values.aux));
        // Exactly the room needed, then one value short.
        let mut exact = vec![Scalar::ZERO; sequential.aux.len()];
        WitnessAssignment::join_parts_into(witness_of(&[]), parts(), &mut exact).unwrap();
        assert_eq!(exact, sequential.aux);
        let mut short = vec![Scalar::ZERO; sequential.aux.len() - 1];
        let error = WitnessAssignment::join_parts_into(witness_of(&[]), parts(), &mut short);
        assert!(error.unwrap_err().to_string().contains("do not fit"));
        let mut other = WitnessAssignment::counting();
        other.alloc(|| "x", || Ok(Scalar::from(4u64))).unwrap();
        let refused = WitnessAssignment::join_parts_into(witness_of(&[]), vec![other], &mut buffer);
        assert!(refused.unwrap_err().to_string().contains("part 0"));
    }
}
