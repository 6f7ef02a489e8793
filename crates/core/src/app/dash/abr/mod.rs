//! Adaptive bitrate (ABR) policies of the DASH player: each decides the rung of the next
//! segment from what the player observed. A policy is its own file here plus one registry
//! line (see `docs/registries.md`); `docs/models/dash.md` states each one's rule.

use crate::registry::registry;

registry! {
    /// ABR policies, tagged by `kind` (the player's `abr` key; default `throughput`).
    pub enum AbrConfig: dyn BuildAbr {
        throughput::Throughput(ThroughputConfig) = "throughput",
        bba::Bba(BbaConfig) = "bba",
        bola::Bola(BolaConfig) = "bola",
        // VLC 2.2's rate-based logic (RateBasedAdaptationLogic): 3/4 of the mean of all samples.
        vlc::Vlc(VlcConfig) = "vlc",
    }
}

impl Default for AbrConfig {
    fn default() -> Self {
        AbrConfig::Throughput(ThroughputConfig::default())
    }
}

/// What the player knows when it chooses the next segment's rung.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PlayerObs<'a> {
    /// Media buffered and not yet played, seconds.
    pub buffer_s: f64,
    /// Index of the segment to fetch (counting across loops of the content).
    pub index: u64,
    /// Rung of the previous segment (`None` before the first).
    pub last: Option<usize>,
    /// Download rate of every segment so far, oldest first, bits/s (segment bytes over the
    /// time from its request to its last byte).
    pub throughputs_bps: &'a [f64],
}

impl<'a> PlayerObs<'a> {
    pub fn new(buffer_s: f64, index: u64, last: Option<usize>, throughputs_bps: &'a [f64]) -> Self {
        PlayerObs { buffer_s, index, last, throughputs_bps }
    }
}

/// A rate-adaptation policy: the rung (index into the ladder's ascending bitrates) of the
/// next segment.
pub trait AbrPolicy: Send {
    fn choose(&mut self, obs: &PlayerObs) -> usize;
}

/// The player's fixed facts a policy is built for.
#[derive(Clone, Debug)]
pub struct AbrSetup<'a> {
    /// The ladder's declared bitrates (`@bandwidth`), ascending, bits/s; at least one.
    pub bitrates_bps: &'a [f64],
    /// The nominal segment duration, seconds.
    pub segment_s: f64,
    /// The player's buffer target: no request while more than this is buffered, seconds.
    pub max_buffer_s: f64,
}

/// Builds a policy from its config; every [`AbrConfig`] kind implements it. Errors are
/// `(field, reason)`, prefixed by the player as `abr.<field>`.
pub trait BuildAbr {
    fn build(&self, setup: &AbrSetup) -> Result<Box<dyn AbrPolicy>, (String, String)>;
}

impl AbrConfig {
    pub fn build(&self, setup: &AbrSetup) -> Result<Box<dyn AbrPolicy>, (String, String)> {
        self.config().build(setup)
    }
}

/// The highest rung whose bitrate is at most `rate_bps`, else the lowest.
pub fn highest_at_most(bitrates_bps: &[f64], rate_bps: f64) -> usize {
    bitrates_bps.iter().rposition(|&b| b <= rate_bps).unwrap_or(0)
}
