//! Sweep axes: which scenario fields vary, over which values.
//!
//! An axis is a scenario key (a TOML dotted key: `kernel.version`, `sysfs.hugepages."64K"`,
//! `workload.0.nproc` with an array index) and its values, from `--set KEY=V1,V2` or an axes
//! file; or a named axis whose every value sets several keys at once (a folio size that turns
//! one per-size knob on and the others off).

use super::SweepError;
use serde::Deserialize;

/// One value of an axis: the label it has in the results, and the settings it makes.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    pub label: String,
    pub set: Vec<(Vec<String>, toml::Value)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The results' column name: the canonical key (`sysfs.hugepages.64K`) or the axis' name.
    pub name: String,
    pub values: Vec<AxisValue>,
}

/// Split a dotted key into its segments; `"…"` and `'…'` quote a segment (`."64K"`).
pub fn parse_key(text: &str) -> Result<Vec<String>, SweepError> {
    let bad = |why: &str| SweepError::axis(text, format!("bad key: {why}"));
    let mut segments = vec![];
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut seg = String::new();
        match chars.peek() {
            Some(&q) if q == '"' || q == '\'' => {
                chars.next();
                loop {
                    match chars.next() {
                        None => return Err(bad("unterminated quote")),
                        Some(c) if c == q => break,
                        Some('\\') if q == '"' => seg.extend(chars.next()),
                        Some(c) => seg.push(c),
                    }
                }
                if !matches!(chars.peek(), None | Some('.')) {
                    return Err(bad("a quoted segment must be followed by `.` or the end"));
                }
            }
            _ => {
                while let Some(&c) = chars.peek() {
                    if c == '.' {
                        break;
                    }
                    seg.push(c);
                    chars.next();
                }
                seg = seg.trim().to_string();
                if seg.is_empty() {
                    return Err(bad("empty segment"));
                }
            }
        }
        segments.push(seg);
        match chars.next() {
            None => break,
            Some('.') => continue,
            Some(c) => return Err(bad(&format!("unexpected `{c}`"))),
        }
    }
    Ok(segments)
}

