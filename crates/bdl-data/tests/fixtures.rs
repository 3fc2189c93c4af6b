//! Every loader on the data shipped in `fixtures/data/`: counts, shapes, label ranges and known
//! statistics, every UCI split a partition, and every file matching the hash in its README.

use bdl_data::blr::{self, BlrSet};
use bdl_data::mnist::{self, Collection, Part};
use bdl_data::toy::{self, NoisyXor};
use bdl_data::uci::{Benchmark, SplitKind, UciData};
use bdl_data::{Dataset, Task};
use candle_core::DType;

fn root() -> std::path::PathBuf {
    bdl_data::root::fixtures()
}

fn mean_x(ds: &Dataset) -> f64 {
    let x = ds.x().to_dtype(DType::F64).unwrap();
    x.mean_all().unwrap().to_scalar::<f64>().unwrap()
}

fn class_counts(ds: &Dataset) -> Vec<usize> {
    let Task::Classification { classes } = ds.task() else {
        panic!(
            "{} is not a classification set",
            ds.provenance().description
        )
    };
    let mut counts = vec![0; classes.len()];
    for label in ds.labels().unwrap() {
        counts[label as usize] += 1;
    }
    counts
}

#[test]
fn mnist_and_fashion_subsets() {
    for (collection, train_n, test_n, pixel_mean) in [
        (Collection::Mnist, 2000, 1000, 0.1307),
        (Collection::FashionMnist, 1000, 1000, 0.2860),
    ] {
        let train = mnist::load(&root(), collection, Part::Train).unwrap();
        let test = mnist::load(&root(), collection, Part::Test).unwrap();
        assert_eq!((train.len(), test.len()), (train_n, test_n));
        assert_eq!(train.x().dims(), [train_n, 784]);
        assert_eq!(train.y().dtype(), DType::U32);
        for ds in [&train, &test] {
            let counts = class_counts(ds);
            assert_eq!(counts.len(), 10);
            assert!(counts.iter().all(|&c| c > 50), "{collection:?}: {counts:?}");
            let (lo, hi) = (ds.x().min_all().unwrap(), ds.x().max_all().unwrap());
            assert_eq!(
                (
                    lo.to_scalar::<f32>().unwrap(),
                    hi.to_scalar::<f32>().unwrap()
                ),
                (0.0, 1.0)
            );
        }
        // The subset's pixel mean is close to that of the full training set.
        let mean = mean_x(&train);
        assert!(
            (mean - pixel_mean).abs() < 0.01,
            "{collection:?}: mean {mean}"
        );
    }
    // The first MNIST training label is a 5, the first test label a 7.
    let train = mnist::load(&root(), Collection::Mnist, Part::Train).unwrap();
    let test = mnist::load(&root(), Collection::Mnist, Part::Test).unwrap();
    assert_eq!(
        (train.labels().unwrap()[0], test.labels().unwrap()[0]),
        (5, 7)
    );
}

#[test]
fn uci_fixture_splits_are_partitions() {
    let features = [13, 8, 8, 8, 16, 4, 9, 11, 6];
    for (b, d) in Benchmark::ALL.into_iter().zip(features) {
        let data = UciData::open(&root(), b).unwrap();
        for kind in [SplitKind::Standard, SplitKind::Gap] {
            assert_eq!(data.num_splits(kind).unwrap(), 3, "{b} {kind}");
            for k in 0..3 {
                let split = data.split(kind, k).unwrap();
                assert!(split.is_partition_of(data.len()), "{b} {kind} split {k}");
                let (train, test) = data.load(kind, k).unwrap();
                assert_eq!((train.num_features(), test.num_features()), (d, d));
                assert_eq!(train.len() + test.len(), data.len());
                assert_eq!(train.y().dims(), [train.len(), 1]);
            }
        }
    }
}

