//! A proof's lanes on the device: the H lane (the H polynomial, then h)
//! and the L, G1 and G2 MSM lanes, each a thread with its own streams that
//! starts as soon as its own input has arrived, and the shares of the MSMs
//! when a proof is split over several devices.

use std::sync::mpsc::Receiver;
use std::sync::OnceLock;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective};
use group::Group;

use super::arrivals::ScalarArrivals;
use super::division::{base_range, cost, plan, share_cost, GeneralPart};
use super::resident_key::ResidentKey;
use super::split::SplitScalars;
use crate::backend::cpu::Domain;
use crate::backend::cuda::{GpuCurve, HInputs, ResidentBases};
use crate::device::{Device, DeviceGuard, GpuError};
use crate::groth16::prover::{timed, MsmSums, StageTimes};
use crate::Error;

/// The sums a proof's lanes computed and their stage times.
pub(super) type WorkerResult = Result<(MsmSums, StageTimes), Error>;

/// Where a proof's GPU work runs: one entry per device, with the key
/// resident there. The first device also runs the H lane (the H
/// polynomial, then h); every device runs an L lane (its part of l), a G1
/// lane (its parts of a and b_g1) and a G2 lane (its part of b_g2), as
/// `division::plan` deals them out. l has a lane of its own so that the
/// lanes end together: with l, a and b_g1 in one lane, that lane ran on
/// alone for the last ~20 ms of a 2^20 proof. Each lane is a thread with
/// its own streams, started before the host has finished its part: the H
/// lane needs only a, b, c and the others only the split scalars, so each
/// waits for its own input alone.
pub(super) struct Placement<'k> {
    pub(super) devices: Vec<(Device, &'k ResidentKey)>,
}

/// One device's part of the l, a, b_g1 and b_g2 MSMs, its lanes' times,
/// and when its last lane finished (after the upload).
type DevicePart = (
    (G1Projective, G1Projective, G1Projective),
    G2Projective,
    StageTimes,
    Duration,
);

