//! Expansion of `count = N` entries into N concrete links or flows.

use super::{FlowConfig, LinkConfig, ScenarioError};

/// A concrete entry plus the key path of the entry it came from (for error messages).
pub struct Expanded<T> {
    pub item: T,
    pub path: String,
}

fn subst(s: &str, i: u32) -> String {
    s.replace("{i}", &i.to_string())
}

/// Most links, and most flows, a scenario may expand to. A flow costs about 3 KB before the
/// run starts (1 M flows: 2.7 GB to validate), so this keeps a mistyped `count` from exhausting
/// memory; a packet-level run with a million flows is far beyond any study we know of.
pub const MAX_ENTRIES: u64 = 1_000_000;

/// Checks every entry's `count` and `index_base` before anything is expanded (so a too-large
/// total costs nothing), and that the total stays within [`MAX_ENTRIES`]. `what` is `"links"`
/// or `"flows"`, the list's key; returns each entry's count and their sum.
fn check_counts(
    what: &str,
    entries: impl Iterator<Item = (Option<u32>, u32)>,
) -> Result<(Vec<u32>, usize), ScenarioError> {
    let mut total = 0u64;
    let mut counts = Vec::new();
    for (k, (count, index_base)) in entries.enumerate() {
        let path = format!("{what}[{k}]");
        let n = match count {
            Some(0) => return Err(ScenarioError::new(format!("{path}.count"), "must be at least 1")),
            Some(n) => n,
            None => 1,
        };
        total += u64::from(n);
        if total > MAX_ENTRIES {
            return Err(ScenarioError::new(
                format!("{path}.count"),
                format!("the scenario would have {total} or more {what}; at most {MAX_ENTRIES} are allowed"),
            ));
        }
        if index_base.checked_add(n - 1).is_none() {
            return Err(ScenarioError::new(
                format!("{path}.index_base"),
                format!("index_base + count - 1 = {} exceeds {}", u64::from(index_base) + u64::from(n) - 1, u32::MAX),
            ));
        }
        counts.push(n);
    }
    Ok((counts, total as usize))
}

pub fn links(ls: &[LinkConfig]) -> Result<Vec<Expanded<LinkConfig>>, ScenarioError> {
    let (counts, total) = check_counts("links", ls.iter().map(|l| (l.count, l.index_base)))?;
    let mut out = Vec::with_capacity(total);
    for ((k, l), n) in ls.iter().enumerate().zip(counts) {
        let path = format!("links[{k}]");
        for j in 0..n {
            let i = l.index_base + j;
            let mut c = l.clone();
            if l.count.is_some() {
                c.a = subst(&l.a, i);
                c.b = subst(&l.b, i);
                c.count = None;
            }
            let p = if l.count.is_some() { format!("{path} (i = {i})") } else { path.clone() };
            out.push(Expanded { item: c, path: p });
        }
    }
    Ok(out)
}

pub fn flows(fs: &[FlowConfig]) -> Result<Vec<Expanded<FlowConfig>>, ScenarioError> {
    let (counts, total) = check_counts("flows", fs.iter().map(|f| (f.count, f.index_base)))?;
    let mut out = Vec::with_capacity(total);
    for ((k, f), n) in fs.iter().enumerate().zip(counts) {
        let path = format!("flows[{k}]");
        // The last instance starts at start + start_step * (count - 1): it must stay in range.
        let last_start = f.start_step.0.checked_mul(u64::from(n - 1)).and_then(|d| d.checked_add(f.start.0));
        if !last_start.is_some_and(|t| t <= crate::units::MAX_TIME_NS) {
            return Err(ScenarioError::new(
                format!("{path}.start_step"),
                "start + start_step * (count - 1) is beyond 146 years (2^62 ns)",
            ));
        }
        if n > 1 && !f.name.contains("{i}") {
            return Err(ScenarioError::new(
                format!("{path}.name"),
                "must contain {i} when count > 1, so flow names stay unique",
            ));
        }
        for j in 0..n {
            let i = f.index_base + j;
            let mut c = f.clone();
            if f.count.is_some() {
                c.name = subst(&f.name, i);
                c.src = subst(&f.src, i);
                c.dst = subst(&f.dst, i);
                c.route = f.route.as_ref().map(|r| r.iter().map(|n| subst(n, i)).collect());
                if let Some(sfs) = c.subflows.as_mut() {
                    for sf in sfs {
                        sf.route = sf.route.as_ref().map(|r| r.iter().map(|n| subst(n, i)).collect());
                    }
                }
                c.start = f.start + crate::time::Dur(f.start_step.0 * j as u64);
                c.count = None;
            }
            let p = if f.count.is_some() { format!("{path} (i = {i})") } else { path.clone() };
            out.push(Expanded { item: c, path: p });
        }
    }
    Ok(out)
}
