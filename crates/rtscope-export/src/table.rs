//! The export's data model: a table of typed columns, shared by the CSV, JSON and Parquet
//! writers. Every format writes exactly these tables, so they always agree.

/// The values of one column. Every column stores `Option`s; a column declared not nullable
/// holds no `None`.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// 64-bit signed integers (Parquet INT64).
    Int(Vec<Option<i64>>),
    /// 64-bit floats (Parquet DOUBLE).
    Float(Vec<Option<f64>>),
    /// UTF-8 text (Parquet BYTE_ARRAY annotated STRING).
    Text(Vec<Option<String>>),
}

impl Values {
    /// Number of values, nulls included.
    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Text(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value in `row`.
    pub fn cell(&self, row: usize) -> Cell<'_> {
        match self {
            Values::Int(v) => v[row].map_or(Cell::Null, Cell::Int),
            Values::Float(v) => v[row].map_or(Cell::Null, Cell::Float),
            Values::Text(v) => v[row].as_deref().map_or(Cell::Null, Cell::Text),
        }
    }
}

/// One value of a table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// No value.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Text.
    Text(&'a str),
}

/// A named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Name, with the unit where it has one (`latency_ns`).
    pub name: String,
    /// Whether the column may hold nulls (Parquet OPTIONAL). Declared per column, not derived
    /// from the data, so a table's schema is the same for every run.
    pub nullable: bool,
    /// The values.
    pub values: Values,
}

/// A named table, built column by column:
///
/// ```ignore
/// Table::new("events").int("thread", rows.iter().map(|r| i64::from(r.thread)))
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Name, used in file names (`run-3-<name>.csv`) and as the JSON key.
    pub name: &'static str,
    /// The columns, in output order; all of the same length.
    pub columns: Vec<Column>,
}

/// A stored unsigned count or duration as a signed 64-bit value (saturating; a latency of
/// 2^63 ns is 292 years).
pub fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Table {
    /// A table without columns.
    pub fn new(name: &'static str) -> Table {
        Table {
            name,
            columns: Vec::new(),
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    fn push(mut self, name: impl Into<String>, nullable: bool, values: Values) -> Table {
        let name = name.into();
        debug_assert!(
            self.columns.is_empty() || values.len() == self.rows(),
            "column {name} of table {} has {} rows, not {}",
            self.name,
            values.len(),
            self.rows()
        );
        self.columns.push(Column {
            name,
            nullable,
            values,
        });
        self
    }

    /// Adds a non-null integer column.
    pub fn int(self, name: impl Into<String>, v: impl IntoIterator<Item = i64>) -> Table {
        self.push(name, false, Values::Int(v.into_iter().map(Some).collect()))
    }

    /// Adds a nullable integer column.
    pub fn opt_int(
        self,
        name: impl Into<String>,
        v: impl IntoIterator<Item = Option<i64>>,
    ) -> Table {
        self.push(name, true, Values::Int(v.into_iter().collect()))
    }

    /// Adds a nullable float column.
    pub fn opt_float(
        self,
        name: impl Into<String>,
        v: impl IntoIterator<Item = Option<f64>>,
    ) -> Table {
        self.push(name, true, Values::Float(v.into_iter().collect()))
    }

    /// Adds a non-null text column.
    pub fn text(self, name: impl Into<String>, v: impl IntoIterator<Item = String>) -> Table {
        self.push(name, false, Values::Text(v.into_iter().map(Some).collect()))
    }

    /// Adds a nullable text column.
    pub fn opt_text(
        self,
        name: impl Into<String>,
        v: impl IntoIterator<Item = Option<String>>,
    ) -> Table {
        self.push(name, true, Values::Text(v.into_iter().collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_keep_order_nullability_and_cells() {
        let t = Table::new("t")
            .int("a_ns", [1, 2])
            .opt_float("b", [Some(0.5), None])
            .opt_text("c", [None, Some("x".to_string())]);
        assert_eq!(t.rows(), 2);
        let names: Vec<_> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a_ns", "b", "c"]);
        assert!(!t.columns[0].nullable && t.columns[1].nullable);
        assert_eq!(t.columns[1].values.cell(1), Cell::Null);
        assert_eq!(t.columns[2].values.cell(1), Cell::Text("x"));
        assert_eq!(Table::new("empty").rows(), 0);
    }

    #[test]
    fn unsigned_values_saturate() {
        assert_eq!(int(5), 5);
        assert_eq!(int(u64::MAX), i64::MAX);
    }
}
