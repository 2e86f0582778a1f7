//! The `scan` step: one read (find, aggregate or countDocuments) of each of a list of
//! collections in turn, genny's CollectionScanner (`crate::workload::command::Scan`).

use super::*;
use crate::workload::command::{Scan, ScanOrder};

/// The reads a scan may make of each collection.
const READS: [Verb; 3] = [Verb::Find, Verb::Aggregate, Verb::CountDocuments];

const EXAMPLE: &str = "scan = { read = { find = { filter = { a = 1 } } }, order = \"forward\" }";

impl GroupAt<'_> {
    pub(super) fn scan_command(&self, a: &Args<'_>) -> Result<Command, ProfileError> {
        let read = self.scan_read(a)?;
        let order = match a.table.get("order") {
            None => ScanOrder::AsListed,
            Some(toml::Value::String(s)) if s == "listed" => ScanOrder::AsListed,
            Some(toml::Value::String(s)) if s == "forward" => ScanOrder::Forward,
            Some(toml::Value::String(s)) if s == "reverse" => ScanOrder::Reverse,
            Some(_) => {
                return Err(a.err(
                    "order",
                    "`order` is \"listed\", \"forward\" or \"reverse\"",
                    "order = \"forward\"",
                ))
            }
        };
        let skip = a.int_as::<usize>("skip", 0, i64::MAX)?.unwrap_or(0);
        if skip > 0 && order == ScanOrder::AsListed {
            return Err(a.err(
                "skip",
                "`skip` leaves out the first collections of an `order`, and the scan has no `order`",
                "order = \"forward\", skip = 2",
            ));
        }
        let hold = scan_duration(a, "hold")?;
        let continuous = a.bool("continuous")?.unwrap_or(false);
        if continuous && hold.is_none() {
            return Err(a.err(
                "continuous",
                "`continuous` scans again until `hold` has passed, and there is no `hold`",
                "hold = \"2m\", continuous = true",
            ));
        }
        if hold.is_some() && self.g.transaction != Some(true) {
            return Err(a.err(
                "hold",
                "`hold` keeps the scan's transaction open, and the group runs none",
                "transaction = true on the group (genny's snapshot scan)",
            ));
        }
        let megabytes = match a.table.get("megabytes") {
            None => None,
            Some(toml::Value::String(s)) => Some(megabytes(s).ok_or_else(|| {
                a.err(
                    "megabytes",
                    format!("`{s}` is not `N per T`"),
                    "megabytes = \"10 per 1s\" (whole megabytes, shared by every scan of the run)",
                )
            })?),
            Some(_) => {
                return Err(a.err(
                    "megabytes",
                    "`megabytes` is `N per T`",
                    "megabytes = \"10 per 1s\"",
                ))
            }
        };
        if megabytes.is_some() && matches!(read, Command::Count(_)) {
            return Err(a.err(
                "megabytes",
                "a count reads no documents to pace (genny paces only find and aggregate scans)",
                "leave `megabytes` out",
            ));
        }
        let at = scan_at(self, a, &read, hold.is_some() || megabytes.is_some())?;
        Ok(Command::Scan(Arc::new(Scan {
            at,
            read,
            collections: scan_names(a, "collections")?,
            databases: scan_names(a, "databases")?.unwrap_or_default(),
            order,
            skip,
            documents: a.int_as::<u64>("documents", 1, i64::MAX)?,
            bytes: a.int_as::<u64>("bytes", 1, i64::MAX)?,
            hold,
            continuous,
            megabytes,
        })))
    }

    /// `read = { find = {...} }`: the one read each collection gets.
    fn scan_read(&self, a: &Args<'_>) -> Result<Command, ProfileError> {
        let Some(toml::Value::Table(read)) = a.table.get("read") else {
            return Err(a.err("read", "a scan needs `read`, a table of one read", EXAMPLE));
        };
        let mut entries = read.iter();
        let (Some((verb_name, value)), None) = (entries.next(), entries.next()) else {
            return Err(a.err(
                "read",
                "`read` holds exactly one read: find, aggregate or countDocuments",
                EXAMPLE,
            ));
        };
        let verb = Verb::from_name(verb_name)
            .filter(|v| READS.contains(v))
            .ok_or_else(|| {
                a.err(
                    "read",
                    format!("`{verb_name}` is not a read a scan makes (find, aggregate or countDocuments)"),
                    EXAMPLE,
                )
            })?;
        let path = format!("{}.read.{verb_name}", a.path);
        let inner = Args {
            loaded: a.loaded,
            table: self.op_table(verb, value, &path)?,
            path,
            verb,
            coll: a.coll,
        };
        inner.check_keys()?;
        self.command(&inner, value)
    }
}

