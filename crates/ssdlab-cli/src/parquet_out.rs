//! `sweep.parquet`: the sweep table for pandas / Arrow users, typed: `point` (int64), the
//! swept keys (UTF-8, as given on the command line), `status` (UTF-8), every headline
//! figure as a nullable double (empty in the CSV = null) and `error` (UTF-8, null when the
//! point ran).

use anyhow::{Context, Result};
use parquet::basic::{ConvertedType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

/// One column of text or numbers.
enum Column {
    Text(Vec<Option<String>>),
    Number(Vec<Option<f64>>),
}

/// Write `rows` (each `[point, swept values…, headline values…, error]` as text) with
/// `header`; column `c > 0` is text where `is_text(c)`, else a number.
pub fn write(
    path: &Path,
    header: &[String],
    rows: &[Vec<String>],
    is_text: &dyn Fn(usize) -> bool,
) -> Result<()> {
    let cell = |r: &Vec<String>, c: usize| r.get(c).filter(|v| !v.is_empty()).cloned();
    let mut columns = Vec::new();
    let mut fields = Vec::new();
    for (c, name) in header.iter().enumerate() {
        let (col, ty) = if c == 0 {
            let v = rows
                .iter()
                .map(|r| cell(r, c).and_then(|x| x.parse::<f64>().ok()))
                .collect();
            (
                Column::Number(v),
                Type::primitive_type_builder(name, Physical::INT64)
                    .with_repetition(Repetition::REQUIRED),
            )
        } else if is_text(c) {
            let v = rows.iter().map(|r| cell(r, c)).collect();
            (
                Column::Text(v),
                Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                    .with_converted_type(ConvertedType::UTF8)
                    .with_repetition(Repetition::OPTIONAL),
            )
        } else {
            let v = rows
                .iter()
                .map(|r| cell(r, c).and_then(|x| x.parse::<f64>().ok()))
                .collect();
            (
                Column::Number(v),
                Type::primitive_type_builder(name, Physical::DOUBLE)
                    .with_repetition(Repetition::OPTIONAL),
            )
        };
        columns.push(col);
        fields.push(Arc::new(ty.build().context("parquet schema")?));
    }
    let schema = Type::group_type_builder("sweep")
        .with_fields(fields)
        .build()
        .context("parquet schema")?;
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = SerializedFileWriter::new(
        file,
        Arc::new(schema),
        Arc::new(WriterProperties::builder().build()),
    )
    .context("parquet writer")?;
    let mut rg = w.next_row_group().context("parquet row group")?;
    let mut i = 0;
    while let Some(mut col) = rg.next_column().context("parquet column")? {
        match &columns[i] {
            Column::Number(v) if i == 0 => {
                let vals: Vec<i64> = v.iter().map(|x| x.unwrap_or(0.0) as i64).collect();
                col.typed::<Int64Type>().write_batch(&vals, None, None)?;
            }
            Column::Number(v) => {
                let def: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
                let vals: Vec<f64> = v.iter().flatten().copied().collect();
                col.typed::<DoubleType>()
                    .write_batch(&vals, Some(&def), None)?;
            }
            Column::Text(v) => {
                let def: Vec<i16> = v.iter().map(|x| x.is_some() as i16).collect();
                let vals: Vec<ByteArray> = v
                    .iter()
                    .flatten()
                    .map(|s| ByteArray::from(s.as_str()))
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&vals, Some(&def), None)?;
            }
        }
        col.close().context("parquet column")?;
        i += 1;
    }
    rg.close().context("parquet row group")?;
    w.close().context("parquet file")?;
    Ok(())
}
