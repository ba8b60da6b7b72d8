//! Proving keys of Filecoin's circuits: found where filecoin-proofs looks
//! for them (its parameter cache, by the circuit's cache identifier), read
//! once and kept for the next call of the same circuit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use storage_proofs_core::parameter_cache::parameter_cache_params_path;

use super::FilecoinError;
use crate::params::{CheckMode, ProvingKey};
use crate::Error;

/// Keys read so far, by `.params` path; each entry has its own lock, so two
/// calls for one circuit read its file once and calls for others go on.
type KeyCache = Mutex<HashMap<PathBuf, Arc<Mutex<Option<Arc<ProvingKey>>>>>>;

fn key_cache() -> &'static KeyCache {
    static KEYS: OnceLock<KeyCache> = OnceLock::new();
    KEYS.get_or_init(Default::default)
}

/// Where filecoin-proofs looks for the `.params` file of the circuit whose
/// parameter cache identifier is `cache_id` (under its parameter cache
/// folder, `FIL_PROOFS_PARAMETER_CACHE` as filecoin-proofs reads it).
pub fn params_path(cache_id: &str) -> PathBuf {
    parameter_cache_params_path(cache_id)
}

/// The proving key of circuit `cache_id`, read from filecoin-proofs'
/// parameter cache on first use and kept for later calls (until
/// [`clear_key_cache`]).
pub(crate) fn proving_key(cache_id: &str) -> Result<Arc<ProvingKey>, Error> {
    let path = params_path(cache_id);
    let entry = key_cache().lock().entry(path.clone()).or_default().clone();
    let mut slot = entry.lock();
    if let Some(key) = slot.as_ref() {
        return Ok(key.clone());
    }
    let key = Arc::new(read_key(cache_id, &path)?);
    *slot = Some(key.clone());
    Ok(key)
}

fn read_key(cache_id: &str, path: &Path) -> Result<ProvingKey, Error> {
    if !path.is_file() {
        return Err(FilecoinError::MissingParameters {
            circuit: cache_id.to_string(),
            path: path.to_path_buf(),
        }
        .into());
    }
    let started = std::time::Instant::now();
    let key = ProvingKey::read_file(path, CheckMode::OnCurve).map_err(|source| {
        FilecoinError::Parameters {
            path: path.to_path_buf(),
            source,
        }
    })?;
    log::info!(
        "read {} in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(key)
}

/// Drops every kept proving key (a 32 GiB sector's PoRep key holds tens of
/// GB of host memory); the next call reads its key again.
pub fn clear_key_cache() {
    key_cache().lock().clear();
}
