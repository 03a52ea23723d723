//! The results table as Parquet (arrow-rs' `parquet` crate, without arrow): one row group,
//! text columns UTF8, integers INT64, floats DOUBLE, every column optional (null = missing),
//! uncompressed. The axis names are in the file's key-value metadata (`foliosim.axes`).
//! Written from the same table, the bytes are the same.

use super::table::{Cell, Column, Kind, Table};
use super::SweepError;
use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

const AXES_KEY: &str = "foliosim.axes";

fn err(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Invalid(format!("{}: {e}", path.display()))
}

fn schema(table: &Table) -> parquet::errors::Result<Type> {
    let fields = table
        .columns
        .iter()
        .map(|c| {
            let (physical, logical) = match c.kind {
                Kind::Str => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
                Kind::Int => (PhysicalType::INT64, None),
                Kind::Float => (PhysicalType::DOUBLE, None),
            };
            Type::primitive_type_builder(&c.name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Type::group_type_builder("foliosim_sweep")
        .with_fields(fields)
        .build()
}

fn write_column(
    w: &mut parquet::file::writer::SerializedColumnWriter<'_>,
    c: &Column,
) -> parquet::errors::Result<()> {
    let defs: Vec<i16> = c
        .cells
        .iter()
        .map(|x| i16::from(!matches!(x, Cell::Null)))
        .collect();
    match c.kind {
        Kind::Str => {
            let v: Vec<ByteArray> = c
                .cells
                .iter()
                .filter_map(|x| match x {
                    Cell::Str(s) => Some(ByteArray::from(s.as_str())),
                    _ => None,
                })
                .collect();
            w.typed::<ByteArrayType>()
                .write_batch(&v, Some(&defs), None)?;
        }
        Kind::Int => {
            let v: Vec<i64> = c
                .cells
                .iter()
                .filter_map(|x| match x {
                    Cell::Int(i) => Some(*i),
                    _ => None,
                })
                .collect();
            w.typed::<Int64Type>().write_batch(&v, Some(&defs), None)?;
        }
        Kind::Float => {
            let v: Vec<f64> = c.cells.iter().filter_map(Cell::as_f64).collect();
            w.typed::<DoubleType>().write_batch(&v, Some(&defs), None)?;
        }
    }
    Ok(())
}

/// The table as Parquet bytes.
pub fn to_bytes(table: &Table) -> parquet::errors::Result<Vec<u8>> {
    let props = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_key_value_metadata(Some(vec![KeyValue::new(
            AXES_KEY.into(),
            serde_json::to_string(&table.axes).expect("strings serialize"),
        )]))
        .build();
    let mut buf = vec![];
    let mut writer =
        SerializedFileWriter::new(&mut buf, Arc::new(schema(table)?), Arc::new(props))?;
    let mut rg = writer.next_row_group()?;
    let mut columns = table.columns.iter();
    while let Some(mut w) = rg.next_column()? {
        let c = columns.next().expect("one writer per schema column");
        write_column(&mut w, c)?;
        w.close()?;
    }
    rg.close()?;
    writer.close()?;
    Ok(buf)
}

/// Write atomically (a temporary file renamed).
pub fn write(table: &Table, path: &Path) -> Result<(), SweepError> {
    let bytes = to_bytes(table).map_err(|e| err(path, e))?;
    super::write_atomic(path, &bytes)
}

/// Read a table written by [`write`] (or any flat Parquet file of text and number columns;
/// without our metadata, the axes are the columns before `seed`).
pub fn read(path: &Path) -> Result<Table, SweepError> {
    let file = std::fs::File::open(path).map_err(|source| SweepError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let reader = SerializedFileReader::new(file).map_err(|e| err(path, e))?;
    let meta = reader.metadata().file_metadata();
    let axes_meta: Option<Vec<String>> = meta
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == AXES_KEY))
        .and_then(|k| k.value.as_deref())
        .and_then(|v| serde_json::from_str(v).ok());
    let mut columns: Vec<Column> = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| Column {
            name: c.name().to_string(),
            kind: match c.physical_type() {
                PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY => Kind::Str,
                PhysicalType::FLOAT | PhysicalType::DOUBLE => Kind::Float,
                _ => Kind::Int,
            },
            cells: vec![],
        })
        .collect();
    for row in reader.get_row_iter(None).map_err(|e| err(path, e))? {
        let row = row.map_err(|e| err(path, e))?;
        for (col, (_, field)) in columns.iter_mut().zip(row.get_column_iter()) {
            col.cells.push(match field {
                Field::Null => Cell::Null,
                Field::Bool(b) => Cell::Int(*b as i64),
                Field::Byte(v) => Cell::Int(*v as i64),
                Field::Short(v) => Cell::Int(*v as i64),
                Field::Int(v) => Cell::Int(*v as i64),
                Field::Long(v) => Cell::Int(*v),
                Field::UByte(v) => Cell::Int(*v as i64),
                Field::UShort(v) => Cell::Int(*v as i64),
                Field::UInt(v) => Cell::Int(*v as i64),
                Field::ULong(v) => Cell::Int(i64::try_from(*v).unwrap_or(i64::MAX)),
                Field::Float(v) => Cell::Float(*v as f64),
                Field::Double(v) => Cell::Float(*v),
                Field::Str(s) => Cell::Str(s.clone()),
                other => Cell::Str(other.to_string()),
            });
        }
    }
    let axes = axes_meta.unwrap_or_else(|| {
        columns
            .iter()
            .take_while(|c| c.name != "seed")
            .map(|c| c.name.clone())
            .collect()
    });
    Ok(Table { axes, columns })
}