#[test]
fn uci_known_statistics() {
    // Boston ships in full: 506 rows, median value mean 22.5328 (in $1000s).
    let boston = UciData::open(&root(), Benchmark::Boston)
        .unwrap()
        .all()
        .unwrap();
    let y = boston.y().to_dtype(DType::F64).unwrap().mean_all().unwrap();
    assert_eq!(boston.len(), 506);
    assert!((y.to_scalar::<f64>().unwrap() - 22.532_806).abs() < 1e-4);
    // Wine ships in full: 1599 rows, quality mean 5.6360.
    let wine = UciData::open(&root(), Benchmark::Wine).unwrap();
    assert_eq!(wine.len(), 1599);
    let q = wine
        .all()
        .unwrap()
        .y()
        .to_dtype(DType::F64)
        .unwrap()
        .mean_all()
        .unwrap();
    assert!((q.to_scalar::<f64>().unwrap() - 5.636_023).abs() < 1e-4);
    // Standard splits hold out about 10 %, gap splits about a third.
    let (train, test) = wine.load(SplitKind::Standard, 0).unwrap();
    assert_eq!((train.len(), test.len()), (1439, 160));
    let (_, gap_test) = wine.load(SplitKind::Gap, 0).unwrap();
    assert!((gap_test.len() as f64 / 1599.0 - 1.0 / 3.0).abs() < 0.01);
}

#[test]
fn toy_sets() {
    let agw = toy::agw_1d(&root()).unwrap();
    let matern = toy::matern_1d(&root()).unwrap();
    assert_eq!((agw.len(), matern.len()), (400, 400));
    // The Matérn set was standardised by its generator.
    let m = matern.x().to_dtype(DType::F64).unwrap().mean_all().unwrap();
    assert!(m.to_scalar::<f64>().unwrap().abs() < 1e-3);
    let (train, test) = toy::my_1d(&root()).unwrap();
    assert_eq!(
        (train.len(), test.len(), train.num_features()),
        (501, 501, 1)
    );
    for (set, n_train, n_test) in [(NoisyXor::Small, 500, 120), (NoisyXor::Paper, 5000, 1200)] {
        let (train, test) = toy::noisy_xor(&root(), set).unwrap();
        assert_eq!((train.len(), test.len()), (n_train, n_test));
        assert_eq!(train.feature_names(), ["x1", "x2"]);
        assert_eq!(class_counts(&train), [n_train / 2, n_train / 2]);
        // Coordinates are a bit plus U(-0.55, 0.55).
        let x = train.x().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(x.iter().all(|v| (-0.55..=1.55).contains(v)));
    }
}

#[test]
fn logistic_regression_sets() {
    let (train, test) = blr::load(&root(), BlrSet::Australian).unwrap();
    assert_eq!(
        (train.len(), test.len(), train.num_features()),
        (345, 345, 14)
    );
    let (train, test) = blr::load(&root(), BlrSet::BreastCancer).unwrap();
    assert_eq!(
        (train.len(), test.len(), train.num_features()),
        (341, 342, 10)
    );
    for ds in [&train, &test] {
        let x = ds.x().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(x.iter().all(|v| (-1.0..=1.0).contains(v)), "LIBSVM scaling");
    }
    // The USPS fixture keeps 100 threes and fives per part (and other digits, which are dropped).
    let (train, test) = blr::load(&root(), BlrSet::Usps3v5).unwrap();
    assert_eq!(
        (train.len(), test.len(), train.num_features()),
        (100, 100, 256)
    );
    let counts = class_counts(&train);
    assert!(counts.iter().all(|&c| c > 20), "{counts:?}");
}

#[test]
fn fixture_files_match_their_readme_hashes() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut checked = 0;
    for line in readme.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line
            .split('|')
            .map(|c| c.trim().trim_matches('`'))
            .collect();
        let (file, sha) = (cells[1], cells[cells.len() - 2]);
        if sha.len() != 64 {
            continue; // a row of the contents table
        }
        bdl_data::checksum::verify_file(&root().join(file), sha).unwrap();
        checked += 1;
    }
    assert!(checked > 100, "only {checked} rows in the README table");
}
