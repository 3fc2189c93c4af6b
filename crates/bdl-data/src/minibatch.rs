//! Seeded minibatches, optionally stratified by class.
//!
//! An *epoch* is a permutation of `0..N` cut into consecutive batches of `batch_size`; the last,
//! shorter batch is kept or dropped. The permutation comes from the ChaCha8 stream of the seed
//! given for that epoch (conventionally `seed.fork("minibatches").index(epoch)`), so the same
//! seed gives the same batches on every run.
//!
//! **Stratified** epochs (as the minibatch Gibbs sampler draws its batches) interleave the
//! classes so that every batch holds each class in about its overall proportion. Within class
//! `c` (with `n_c` members) the members are shuffled and the `r`-th one gets the key
//! `(r + u_c) / n_c` with a random offset `u_c ∈ [0, 1)`; sorting all examples by key and
//! cutting into consecutive batches gives each batch of size `B` between
//! `B · n_c / N − 2` and `B · n_c / N + 2` members of class `c`.

use std::collections::BTreeMap;

use bdl_tensor::Seed;
use rand::Rng;
use rand::seq::SliceRandom;

use crate::{Dataset, Error, Result};

/// How an epoch is cut into minibatches.
///
/// ```
/// use bdl_data::Minibatches;
/// use bdl_tensor::Seed;
/// let batches = Minibatches::new(10, 4).unwrap().drop_last(true);
/// let epoch = batches.epoch(Seed(7).fork("minibatches").index(0));
/// let sizes: Vec<usize> = epoch.iter().map(|b| b.len()).collect();
/// assert_eq!(sizes, [4, 4]);
/// let labels = [0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2];
/// let strat = Minibatches::stratified(&labels, 4).unwrap();
/// for batch in strat.epoch(Seed(1)).iter() {
///     assert!(batch.iter().filter(|&&i| labels[i] == 1).count() >= 1);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Minibatches {
    n: usize,
    batch_size: usize,
    drop_last: bool,
    strata: Option<Vec<u32>>,
}

impl Minibatches {
    /// Plain shuffled batches of `batch_size` over `n` examples; the last batch is kept.
    pub fn new(n: usize, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::InvalidArgument(
                "batch size must be at least 1".into(),
            ));
        }
        Ok(Minibatches {
            n,
            batch_size,
            drop_last: false,
            strata: None,
        })
    }

    /// Batches stratified by `labels` (one class per example).
    pub fn stratified(labels: &[u32], batch_size: usize) -> Result<Self> {
        Ok(Minibatches {
            strata: Some(labels.to_vec()),
            ..Minibatches::new(labels.len(), batch_size)?
        })
    }

    /// Whether to drop the last batch when it is shorter than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// The batch size.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The number of batches per epoch.
    pub fn num_batches(&self) -> usize {
        if self.drop_last {
            self.n / self.batch_size
        } else {
            self.n.div_ceil(self.batch_size)
        }
    }

    /// The batches of one epoch, from the stream of `seed`.
    pub fn epoch(&self, seed: Seed) -> Epoch {
        let mut rng = seed.rng();
        let mut order: Vec<usize> = match &self.strata {
            None => {
                let mut order: Vec<usize> = (0..self.n).collect();
                order.shuffle(&mut rng);
                order
            }
            Some(labels) => stratified_order(labels, &mut rng),
        };
        order.truncate(if self.drop_last {
            self.num_batches() * self.batch_size
        } else {
            self.n
        });
        Epoch {
            order,
            batch_size: self.batch_size,
        }
    }
}

/// A permutation in which every class is spread evenly (see the module documentation).
fn stratified_order(labels: &[u32], rng: &mut impl Rng) -> Vec<usize> {
    let mut members: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, &c) in labels.iter().enumerate() {
        members.entry(c).or_default().push(i);
    }
    let mut keyed: Vec<(f64, usize)> = Vec::with_capacity(labels.len());
    for class in members.values_mut() {
        class.shuffle(rng);
        let offset: f64 = rng.random();
        let n_c = class.len() as f64;
        keyed.extend(
            class
                .iter()
                .enumerate()
                .map(|(r, &i)| ((r as f64 + offset) / n_c, i)),
        );
    }
    // Keys are distinct within a class; the sort is stable, so ties across classes keep the
    // class order and the permutation is a function of the seed alone.
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The minibatches of one epoch: index slices into the data set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epoch {
    order: Vec<usize>,
    batch_size: usize,
}

impl Epoch {
    /// The batches, as slices of example indices.
    pub fn iter(&self) -> std::slice::Chunks<'_, usize> {
        self.order.chunks(self.batch_size)
    }

    /// Every index of the epoch, batch after batch.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// The batches of `data` as data sets.
    pub fn batches<'a>(&'a self, data: &'a Dataset) -> impl Iterator<Item = Result<Dataset>> + 'a {
        self.iter().map(move |batch| data.select(batch))
    }
}

impl<'a> IntoIterator for &'a Epoch {
    type Item = &'a [usize];
    type IntoIter = std::slice::Chunks<'a, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sorted(v: &[usize]) -> Vec<usize> {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    }

    proptest! {
        #[test]
        fn epoch_is_a_permutation(seed in any::<u64>(), n in 0usize..300, b in 1usize..40) {
            let mb = Minibatches::new(n, b).unwrap();
            let epoch = mb.epoch(Seed(seed));
            prop_assert_eq!(sorted(epoch.order()), (0..n).collect::<Vec<_>>());
            prop_assert_eq!(epoch.iter().count(), mb.num_batches());
            prop_assert!(epoch.iter().all(|batch| batch.len() <= b));
            prop_assert_eq!(&epoch, &mb.epoch(Seed(seed)));
        }

        #[test]
        fn drop_last_keeps_only_full_batches(seed in any::<u64>(), n in 0usize..300, b in 1usize..40) {
            let mb = Minibatches::new(n, b).unwrap().drop_last(true);
            let epoch = mb.epoch(Seed(seed));
            prop_assert_eq!(epoch.iter().count(), n / b);
            prop_assert!(epoch.iter().all(|batch| batch.len() == b));
            let mut seen = epoch.order().to_vec();
            seen.sort_unstable();
            seen.dedup();
            prop_assert_eq!(seen.len(), (n / b) * b);
        }

        #[test]
        fn stratified_batches_keep_class_proportions(
            seed in any::<u64>(),
            labels in proptest::collection::vec(0u32..4, 1..400),
            b in 1usize..60,
        ) {
            let mb = Minibatches::stratified(&labels, b).unwrap();
            let epoch = mb.epoch(Seed(seed));
            prop_assert_eq!(sorted(epoch.order()), (0..labels.len()).collect::<Vec<_>>());
            let n = labels.len() as f64;
            for batch in epoch.iter().filter(|batch| batch.len() == b) {
                for c in 0..4 {
                    let n_c = labels.iter().filter(|&&l| l == c).count() as f64;
                    let got = batch.iter().filter(|&&i| labels[i] == c).count() as f64;
                    let want = b as f64 * n_c / n;
                    prop_assert!((got - want).abs() <= 2.0, "class {} batch count {} want {}", c, got, want);
                }
            }
        }
    }

    #[test]
    fn seeds_change_the_order() {
        let mb = Minibatches::new(100, 10).unwrap();
        assert_ne!(mb.epoch(Seed(1)), mb.epoch(Seed(2)));
        assert!(Minibatches::new(5, 0).is_err());
    }
}