fn is_bare(seg: &str) -> bool {
    !seg.is_empty()
        && seg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The key as a column name: segments joined by `.`, quoted only where TOML needs it.
pub fn canonical_key(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| {
            if is_bare(s) {
                s.clone()
            } else {
                format!("{s:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The value at `path` in a scenario's TOML tree (array segments are indices).
pub fn get_path<'a>(root: &'a toml::Value, path: &[String]) -> Option<&'a toml::Value> {
    let mut node = root;
    for seg in path {
        node = match node {
            toml::Value::Table(t) => t.get(seg)?,
            toml::Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Set `path` to `value`, creating missing tables; an error says which segment does not fit.
pub fn set_path(root: &mut toml::Value, path: &[String], value: toml::Value) -> Result<(), String> {
    let (last, parents) = path.split_last().ok_or("empty key")?;
    let mut node = root;
    for (i, seg) in parents.iter().enumerate() {
        let here = canonical_key(&path[..i]);
        node = match node {
            toml::Value::Table(t) => t
                .entry(seg.clone())
                .or_insert_with(|| toml::Value::Table(Default::default())),
            toml::Value::Array(a) => {
                let len = a.len();
                let idx = seg.parse::<usize>().ok().filter(|&i| i < len);
                let Some(idx) = idx else {
                    return Err(format!(
                        "`{here}` is an array of {len}; allowed indices: 0..{}",
                        len.saturating_sub(1)
                    ));
                };
                &mut a[idx]
            }
            _ => return Err(format!("`{here}` is a value, not a table")),
        };
    }
    match node {
        toml::Value::Table(t) => {
            t.insert(last.clone(), value);
            Ok(())
        }
        toml::Value::Array(a) => {
            let len = a.len();
            match last.parse::<usize>().ok().filter(|&i| i < len) {
                Some(i) => {
                    a[i] = value;
                    Ok(())
                }
                None => Err(format!(
                    "`{}` is an array of {len}; allowed indices: 0..{}",
                    canonical_key(parents),
                    len.saturating_sub(1)
                )),
            }
        }
        _ => Err(format!(
            "`{}` is a value, not a table",
            canonical_key(parents)
        )),
    }
}

/// A command-line value as TOML: quoted text is a TOML string; otherwise it takes the type
/// of the field it replaces in the base scenario, and a field the base leaves out takes
/// `true`/`false`, an integer, a float or else a string.
pub fn infer_value(text: &str, existing: Option<&toml::Value>) -> toml::Value {
    let text = text.trim();
    if text.starts_with('"') || text.starts_with('\'') {
        if let Ok(t) = toml::from_str::<toml::Table>(&format!("v = {text}")) {
            if let Some(v) = t.get("v") {
                return v.clone();
            }
        }
    }
    let s = || toml::Value::String(text.to_string());
    match existing {
        Some(toml::Value::String(_)) => s(),
        Some(toml::Value::Integer(_)) => text
            .parse()
            .map(toml::Value::Integer)
            .unwrap_or_else(|_| s()),
        Some(toml::Value::Float(_)) => text.parse().map(toml::Value::Float).unwrap_or_else(|_| s()),
        Some(toml::Value::Boolean(_)) => text
            .parse()
            .map(toml::Value::Boolean)
            .unwrap_or_else(|_| s()),
        _ => {
            if let Ok(b) = text.parse::<bool>() {
                toml::Value::Boolean(b)
            } else if let Ok(i) = text.parse::<i64>() {
                toml::Value::Integer(i)
            } else if let Ok(f) = text.parse::<f64>() {
                toml::Value::Float(f)
            } else {
                s()
            }
        }
    }
}

/// Split `V1,V2` on commas outside quotes.
fn split_values(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quote = None;
    for c in text.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, ',') => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|v| v.trim().to_string()).collect()
}

fn unquoted_label(text: &str) -> String {
    let t = text.trim();
    if t.len() >= 2
        && ((t.starts_with('"') && t.ends_with('"')) || (t.starts_with('\'') && t.ends_with('\'')))
    {
        t[1..t.len() - 1].to_string()
    } else {
        t.to_string()
    }
}

/// `--set KEY=V1,V2,…` against the base scenario's TOML tree (for the values' types).
pub fn parse_set(arg: &str, base: &toml::Value) -> Result<Axis, SweepError> {
    // The key may hold `=` inside quotes: split at the first `=` outside them.
    let mut quote = None;
    let mut split = None;
    for (i, c) in arg.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => {
                split = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(at) = split else {
        return Err(SweepError::axis(
            arg,
            "expected KEY=V1,V2,… (e.g. kernel.version=6.9,6.10)",
        ));
    };
    let path = parse_key(&arg[..at])?;
    let name = canonical_key(&path);
    let existing = get_path(base, &path);
    let values = split_values(&arg[at + 1..])
        .into_iter()
        .map(|v| {
            if v.is_empty() {
                return Err(SweepError::axis(&name, "empty value"));
            }
            Ok(AxisValue {
                label: unquoted_label(&v),
                set: vec![(path.clone(), infer_value(&v, existing))],
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Axis { name, values })
}

/// `--set KEY=V1,V2,…` against a base scenario.
pub fn parse_set_on(arg: &str, base: &crate::Scenario) -> Result<Axis, SweepError> {
    let tree = toml::Value::try_from(base)
        .map_err(|e| SweepError::Invalid(format!("base scenario: {e}")))?;
    parse_set(arg, &tree)
}

/// A key as written by a user (`sysfs.hugepages."64K"`) in its canonical form
/// (`sysfs.hugepages.64K`); text that is no key is returned as it is.
pub fn canonical(text: &str) -> String {
    parse_key(text).map_or_else(|_| text.to_string(), |k| canonical_key(&k))
}

/// An axes file (TOML):
///
/// ```toml
/// seeds = 5                       # optional: runs per configuration (seeds 1..=5)
///
/// [[axis]]
/// key = "kernel.version"
/// values = ["6.9", "6.10"]
///
/// [[axis]]                        # a named axis: each value sets several keys
/// name = "size"
/// values = [
///   { label = "4K",  set = { 'sysfs.hugepages."64K"' = "never",  'sysfs.hugepages."2M"' = "never" } },
///   { label = "64K", set = { 'sysfs.hugepages."64K"' = "always", 'sysfs.hugepages."2M"' = "never" } },
/// ]
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxesFile {
    #[serde(default)]
    pub seeds: Option<u32>,
    #[serde(default, rename = "axis")]
    pub axes: Vec<AxisSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    pub values: Vec<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedValue {
    label: String,
    set: toml::Table,
}

fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl AxisSpec {
    pub fn to_axis(&self) -> Result<Axis, SweepError> {
        let what = self.key.as_deref().or(self.name.as_deref()).unwrap_or("?");
        match (&self.key, &self.name) {
            (Some(key), None) => {
                let path = parse_key(key)?;
                Ok(Axis {
                    name: canonical_key(&path),
                    values: self
                        .values
                        .iter()
                        .map(|v| AxisValue {
                            label: label_of(v),
                            set: vec![(path.clone(), v.clone())],
                        })
                        .collect(),
                })
            }
            (None, Some(name)) => {
                let values = self
                    .values
                    .iter()
                    .map(|v| {
                        let nv: NamedValue = v.clone().try_into().map_err(|e| {
                            SweepError::axis(
                                name,
                                format!("each value must be {{ label = \"…\", set = {{ KEY = VALUE, … }} }}: {e}"),
                            )
                        })?;
                        let set = nv
                            .set
                            .iter()
                            .map(|(k, v)| Ok((parse_key(k)?, v.clone())))
                            .collect::<Result<Vec<_>, SweepError>>()?;
                        Ok(AxisValue { label: nv.label, set })
                    })
                    .collect::<Result<Vec<_>, SweepError>>()?;
                Ok(Axis { name: name.clone(), values })
            }
            _ => Err(SweepError::axis(
                what,
                "an [[axis]] has one of `key` (one scenario key) or `name` (values that set several keys): found both or neither",
            )),
        }
    }
}

impl AxesFile {
    pub fn from_toml_str(text: &str) -> Result<AxesFile, SweepError> {
        toml::from_str(text).map_err(|e| SweepError::Invalid(format!("axes file: {e}")))
    }

    pub fn axes(&self) -> Result<Vec<Axis>, SweepError> {
        self.axes.iter().map(AxisSpec::to_axis).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        parse_key(text).unwrap()
    }

    #[test]
    fn keys_split_on_dots_outside_quotes() {
        assert_eq!(keys("kernel.version"), ["kernel", "version"]);
        assert_eq!(
            keys(r#"sysfs.hugepages."64K""#),
            ["sysfs", "hugepages", "64K"]
        );
        assert_eq!(keys("sysfs.hugepages.'a.b'"), ["sysfs", "hugepages", "a.b"]);
        assert_eq!(keys("workload.0.nproc"), ["workload", "0", "nproc"]);
        assert!(parse_key("kernel..version").is_err());
        assert!(parse_key(r#"sysfs."64K"#).is_err());
        assert_eq!(
            canonical_key(&keys(r#"sysfs.hugepages."64K""#)),
            "sysfs.hugepages.64K"
        );
        assert_eq!(canonical_key(&keys("costs.'a b'")), "costs.\"a b\"");
    }

    #[test]
    fn values_take_the_type_of_the_field_they_replace() {
        let base: toml::Value =
            toml::from_str("[kernel]\nversion = \"6.10\"\n[machine]\ncpus = 4\n").unwrap();
        let a = parse_set("kernel.version=6.9,6.10", &base).unwrap();
        assert_eq!(a.name, "kernel.version");
        assert_eq!(a.values[0].set[0].1, toml::Value::String("6.9".into()));
        assert_eq!(a.values[1].label, "6.10");
        let c = parse_set("machine.cpus=2,8", &base).unwrap();
        assert_eq!(c.values[1].set[0].1, toml::Value::Integer(8));
        // Absent field: inferred; quoted text is a string.
        let d = parse_set(r#"kernel.swapin_mthp=true,"false""#, &base).unwrap();
        assert_eq!(d.values[0].set[0].1, toml::Value::Boolean(true));
        assert_eq!(d.values[1].set[0].1, toml::Value::String("false".into()));
        assert_eq!(d.values[1].label, "false");
        let h = parse_set(r#"sysfs.hugepages."64K"=always,never"#, &base).unwrap();
        assert_eq!(h.name, "sysfs.hugepages.64K");
        assert!(parse_set("kernel.version", &base).is_err());
        assert!(parse_set("kernel.version=6.9,", &base).is_err());
    }

    #[test]
    fn set_path_creates_tables_and_indexes_arrays() {
        let mut v: toml::Value = toml::from_str("[[workload]]\nkind = \"usemem\"\n").unwrap();
        set_path(&mut v, &keys("sysfs.hugepages.64K"), "always".into()).unwrap();
        set_path(&mut v, &keys("workload.0.nproc"), 3.into()).unwrap();
        assert_eq!(
            get_path(&v, &keys("workload.0.nproc")),
            Some(&toml::Value::Integer(3))
        );
        let e = set_path(&mut v, &keys("workload.1.nproc"), 3.into()).unwrap_err();
        assert!(e.contains("array of 1"), "{e}");
        let e = set_path(&mut v, &keys("workload.0.kind.x"), 3.into()).unwrap_err();
        assert!(e.contains("not a table"), "{e}");
    }

    #[test]
    fn axes_file_has_key_axes_and_named_axes() {
        let f = AxesFile::from_toml_str(
            r#"
seeds = 3
[[axis]]
key = "kernel.version"
values = ["6.9", "6.10"]
[[axis]]
name = "size"
values = [
  { label = "4K", set = { 'sysfs.hugepages."64K"' = "never" } },
  { label = "64K", set = { 'sysfs.hugepages."64K"' = "always", "machine.cpus" = 2 } },
]
"#,
        )
        .unwrap();
        assert_eq!(f.seeds, Some(3));
        let axes = f.axes().unwrap();
        assert_eq!(axes[0].name, "kernel.version");
        assert_eq!(axes[1].name, "size");
        assert_eq!(axes[1].values[1].label, "64K");
        assert_eq!(axes[1].values[1].set.len(), 2);
        let bad =
            AxesFile::from_toml_str("[[axis]]\nkey = \"a\"\nname = \"b\"\nvalues = [1]\n").unwrap();
        assert!(bad.axes().is_err());
        assert!(AxesFile::from_toml_str("[[axis]]\nkey = \"a\"\nvalus = [1]\n").is_err());
    }
}