/// Runs the lanes; the stage times they report overlap (a stage split over
/// devices reports its longest part). The H lane starts once a, b, c have
/// landed. On one device every MSM is whole there, and each MSM lane starts
/// as soon as its own scalars arrive; over several, the shares are planned
/// from all three vectors' costs, so the lanes start once the split ends.
pub(super) fn run_lanes(
    placement: Placement<'_>,
    domain: &Domain,
    inputs: Receiver<HInputs>,
    scalars: &ScalarArrivals,
) -> WorkerResult {
    let (h_device, h_key) = (placement.devices[0].0.duplicate()?, placement.devices[0].1);
    let origin = Instant::now();
    let h_began = OnceLock::new();
    let lanes = std::thread::scope(|scope| {
        let h_began_at = &h_began;
        let h = scope.spawn(move || {
            let Ok(inputs) = inputs.recv() else {
                return Err(Error::from(GpuError::Native(
                    "a proof's a, b, c did not reach the device".into(),
                )));
            };
            let _ = h_began_at.set(Instant::now());
            on_lane(h_device, "H", origin, |guard| -> Result<_, Error> {
                let mut t = StageTimes::default();
                let (h_coeffs, _) = timed(&mut t.h_polynomial, || inputs.compute(guard, domain))?;
                let h = timed(&mut t.msm_h, || {
                    h_key
                        .h
                        .msm_device_scalars(guard, &h_coeffs, domain.size() - 1)
                })?
                .0;
                Ok((h, t))
            })
            .map(|(h_lane, _)| h_lane)
        });
        let plan = if placement.devices.len() == 1 {
            SharePlan::whole()
        } else {
            match plan_shares(
                placement.devices.len(),
                domain,
                h_key,
                &h_began,
                scalars,
                origin,
            ) {
                Some(plan) => plan,
                None => {
                    let _ = join_lane(h);
                    return Err(Error::from(split_failed()));
                }
            }
        };
        let mut parts = Vec::with_capacity(placement.devices.len());
        for ((device, key), share) in placement.devices.iter().zip(&plan.shares) {
            let key: &ResidentKey = key;
            let [l_share, a_share, b_g1_share, b_g2_share] =
                [share[0], share[1], share[2], share[3]];
            let l = msm_lane(scope, device, "L", origin, move |guard, t| {
                let l = arrived(scalars.l())?;
                timed(&mut t.msm_l, || part_msm(guard, &key.l, l, l_share))
            });
            // b_g1 then a, one after the other (b arrives first): a lane each
            // measured no faster (2^20 and 2^22, one H200) and holds one more
            // MSM's scratch.
            let g1 = msm_lane(scope, device, "G1", origin, move |guard, t| {
                let b = arrived(scalars.b())?;
                let b_g1 = timed(&mut t.msm_b_g1, || {
                    part_msm(guard, &key.b_g1, b, b_g1_share)
                })?;
                let a = arrived(scalars.a())?;
                let a = timed(&mut t.msm_a, || part_msm(guard, &key.a, a, a_share))?;
                Ok((a, b_g1))
            });
            let g2 = msm_lane(scope, device, "G2", origin, move |guard, t| {
                let b = arrived(scalars.b())?;
                timed(&mut t.msm_b_g2, || {
                    part_msm(guard, &key.b_g2, b, b_g2_share)
                })
            });
            parts.push((l, g1, g2));
        }
        let h = join_lane(h);
        let parts: Vec<Result<DevicePart, Error>> = parts
            .into_iter()
            .map(|(l, g1, g2)| {
                let (l, g1, g2) = (join_lane(l), join_lane(g1), join_lane(g2));
                let ((l, mut t), l_end) = l?;
                let (((a, b_g1), t_g1), g1_end) = g1?;
                let ((b_g2, t_g2), g2_end) = g2?;
                t += t_g1;
                t += t_g2;
                Ok(((l, a, b_g1), b_g2, t, l_end.max(g1_end).max(g2_end)))
            })
            .collect();
        Ok((h, parts, plan))
    });
    let (h_lane, parts, plan) = lanes?;
    let (h, mut times) = h_lane?;
    let mut sums = MsmSums {
        h,
        l: G1Projective::identity(),
        a: G1Projective::identity(),
        b_g1: G1Projective::identity(),
        b_g2: G2Projective::identity(),
    };
    let mut part_times = StageTimes::default();
    let mut rates = Vec::new();
    for (d, part) in parts.into_iter().enumerate() {
        let ((l, a, b_g1), b_g2, t, finished) = part?;
        // Devices without the H lane worked on their shares alone.
        let busy = finished.saturating_sub(plan.planned).as_secs_f64();
        if d > 0 && busy > 0.0 {
            rates.push(share_cost(&plan.shares[d], &plan.costs) / busy);
        }
        sums.l += l;
        sums.a += a;
        sums.b_g1 += b_g1;
        sums.b_g2 += b_g2;
        part_times.keep_longer(&t);
    }
    if !rates.is_empty() {
        h_key
            .split_rate
            .set(rates.iter().sum::<f64>() / rates.len() as f64);
    }
    times += part_times;
    Ok((sums, times))
}

/// How the l, a, b_g1 and b_g2 MSMs are dealt out over the devices: each
/// device's share of each (`division::plan`), the costs they were planned
/// from, and when, after the lanes' start.
struct SharePlan {
    shares: Vec<Vec<(f64, f64)>>,
    costs: [f64; 4],
    planned: Duration,
}

impl SharePlan {
    /// Every MSM whole on one device: nothing to wait for.
    fn whole() -> Self {
        Self {
            shares: plan(1, 0.0, &[0.0; 4]),
            costs: [0.0; 4],
            planned: Duration::ZERO,
        }
    }
}

/// The shares over `devices` once all the split scalars have arrived (None:
/// the split failed). The H lane may have been running alone since a, b, c
/// landed: at the rate measured last time, part of its work is done.
fn plan_shares(
    devices: usize,
    domain: &Domain,
    h_key: &ResidentKey,
    h_began: &OnceLock<Instant>,
    scalars: &ScalarArrivals,
    origin: Instant,
) -> Option<SharePlan> {
    let (b, a, l) = (scalars.b()?, scalars.a()?, scalars.l()?);
    let planned = origin.elapsed();
    let h_cost = domain.size() as f64 * cost::H_DOMAIN_POINT;
    let h_ran = h_began
        .get()
        .map_or(0.0, |began| began.elapsed().as_secs_f64());
    let h_left = (h_cost - h_key.split_rate.get() * h_ran).max(0.0);
    let costs = msm_costs(l, a, b);
    let shares = plan(devices, h_left, &costs);
    log::debug!(
        "scalars split {:.3} s after the lanes started; costs H {h_cost:.3e} ({h_left:.3e} left), MSMs {costs:.2?}; shares {shares:.3?}",
        planned.as_secs_f64()
    );
    Some(SharePlan {
        shares,
        costs,
        planned,
    })
}

