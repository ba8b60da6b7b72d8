//! Whether a proof goes ahead of the others: in the pool's queue, and for a
//! device (bellperson's `*_in_priority` functions, the pool's urgent jobs).

/// Where a proof goes among the others waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Priority {
    /// In turn, after the work queued before it (batch work: PoRep
    /// partitions, WindowPoSt).
    #[default]
    Normal,
    /// Ahead of every normal job still queued and every normal caller
    /// waiting for a device (proofs with a deadline, such as WinningPoSt);
    /// urgent ones among themselves in turn. Work already running finishes
    /// first; a batch holding a device hands it over between two proofs.
    Urgent,
}
