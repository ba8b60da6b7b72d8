//! Whether a proving call goes ahead of the others for a device.

/// bellperson's `*_in_priority` functions (WinningPoSt, with its deadline)
/// are urgent; everything else waits its turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Urgency {
    /// Waits its turn.
    Normal,
    /// Goes ahead of every normal caller waiting for a device; a batch
    /// holding one hands it over between two proofs.
    Urgent,
}
