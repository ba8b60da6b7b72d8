//! Rayon pools of the prover's own, for host work that must not queue
//! behind the caller's rayon tasks: a prover synthesizing its next circuits
//! on rayon's global pool keeps every worker busy for a second or more a
//! task, and a copy or split sent there waits for them. And the parallel
//! copy those pools run.

use std::sync::OnceLock;

use rayon::prelude::*;
use rayon::ThreadPool;

/// Bytes a task of [`parallel_copy`] copies.
const COPY_GRAIN_BYTES: usize = 512 << 10;

/// `to.copy_from_slice(from)` in grains over the current rayon pool.
pub(crate) fn parallel_copy<T: Copy + Send + Sync>(to: &mut [T], from: &[T]) {
    let grain = (COPY_GRAIN_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    to.par_chunks_mut(grain)
        .zip(from.par_chunks(grain))
        .for_each(|(to, from)| to.copy_from_slice(from))
}

/// A pool of `threads` named `name-i`, made once in `cell`; None where the
/// threads cannot be had (a warning says so).
fn named_pool(
    cell: &'static OnceLock<Option<ThreadPool>>,
    name: &'static str,
    threads: usize,
) -> Option<&'static ThreadPool> {
    cell.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("{name}-{i}"))
            .build()
            .map_err(|error| log::warn!("no {name} threads ({error}); the caller's pool runs it"))
            .ok()
    })
    .as_ref()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Threads for memory copies (upload slots, a witness's parts joined): half
/// the cores, at most 8, which a copy's memory bandwidth needs and no more.
/// In rayon's global pool the slots' copies made pipelined 2^20 proofs a
/// fifth slower; a 2^27 partition's join took 2.9 s there beside another
/// partition's synthesis.
pub(crate) fn copy_pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    named_pool(&POOL, "g16-copy", (cores() / 2).clamp(1, 8))
}

/// Threads for splitting a proof's witness into its MSMs' scalars, every
/// core: beside synthesis on the global pool a 2^27 partition's split took
/// 1.5-3.9 s there against 0.6-0.8 s alone, and the device waited.
#[cfg(feature = "cuda")]
pub(crate) fn split_pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    named_pool(&POOL, "g16-split", cores())
}

/// Runs `work` on `pool`, or on the caller's pool where there is none.
pub(crate) fn run_on<R: Send>(pool: Option<&ThreadPool>, work: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_the_named_threads() {
        let name = run_on(copy_pool(), || {
            rayon::current_thread_index().and(std::thread::current().name().map(str::to_owned))
        });
        assert!(
            name.as_deref().is_some_and(|n| n.starts_with("g16-copy-")),
            "{name:?}"
        );
    }

    #[test]
    fn a_parallel_copy_copies_every_grain() {
        let from: Vec<u64> = (0..200_000).collect();
        let mut to = vec![0u64; from.len()];
        parallel_copy(&mut to, &from);
        assert_eq!(to, from);
    }

    #[test]
    fn without_a_pool_the_caller_runs_it() {
        let here = std::thread::current().id();
        assert_eq!(run_on(None, || std::thread::current().id()), here);
    }
}
