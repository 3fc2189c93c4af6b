//! Comma-separated files with a header row, as a user brings them: one column the target, the
//! others the features. Every cell must be a finite number; a bad cell is an error naming the
//! file, line and column.

use std::path::Path;

use candle_core::{Device, Tensor};

use crate::text::{Delimiter, read_table};
use crate::{Dataset, Error, Provenance, Result, Task};

/// Where the target column is and which the features are.
fn split_columns(path: &Path, header: &[String], target: &str) -> Result<(usize, Vec<String>)> {
    let at = header.iter().position(|h| h == target).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{}: no column named {target:?} (the columns are {})",
            path.display(),
            header.join(", ")
        ))
    })?;
    let features = header
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != at)
        .map(|(_, h)| h.clone())
        .collect();
    Ok((at, features))
}

/// The table at `path` with its header, the target column's index and the feature names.
fn table(path: &Path, target: &str) -> Result<(crate::text::Table, usize, Vec<String>)> {
    let table = read_table(path, Delimiter::Comma, true)?;
    let header = table.header.clone().unwrap_or_default();
    let (at, features) = split_columns(path, &header, target)?;
    if features.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{}: {target:?} is the only column; there are no features",
            path.display()
        )));
    }
    Ok((table, at, features))
}

/// The feature rows of `table` (every column but `at`), as f32 `[N, d]`.
fn features(table: &crate::text::Table, at: usize) -> Result<Tensor> {
    let x: Vec<f32> = (0..table.rows)
        .flat_map(|i| {
            (0..table.cols)
                .filter(move |&j| j != at)
                .map(move |j| table.values[i * table.cols + j] as f32)
        })
        .collect();
    Ok(Tensor::from_vec(
        x,
        (table.rows, table.cols - 1),
        &Device::Cpu,
    )?)
}

fn provenance(path: &Path) -> Provenance {
    Provenance {
        description: path.display().to_string(),
        files: vec![path.to_path_buf()],
    }
}

/// A regression data set from the CSV file at `path`: the column named `target` is y (f32
/// `[N, 1]`), every other column a feature, in file order.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let path = std::env::temp_dir().join(format!("bdl-csv-doc-{}.csv", std::process::id()));
/// std::fs::write(&path, "speed,load,drag\n1.0,2.0,0.5\n2.0,1.0,0.7\n")?;
/// let data = bdl_data::csv::read_regression(&path, "drag")?;
/// assert_eq!((data.len(), data.feature_names()), (2, &["speed".to_owned(), "load".to_owned()][..]));
/// std::fs::write(&path, "speed,load,drag\n1.0,2.0,0.5\n2.0,x,0.7\n")?;
/// let err = bdl_data::csv::read_regression(&path, "drag").unwrap_err().to_string();
/// assert!(err.contains(":3: column 2"), "{err}"); // the file, line 3, column 2
/// # std::fs::remove_file(&path)?;
/// # Ok(()) }
/// ```
pub fn read_regression(path: &Path, target: &str) -> Result<Dataset> {
    let (table, at, names) = table(path, target)?;
    let y: Vec<f32> = (0..table.rows)
        .map(|i| table.values[i * table.cols + at] as f32)
        .collect();
    let y = Tensor::from_vec(y, (table.rows, 1), &Device::Cpu)?;
    let task = Task::Regression {
        targets: vec![target.to_owned()],
    };
    Dataset::new(features(&table, at)?, y, task, names, provenance(path))
}

/// A classification data set from the CSV file at `path`: the column named `target` holds class
/// indices 0, 1, … (whole numbers; the classes are 0 to the largest), every other column a
/// feature.
pub fn read_classification(path: &Path, target: &str) -> Result<Dataset> {
    let (table, at, names) = table(path, target)?;
    let labels = (0..table.rows)
        .map(|i| {
            let v = table.values[i * table.cols + at];
            if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
                Ok(v as u32)
            } else {
                // The header is line 1 (blank lines are not counted here).
                Err(Error::Parse {
                    path: path.to_path_buf(),
                    line: i + 2,
                    column: at + 1,
                    token: format!("{v} (a class label must be a whole number ≥ 0)"),
                })
            }
        })
        .collect::<Result<Vec<u32>>>()?;
    let classes = labels.iter().max().map_or(0, |&c| c as usize + 1);
    let y = Tensor::from_vec(labels, table.rows, &Device::Cpu)?;
    let task = Task::Classification {
        classes: (0..classes).map(|c| c.to_string()).collect(),
    };
    Dataset::new(features(&table, at)?, y, task, names, provenance(path))
}

/// The columns named `names` of the CSV file at `path`, in that order, as f32 `[N, d]` (other
/// columns, a target among them, are ignored): the inputs of a fitted model on new data.
pub fn read_columns(path: &Path, names: &[String]) -> Result<Tensor> {
    let table = read_table(path, Delimiter::Comma, true)?;
    let header = table.header.clone().unwrap_or_default();
    let at = names
        .iter()
        .map(|name| {
            header.iter().position(|h| h == name).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: no column named {name:?} (the columns are {})",
                    path.display(),
                    header.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let x: Vec<f32> = (0..table.rows)
        .flat_map(|i| at.iter().map(move |&j| (i, j)))
        .map(|(i, j)| table.values[i * table.cols + j] as f32)
        .collect();
    Ok(Tensor::from_vec(
        x,
        (table.rows, names.len()),
        &Device::Cpu,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::Scratch;

    #[test]
    fn reads_features_and_targets_in_file_order() {
        let dir = Scratch::new("csv");
        let path = dir.write("d.csv", "a,y,b\n1,10,2\n3,20,4\n\n5,30,6\n");
        let data = read_regression(&path, "y").unwrap();
        assert_eq!(
            data.x().to_vec2::<f32>().unwrap(),
            [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
        );
        assert_eq!(data.y().to_vec2::<f32>().unwrap(), [[10.0], [20.0], [30.0]]);
        let classes = dir.write("c.csv", "a,label\n0.5,1\n0.1,0\n0.9,2\n");
        let data = read_classification(&classes, "label").unwrap();
        assert_eq!(data.labels().unwrap(), [1, 0, 2]);
        assert_eq!(data.target_names().len(), 3);
        let x = read_columns(&path, &["b".into(), "a".into()]).unwrap();
        assert_eq!(
            x.to_vec2::<f32>().unwrap(),
            [[2.0, 1.0], [4.0, 3.0], [6.0, 5.0]]
        );
        let err = read_columns(&path, &["c".into()]).unwrap_err().to_string();
        assert!(err.contains("no column named \"c\""), "{err}");
    }

    #[test]
    fn bad_files_name_what_is_wrong() {
        let dir = Scratch::new("csv-bad");
        let cases = [
            ("a,y\n1,2\n", "z", "no column named \"z\""),
            ("y\n1\n", "y", "no features"),
            ("a,y\n1,2\n3\n", "y", ":3: 1 columns, expected 2"),
            ("a,y\n1,NaN\n", "y", ":2: column 2"),
            ("", "y", "no data"),
        ];
        for (i, (content, target, expected)) in cases.iter().enumerate() {
            let path = dir.write(&format!("{i}.csv"), content);
            let err = read_regression(&path, target).unwrap_err().to_string();
            assert!(err.contains(expected), "{content:?}: {err}");
        }
        let labels = dir.write("l.csv", "a,label\n1,0\n2,1.5\n");
        let err = read_classification(&labels, "label")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":3: column 2") && err.contains("whole number"),
            "{err}"
        );
    }
}
