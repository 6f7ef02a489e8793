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

fn check_count(path: &str, count: Option<u32>) -> Result<u32, ScenarioError> {
    match count {
        Some(0) => Err(ScenarioError::new(format!("{path}.count"), "must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(1),
    }
}

pub fn links(ls: &[LinkConfig]) -> Result<Vec<Expanded<LinkConfig>>, ScenarioError> {
    let mut out = Vec::new();
    for (k, l) in ls.iter().enumerate() {
        let path = format!("links[{k}]");
        let n = check_count(&path, l.count)?;
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
    let mut out = Vec::new();
    for (k, f) in fs.iter().enumerate() {
        let path = format!("flows[{k}]");
        let n = check_count(&path, f.count)?;
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
                c.start = f.start + crate::time::Dur(f.start_step.0 * j as u64);
                c.count = None;
            }
            let p = if f.count.is_some() { format!("{path} (i = {i})") } else { path.clone() };
            out.push(Expanded { item: c, path: p });
        }
    }
    Ok(out)
}
