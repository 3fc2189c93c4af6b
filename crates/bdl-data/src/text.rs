//! Numeric text tables: whitespace-separated (UCI `data.txt`, the logistic-regression
//! `*_presplit/*.csv`) or comma-separated with a header (noisy XOR), and integer index lists
//! (`index_train_k.txt`).

use std::path::Path;

use crate::{Error, Result, read};

/// How the cells of a row are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delimiter {
    /// Any run of spaces and tabs.
    Whitespace,
    /// One comma (spaces around a cell are ignored).
    Comma,
}

/// A dense row-major table of numbers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Table {
    /// Column names from the header line, when the file has one.
    pub(crate) header: Option<Vec<String>>,
    /// Number of rows.
    pub(crate) rows: usize,
    /// Number of columns.
    pub(crate) cols: usize,
    /// The cells, row-major: cell (i, j) is `values[i * cols + j]`.
    pub(crate) values: Vec<f64>,
}

fn cells(line: &str, delimiter: Delimiter) -> Vec<&str> {
    match delimiter {
        Delimiter::Whitespace => line.split_whitespace().collect(),
        Delimiter::Comma => line.split(',').map(str::trim).collect(),
    }
}

/// Reads the numeric table at `path`; blank lines are skipped, every other row must have as many
/// cells as the first.
pub(crate) fn read_table(path: &Path, delimiter: Delimiter, has_header: bool) -> Result<Table> {
    let text = read::text(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header = if has_header {
        let (i, line) = lines.next().ok_or_else(|| Error::Empty {
            path: path.to_path_buf(),
        })?;
        let names: Vec<String> = cells(line, delimiter)
            .into_iter()
            .map(str::to_owned)
            .collect();
        Some((i, names))
    } else {
        None
    };
    let mut values = Vec::new();
    let mut cols = None;
    let mut rows = 0;
    for (i, line) in lines {
        let row = cells(line, delimiter);
        let expected = *cols.get_or_insert(row.len());
        if row.len() != expected {
            return Err(Error::Ragged {
                path: path.to_path_buf(),
                line: i + 1,
                expected,
                found: row.len(),
            });
        }
        for (j, token) in row.iter().enumerate() {
            // Rust parses "NaN" and "inf": a data cell must be a finite number.
            let value = token.parse::<f64>().ok().filter(|v| v.is_finite());
            values.push(value.ok_or_else(|| Error::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                column: j + 1,
                token: (*token).to_owned(),
            })?);
        }
        rows += 1;
    }
    let cols = cols.ok_or_else(|| Error::Empty {
        path: path.to_path_buf(),
    })?;
    if let Some((line, names)) = &header
        && names.len() != cols
    {
        return Err(Error::Ragged {
            path: path.to_path_buf(),
            line: line + 1,
            expected: cols,
            found: names.len(),
        });
    }
    Ok(Table {
        header: header.map(|(_, names)| names),
        rows,
        cols,
        values,
    })
}

/// Reads non-negative integers separated by whitespace (one per line in the UCI index files).
pub(crate) fn read_indices(path: &Path) -> Result<Vec<usize>> {
    let text = read::text(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (j, token) in line.split_whitespace().enumerate() {
            out.push(token.parse::<usize>().map_err(|_| Error::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                column: j + 1,
                token: token.to_owned(),
            })?);
        }
    }
    Ok(out)
}

/// Reads a file that holds exactly one non-negative integer.
pub(crate) fn read_single_index(path: &Path) -> Result<usize> {
    match read_indices(path)?[..] {
        [value] => Ok(value),
        [] => Err(Error::Empty {
            path: path.to_path_buf(),
        }),
        [_, second, ..] => Err(Error::Parse {
            path: path.to_path_buf(),
            line: 1,
            column: 2,
            token: format!("{second} (a second value; one was expected)"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::Scratch;

    #[test]
    fn whitespace_table_with_blank_lines() {
        let dir = Scratch::new("text-ws");
        let path = dir.write("t.txt", "1 2.5\t-3\n\n 4e1  5 6 \n");
        let t = read_table(&path, Delimiter::Whitespace, false).unwrap();
        assert_eq!((t.rows, t.cols), (2, 3));
        assert_eq!(t.values, [1.0, 2.5, -3.0, 40.0, 5.0, 6.0]);
    }

    #[test]
    fn comma_table_with_header() {
        let dir = Scratch::new("text-csv");
        let path = dir.write("t.csv", "x1,x2\n1.5, 2\n3,4\n");
        let t = read_table(&path, Delimiter::Comma, true).unwrap();
        assert_eq!(
            t.header.as_deref(),
            Some(&["x1".to_owned(), "x2".to_owned()][..])
        );
        assert_eq!(t.values, [1.5, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn ragged_row_names_the_line() {
        let dir = Scratch::new("text-ragged");
        let path = dir.write("t.txt", "1 2\n3\n");
        let err = read_table(&path, Delimiter::Whitespace, false).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Ragged {
                    line: 2,
                    expected: 2,
                    found: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn non_finite_cells_name_the_file_line_and_column() {
        let dir = Scratch::new("text-nan");
        for cell in ["NaN", "inf", "-inf"] {
            let path = dir.write("t.txt", format!("1 2\n3 {cell}\n"));
            let err = read_table(&path, Delimiter::Whitespace, false).unwrap_err();
            assert!(
                matches!(&err, Error::Parse { line: 2, column: 2, token, .. } if token == cell),
                "{err}"
            );
            assert!(err.to_string().contains("t.txt:2"), "{err}");
        }
    }

    #[test]
    fn index_lists() {
        let dir = Scratch::new("text-idx");
        let path = dir.write("i.txt", "3\n1\n\n2\n");
        assert_eq!(read_indices(&path).unwrap(), [3, 1, 2]);
        let one = dir.write("n.txt", "20\n");
        assert_eq!(read_single_index(&one).unwrap(), 20);
        let bad = dir.write("b.txt", "3\n-1\n");
        let err = read_indices(&bad).unwrap_err();
        assert!(matches!(err, Error::Parse { line: 2, .. }), "{err}");
        let two = dir.write("two.txt", "1 2\n");
        assert!(read_single_index(&two).is_err());
    }
}
