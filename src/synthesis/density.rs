use rayon::prelude::*;

/// Which variables a query uses: one bit per variable plus the count of set bits.
///
/// The proving key stores a point only for variables whose query polynomial is
/// not zero, so an MSM walks the density to pair scalars with points.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    total: usize,
}

impl Density {
    /// An empty density.
    pub fn new() -> Self {
        Self::default()
    }

    /// A density of `len` variables, none used.
    pub fn with_len(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
            len,
            total: 0,
        }
    }

    /// Appends one unused variable.
    pub fn push_unused(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Marks variable `index` as used.
    ///
    /// # Panics
    /// If `index` is out of range: the constraint system allocates before it marks.
    pub fn mark(&mut self, index: usize) {
        assert!(index < self.len, "density index {index} out of range");
        let (word, bit) = (index / 64, index % 64);
        if self.words[word] & (1 << bit) == 0 {
            self.words[word] |= 1 << bit;
            self.total += 1;
        }
    }

    /// Whether variable `index` is used.
    pub fn is_used(&self, index: usize) -> bool {
        index < self.len && self.words[index / 64] & (1 << (index % 64)) != 0
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it tracks exactly `count` variables and uses every one, so
    /// selecting `count` values keeps them all.
    pub fn uses_all_of(&self, count: usize) -> bool {
        self.len == count && self.total == count
    }

    /// Number of used variables: the number of key points this query needs.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The bits, 64 variables a word (bit i of word i / 64: variable i).
    #[cfg(feature = "cuda")]
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends another density after this one, skipping its first `skip` variables.
    pub fn extend_from(&mut self, other: &Density, skip: usize) {
        for i in skip..other.len {
            self.push_unused();
            if other.is_used(i) {
                let last = self.len - 1;
                self.mark(last);
            }
        }
    }

    /// Keeps the values whose variable is used, in order.
    pub fn select<'a, T>(&'a self, values: &'a [T]) -> impl Iterator<Item = &'a T> + 'a {
        values
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.is_used(*i))
            .map(|(_, v)| v)
    }

    /// [`select`](Self::select) over the cores, appended to `out`: a
    /// proof's a and b queries select from millions of aux values. Each
    /// task writes its values straight to their place in `out` (counted
    /// first from the bits), so no intermediate vectors are allocated and a
    /// reused `out` takes no new pages.
    pub fn par_select_into<T: Copy + Send + Sync>(&self, values: &[T], out: &mut Vec<T>) {
        /// Values per task: 64 words of bits.
        const CHUNK: usize = 64 * 64;
        let n = values.len().min(self.len);
        let chunk_range = |chunk: usize| (chunk * CHUNK, ((chunk + 1) * CHUNK).min(n));
        let used_in = |chunk: usize| -> usize {
            let (first, last) = chunk_range(chunk);
            (first / 64..last.div_ceil(64))
                .map(|w| {
                    let word = self.words[w];
                    let kept = if (w + 1) * 64 <= last {
                        word
                    } else {
                        word & ((1u64 << (last - w * 64)) - 1)
                    };
                    kept.count_ones() as usize
                })
                .sum()
        };
        let counts: Vec<usize> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(used_in)
            .collect();
        let total: usize = counts.iter().sum();
        let start = out.len();
        out.reserve(total);
        let mut pieces = Vec::with_capacity(counts.len());
        let mut rest = &mut out.spare_capacity_mut()[..total];
        for &count in &counts {
            let (piece, tail) = rest.split_at_mut(count);
            pieces.push(piece);
            rest = tail;
        }
        pieces
            .into_par_iter()
            .enumerate()
            .for_each(|(chunk, piece)| {
                let (first, last) = chunk_range(chunk);
                let mut slots = piece.iter_mut();
                for (i, value) in values.iter().enumerate().take(last).skip(first) {
                    if self.is_used(i) {
                        // A count that disagreed with the bits would leave a
                        // slot unwritten: stop rather than expose it.
                        slots
                            .next()
                            .expect("density count matches its bits")
                            .write(*value);
                    }
                }
                assert!(slots.next().is_none(), "density count matches its bits");
            });
        // SAFETY: the `total` slots after `start` are the pieces, and each
        // piece was written in full (the asserts above).
        unsafe { out.set_len(start + total) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_count_once_and_select_follows() {
        let mut d = Density::new();
        for _ in 0..130 {
            d.push_unused();
        }
        d.mark(0);
        d.mark(64);
        d.mark(64);
        d.mark(129);
        assert_eq!(d.total(), 3);
        let values: Vec<usize> = (0..130).collect();
        let picked: Vec<usize> = d.select(&values).copied().collect();
        assert_eq!(picked, vec![0, 64, 129]);
        let mut e = Density::with_len(1);
        e.extend_from(&d, 1);
        assert_eq!(e.len(), 130);
        assert_eq!(e.total(), 2);
        assert!(e.is_used(64) && e.is_used(129) && !e.is_used(0));
    }

    #[test]
    fn par_select_into_appends_what_select_picks() {
        // Large enough for rayon to split the work; a pattern with runs and gaps.
        let n = 200_003;
        let mut d = Density::with_len(n);
        for i in (0..n).filter(|i| i % 7 == 0 || (i / 1000) % 3 == 1) {
            d.mark(i);
        }
        let values: Vec<u64> = (0..n as u64).map(|i| i * 31 + 5).collect();
        let mut out = vec![1u64, 2];
        d.par_select_into(&values, &mut out);
        let mut want = vec![1u64, 2];
        want.extend(d.select(&values).copied());
        assert_eq!(out, want);
        assert_eq!(out.len(), 2 + d.total());
        // Fewer values than variables, and an empty density.
        let short = &values[..n - 1000];
        let mut out = Vec::new();
        d.par_select_into(short, &mut out);
        assert_eq!(out, d.select(short).copied().collect::<Vec<_>>());
        let mut out = vec![7u64];
        Density::new().par_select_into(&values, &mut out);
        assert_eq!(out, vec![7]);
    }
}
