//! Markdown tables.

/// A Markdown table with a header row.
///
/// ```
/// let mut t = bdl_eval::table::Table::new(["method", "test LL"]);
/// t.row(["MAP", "-1.20"]);
/// assert_eq!(t.to_markdown(), "| method | test LL |\n|---|---|\n| MAP | -1.20 |\n");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Self {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells are left empty, extra cells dropped).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let mut cells: Vec<String> = cells.into_iter().map(Into::into).collect();
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    /// The table in GitHub-flavoured Markdown.
    pub fn to_markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.header);
        out.push_str(&format!("|{}\n", "---|".repeat(self.header.len())));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}