/// `at`: a point-in-time scan's kept time, for a find of its filter only, outside any
/// transaction, unheld and unpaced (`held`: with `hold` or `megabytes`).
fn scan_at(
    g: &GroupAt<'_>,
    a: &Args<'_>,
    read: &Command,
    held: bool,
) -> Result<Option<String>, ProfileError> {
    let at = match a.table.get("at") {
        None => None,
        Some(toml::Value::String(k)) if !k.is_empty() => Some(k.clone()),
        Some(_) => {
            return Err(a.err(
                "at",
                "`at` names the cluster time a `clusterTime` step kept",
                "at = \"before\"",
            ))
        }
    };
    if at.is_some() {
        let plain = match read {
            Command::Find(f) => {
                f.args.sort.is_none()
                    && f.args.limit.is_none()
                    && f.args.skip.is_none()
                    && f.args.projection.is_none()
                    && f.args.hint.is_none()
                    && f.args.batch_size.is_none()
                    && f.args.collation.is_none()
                    && f.args.max_time_ms.is_none()
                    && f.args.let_vars.is_none()
            }
            _ => false,
        };
        if !plain {
            return Err(a.err(
                "at",
                "a point-in-time scan sends `find` with its filter only (genny's command)",
                "read = { find = { filter = { a = 1 } } }, at = \"before\"",
            ));
        }
        if a.table.contains_key("order") || a.table.contains_key("skip") {
            return Err(a.err(
                "at",
                "a point-in-time scan reads the collections as listed (genny sorts and skips only the others)",
                "leave out `order` and `skip`",
            ));
        }
        if g.g.transaction == Some(true) || held {
            return Err(a.err(
                "at",
                "a point-in-time scan reads outside any transaction, unheld and unpaced",
                "leave out `hold`, `megabytes` and the group's `transaction`",
            ));
        }
    }
    Ok(at)
}

/// A list of one or more names at `k`, if given.
fn scan_names(a: &Args<'_>, k: &str) -> Result<Option<Vec<String>>, ProfileError> {
    match a.table.get(k) {
        None => Ok(None),
        Some(toml::Value::Array(list))
            if !list.is_empty()
                && list
                    .iter()
                    .all(|v| v.as_str().is_some_and(|s| !s.is_empty())) =>
        {
            Ok(Some(
                list.iter()
                    .filter_map(toml::Value::as_str)
                    .map(str::to_string)
                    .collect(),
            ))
        }
        Some(_) => Err(a.err(
            k,
            format!("`{k}` is a list of one or more names"),
            format!("{k} = [\"a\", \"b\"]"),
        )),
    }
}

/// A duration at `k`, if given.
fn scan_duration(a: &Args<'_>, k: &str) -> Result<Option<std::time::Duration>, ProfileError> {
    match a.table.get(k) {
        None => Ok(None),
        Some(toml::Value::String(s)) => crate::plan::limits::parse_duration(s)
            .map(Some)
            .map_err(|e| a.err(k, e, crate::plan::limits::duration_expected())),
        Some(_) => Err(a.err(
            k,
            format!("`{k}` is a duration"),
            crate::plan::limits::duration_expected(),
        )),
    }
}

/// `N per T`: whole megabytes per period.
fn megabytes(s: &str) -> Option<(u32, std::time::Duration)> {
    let (n, per) = s.split_once(" per ")?;
    let n: u32 = n.trim().parse().ok().filter(|n| *n > 0)?;
    let per = crate::plan::limits::parse_duration(per).ok()?;
    (!per.is_zero()).then_some((n, per))
}