fn split_failed() -> GpuError {
    GpuError::Native("splitting a proof's scalars failed".into())
}

/// A lane's scalars, or why they never came.
fn arrived(scalars: Option<&SplitScalars>) -> Result<&SplitScalars, GpuError> {
    scalars.ok_or_else(split_failed)
}

/// The device cost of each divided MSM: l, a, b_g1, b_g2, in the order
/// [`plan`] lays them out (G2 last, on the last device).
fn msm_costs(l: &SplitScalars, a: &SplitScalars, b: &SplitScalars) -> [f64; 4] {
    [
        l.cost(cost::G1_GENERAL, cost::G1_ONE),
        a.cost(cost::G1_GENERAL, cost::G1_ONE),
        b.cost(cost::G1_GENERAL, cost::G1_ONE),
        b.cost(cost::G2_GENERAL, cost::G2_ONE),
    ]
}

/// Runs `f` with a guard of its own on a second handle to the caller's
/// device: the backend launches through guards, and the caller holds the
/// real one.
/// Returns `f`'s result with the time the lane ended, after `origin` (when
/// the lanes started, as the host began uploading and splitting), and logs
/// (debug) when it ran: where a split proof's devices wait shows there.
fn on_lane<T>(
    device: Device,
    lane: &str,
    origin: Instant,
    f: impl FnOnce(&DeviceGuard<'_>) -> Result<T, Error>,
) -> Result<(T, Duration), Error> {
    let ordinal = device.ordinal();
    let guard = DeviceGuard::lane(&device);
    let begin = origin.elapsed();
    let result = f(&guard);
    let end = origin.elapsed();
    log::debug!(
        "{lane} lane on GPU {ordinal}: {:.3}..{:.3} s",
        begin.as_secs_f64(),
        end.as_secs_f64()
    );
    result.map(|value| (value, end))
}

/// What a lane of MSM parts returns: its sums and stage times, and when it
/// ended.
type LaneResult<T> = Result<((T, StageTimes), Duration), Error>;

/// A lane of MSM parts on `device`: a thread of its own, started in
/// `scope`, that runs `msm` (which records its stage times) through
/// [`on_lane`].
fn msm_lane<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    device: &Device,
    lane: &'static str,
    origin: Instant,
    msm: impl FnOnce(&DeviceGuard<'_>, &mut StageTimes) -> Result<T, GpuError> + Send + 'scope,
) -> ScopedJoinHandle<'scope, LaneResult<T>> {
    let device = device.duplicate();
    scope.spawn(move || {
        on_lane(device?, lane, origin, |guard| {
            let mut t = StageTimes::default();
            let sum = msm(guard, &mut t)?;
            Ok((sum, t))
        })
    })
}

fn join_lane<T>(lane: ScopedJoinHandle<'_, Result<T, Error>>) -> Result<T, Error> {
    lane.join()
        .map_err(|_| Error::from(GpuError::Native("a proof's GPU lane panicked".into())))?
}

/// Σ scalars·bases over the share `from..to` of one MSM's bases: a bucket
/// MSM over the general scalars plus a batch addition of the bases whose
/// scalar is 1.
fn part_msm<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    bases: &ResidentBases<G>,
    split: &SplitScalars,
    (from, to): (f64, f64),
) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    let (first, end) = base_range(split.len, from, to);
    if first == end {
        return Ok(G::Curve::identity());
    }
    let part = split.part(first, end);
    let mut sum = match part.general {
        // Not staged: the host is synthesizing the next circuit meanwhile.
        GeneralPart::Dense(values) => bases.msm_range_direct(guard, part.first, values)?,
        GeneralPart::Sparse { values, indices } => bases.msm_indexed(guard, values, indices)?,
    };
    if part.any_ones {
        sum += bases.batch_add_range(guard, part.first, part.ones, part.len)?;
    }
    Ok(sum)
}
