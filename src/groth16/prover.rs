use std::time::{Duration, Instant};

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use group::{prime::PrimeCurveAffine, Curve};

use super::Proof;
use crate::backend::cpu::{compute_h, msm, msm_with_density, Domain};
use crate::params::ProvingKey;
use crate::synthesis::Assignment;
use crate::Error;

fn expect_len(query: &'static str, available: usize, needed: usize) -> Result<(), Error> {
    if available == needed {
        Ok(())
    } else {
        Err(Error::KeyMismatch {
            query,
            needed,
            available,
        })
    }
}

/// Checks that every query of `key` has exactly the points the assignment's
/// circuit needs: a key made for another circuit would give a wrong proof.
pub fn check_key_fits(key: &ProvingKey, assignment: &Assignment) -> Result<(), Error> {
    let n = assignment.num_constraints();
    if assignment.b.len() != n || assignment.c.len() != n {
        return Err(Error::ShapeMismatch(
            "A, B and C evaluations differ in length".into(),
        ));
    }
    let domain = Domain::new(n)?;
    let inputs = assignment.input.len();
    let b_points = assignment.b_input_density.total() + assignment.b_aux_density.total();
    expect_len("ic", key.vk.ic.len(), inputs)?;
    expect_len("h", key.h.len(), domain.size() - 1)?;
    expect_len("l", key.l.len(), assignment.aux.len())?;
    expect_len("a", key.a.len(), inputs + assignment.a_aux_density.total())?;
    expect_len("b_g1", key.b_g1.len(), b_points)?;
    expect_len("b_g2", key.b_g2.len(), b_points)
}

/// Where one proof's time went, stage by stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// The H polynomial: three inverse NTTs, three coset NTTs, one inverse coset NTT.
    pub h_polynomial: Duration,
    /// MSM over the h query.
    pub msm_h: Duration,
    /// MSM over the l query.
    pub msm_l: Duration,
    /// MSMs over the a query (inputs and aux).
    pub msm_a: Duration,
    /// MSMs over the b_g1 query.
    pub msm_b_g1: Duration,
    /// MSMs over the b_g2 query.
    pub msm_b_g2: Duration,
    /// Combining the MSMs with r, s and the verifying key.
    pub assembly: Duration,
}

/// Stage by stage, for totals over several proofs.
impl std::ops::AddAssign for StageTimes {
    fn add_assign(&mut self, other: Self) {
        self.h_polynomial += other.h_polynomial;
        self.msm_h += other.msm_h;
        self.msm_l += other.msm_l;
        self.msm_a += other.msm_a;
        self.msm_b_g1 += other.msm_b_g1;
        self.msm_b_g2 += other.msm_b_g2;
        self.assembly += other.assembly;
    }
}

/// Runs `f`, adding its wall time to `slot`.
fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    *slot += start.elapsed();
    out
}

/// Proves one synthesized circuit on the CPU with the given `r` and `s`.
pub fn prove(
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, Error> {
    prove_timed(key, assignment, r, s).map(|(proof, _)| proof)
}

/// [`prove`], also returning the time of each stage.
pub fn prove_timed(
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, StageTimes), Error> {
    check_key_fits(key, assignment)?;
    let vk = &key.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(SynthesisError::UnexpectedIdentity.into());
    }
    let mut t = StageTimes::default();
    let domain = Domain::new(assignment.num_constraints())?;
    let h_coeffs = timed(&mut t.h_polynomial, || {
        compute_h(&domain, &assignment.a, &assignment.b, &assignment.c)
    });

    let (input, aux) = (&assignment.input, &assignment.aux);
    let h = timed(&mut t.msm_h, || msm(&key.h, &h_coeffs))?;
    let l = timed(&mut t.msm_l, || msm(&key.l, aux))?;
    let (a_input_bases, a_aux_bases) = key.a.split_at(input.len());
    let a = timed(&mut t.msm_a, || -> Result<_, Error> {
        Ok(msm(a_input_bases, input)?
            + msm_with_density(a_aux_bases, &assignment.a_aux_density, aux)?)
    })?;
    let b_inputs = assignment.b_input_density.total();
    let (b1_input_bases, b1_aux_bases) = key.b_g1.split_at(b_inputs);
    let b_g1 = timed(&mut t.msm_b_g1, || -> Result<_, Error> {
        Ok(
            msm_with_density(b1_input_bases, &assignment.b_input_density, input)?
                + msm_with_density(b1_aux_bases, &assignment.b_aux_density, aux)?,
        )
    })?;
    let (b2_input_bases, b2_aux_bases) = key.b_g2.split_at(b_inputs);
    let b_g2 = timed(&mut t.msm_b_g2, || -> Result<_, Error> {
        Ok(
            msm_with_density(b2_input_bases, &assignment.b_input_density, input)?
                + msm_with_density(b2_aux_bases, &assignment.b_aux_density, aux)?,
        )
    })?;

    let proof = timed(&mut t.assembly, || {
        // A = α + a + rδ, B = β + b + sδ, C = h + l + sA + rB₁ - rsδ, expanded.
        let proof_a = vk.delta_g1 * r + vk.alpha_g1 + a;
        let proof_b = vk.delta_g2 * s + vk.beta_g2 + b_g2;
        let proof_c =
            a * s + b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + h + l;
        Proof {
            a: proof_a.to_affine(),
            b: proof_b.to_affine(),
            c: proof_c.to_affine(),
        }
    });
    Ok((proof, t))
}

/// Proves several synthesized circuits, one `r` and `s` each.
pub fn prove_batch(
    key: &ProvingKey,
    assignments: &[Assignment],
    r_s: &[Scalar],
    s_s: &[Scalar],
) -> Result<Vec<Proof>, Error> {
    check_batch_lengths(assignments.len(), r_s.len(), s_s.len())?;
    // Each proof's MSMs already use every core; proving the batch in
    // parallel too would only add memory.
    assignments
        .iter()
        .zip(r_s.iter().zip(s_s))
        .map(|(assignment, (r, s))| prove(key, assignment, *r, *s))
        .collect()
}

/// One `r` and one `s` per circuit.
pub(crate) fn check_batch_lengths(circuits: usize, r: usize, s: usize) -> Result<(), Error> {
    if circuits == r && circuits == s {
        Ok(())
    } else {
        Err(Error::InvalidBatch(format!(
            "{circuits} circuits, {r} r values, {s} s values"
        )))
    }
}
