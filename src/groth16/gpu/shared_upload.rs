//! One split vector's dense scalars uploaded once to a device for every MSM
//! there that takes all of them. b's scalars serve b_g1 and b_g2 (and a's,
//! where a's split is b's): each MSM copied the same vector over the bus
//! on its own before, 512 MiB at 2^24 scalars, both at the proof's start
//! while the GPU had nothing else to run.

use std::sync::OnceLock;
use std::time::Instant;

use super::split::{GeneralScalars, SplitScalars};
use crate::backend::cuda::DeviceScalars;
use crate::device::DeviceGuard;

/// The device copy of one split's dense scalars, made by the first lane
/// that asks; the others wait for it.
#[derive(Default)]
pub(super) struct SharedUpload(OnceLock<Upload>);

struct Upload {
    /// The split the copy was made from (its address, while the lanes
    /// borrow it): another split never gets this one's scalars.
    source: usize,
    /// None where the split is not dense or the upload failed.
    scalars: Option<DeviceScalars>,
}

impl SharedUpload {
    /// `split`'s dense scalars on the guard's device: uploaded here by the
    /// first caller, waited for by the others. None where they are not
    /// dense, the upload failed (each MSM then copies its scalars itself,
    /// as without this) or this holds another split's.
    pub fn scalars(&self, guard: &DeviceGuard<'_>, split: &SplitScalars) -> Option<&DeviceScalars> {
        let source = split as *const SplitScalars as usize;
        let upload = self.0.get_or_init(|| Upload {
            source,
            scalars: upload_dense(guard, split),
        });
        if upload.source != source {
            return None;
        }
        upload.scalars.as_ref()
    }
}

fn upload_dense(guard: &DeviceGuard<'_>, split: &SplitScalars) -> Option<DeviceScalars> {
    let GeneralScalars::Dense(values) = &split.general else {
        return None;
    };
    let started = Instant::now();
    let uploaded = DeviceScalars::upload(guard, values, values.len())
        .map_err(|error| log::warn!("scalars not shared between MSMs: {error}"))
        .ok()?;
    log::debug!(
        "{} scalars uploaded once for their MSMs in {:.1} ms",
        values.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    Some(uploaded)
}
