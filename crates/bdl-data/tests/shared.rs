//! The loaders on the full data, when this machine has a copy (`BDL_SHARED_DATA` or
//! `../shared/data` beside the workspace; CIFAR, which the shared copy leaves out, also from
//! the folder `cargo xtask fetch` fills). Each test prints a message and passes when it is
//! absent, so a fresh clone's `cargo test` needs no network.

use std::path::PathBuf;

use bdl_data::blr::{self, BlrSet};
use bdl_data::cifar::{self, Corruption, Severity};
use bdl_data::mnist::{self, Collection, Part};
use bdl_data::uci::{Benchmark, SplitKind, UciData};
use bdl_data::{Dataset, Standardizer};

fn shared() -> Option<PathBuf> {
    let root = bdl_data::root::shared();
    if root.is_none() {
        eprintln!("skipped: no full data (set BDL_SHARED_DATA or put it at ../shared/data)");
    }
    root
}

fn pixel_stats(ds: &Dataset) -> (f64, f64) {
    let s = Standardizer::fit_global(ds.x()).unwrap();
    (s.mean()[0], s.std()[0])
}

#[test]
fn mnist_and_fashion_full_sets() {
    let Some(root) = shared() else { return };
    // The customary normalisation constants are the statistics of the training pixels.
    for (collection, mean, std) in [
        (Collection::Mnist, 0.1307, 0.3081),
        (Collection::FashionMnist, 0.2860, 0.3530),
    ] {
        let train = mnist::load(&root, collection, Part::Train).unwrap();
        let test = mnist::load(&root, collection, Part::Test).unwrap();
        assert_eq!((train.len(), test.len()), (60_000, 10_000));
        let (m, s) = pixel_stats(&train);
        assert!(
            (m - mean).abs() < 5e-5 && (s - std).abs() < 5e-5,
            "{collection:?}: {m} {s}"
        );
        // The shipped fixture is a prefix of the full files.
        let fixture = mnist::load(&bdl_data::root::fixtures(), collection, Part::Train).unwrap();
        let n = fixture.len();
        let prefix: Vec<usize> = (0..n).collect();
        let head = train.select(&prefix).unwrap();
        assert_eq!(head.labels().unwrap(), fixture.labels().unwrap());
        let diff = (head.x() - fixture.x())
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap();
        assert_eq!(diff.to_scalar::<f32>().unwrap(), 0.0);
    }
}

#[test]
fn every_uci_split_is_a_partition() {
    let Some(root) = shared() else { return };
    let expected = [
        (Benchmark::Boston, 506, 13, 20),
        (Benchmark::Concrete, 1030, 8, 20),
        (Benchmark::Energy, 768, 8, 20),
        (Benchmark::Kin8nm, 8192, 8, 20),
        (Benchmark::Naval, 11934, 16, 20),
        (Benchmark::Power, 9568, 4, 20),
        (Benchmark::Protein, 45730, 9, 5),
        (Benchmark::Wine, 1599, 11, 20),
        (Benchmark::Yacht, 308, 6, 20),
    ];
    for (b, rows, features, standard) in expected {
        let data = UciData::open(&root, b).unwrap();
        assert_eq!(data.len(), rows, "{b}");
        // One gap split per input feature.
        for (kind, count) in [(SplitKind::Standard, standard), (SplitKind::Gap, features)] {
            assert_eq!(data.num_splits(kind).unwrap(), count, "{b} {kind}");
            for k in 0..count {
                let split = data.split(kind, k).unwrap();
                assert!(split.is_partition_of(rows), "{b} {kind} split {k}");
            }
        }
        let (train, test) = data.load(SplitKind::Standard, 0).unwrap();
        assert_eq!(train.num_features(), features);
        // Gal & Ghahramani's splits hold out 10 % of the rows.
        let share = test.len() as f64 / rows as f64;
        assert!((share - 0.1).abs() < 0.01, "{b}: test share {share}");
    }
}

#[test]
fn logistic_regression_sets() {
    let Some(root) = shared() else { return };
    let (train, test) = blr::load(&root, BlrSet::Usps3v5).unwrap();
    // GPML's USPS 3-vs-5 task: 767 training and 773 test images.
    assert_eq!(
        (train.len(), test.len(), train.num_features()),
        (767, 773, 256)
    );
    let x = train.x().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert!(x.iter().all(|v| (-1.0..=1.0).contains(v)));
    let (train, test) = blr::load(&root, BlrSet::BreastCancer).unwrap();
    assert_eq!(train.len() + test.len(), 683);
}

/// The first of the shared copy and the fetched folder that holds `relative`.
fn holding(relative: &str) -> Option<PathBuf> {
    let root = [bdl_data::root::shared(), Some(bdl_data::root::fetched())]
        .into_iter()
        .flatten()
        .find(|root| root.join(relative).is_file());
    if root.is_none() {
        eprintln!("skipped: no {relative} (`cargo xtask fetch` installs it)");
    }
    root
}

#[test]
fn cifar10_full_sets() {
    let Some(root) = holding(cifar::ARCHIVE) else {
        return;
    };
    let train = cifar::load(&root, Part::Train).unwrap();
    let test = cifar::load(&root, Part::Test).unwrap();
    assert_eq!((train.len(), test.len()), (50_000, 10_000));
    for (ds, per_class) in [(&train, 5_000), (&test, 1_000)] {
        let mut counts = [0; 10];
        for l in ds.labels().unwrap() {
            counts[l as usize] += 1;
        }
        assert_eq!(counts, [per_class; 10]);
    }
    // The customary per-channel means of the training pixels: red, green, blue in this order.
    let n = train.len();
    let sums = train.x().reshape((n, 3, 1024)).unwrap().sum(2).unwrap();
    let sums = sums.to_vec2::<f32>().unwrap();
    for (c, mean) in [0.4914, 0.4822, 0.4465].into_iter().enumerate() {
        let m = sums.iter().map(|s| f64::from(s[c])).sum::<f64>() / (n * 1024) as f64;
        assert!((m - mean).abs() < 5e-4, "channel {c}: {m}");
    }
}

#[test]
fn cifar10_c_full_set() {
    let Some(root) = holding(cifar::CORRUPTED_ARCHIVE) else {
        return;
    };
    let test = holding(cifar::ARCHIVE).map(|r| cifar::load(&r, Part::Test).unwrap());
    for corruption in [Corruption::GaussianNoise, Corruption::Saturate] {
        for severity in [Severity::ALL[0], Severity::ALL[4]] {
            let ds = cifar::load_corrupted(&root, corruption, severity).unwrap();
            assert_eq!((ds.len(), ds.num_features()), (10_000, 3072));
            // Every severity is the test set in its order.
            if let Some(test) = &test {
                assert_eq!(ds.labels().unwrap(), test.labels().unwrap());
            }
        }
    }
}
