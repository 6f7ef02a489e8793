//! No loss: the default of every link direction.

use super::{BuildLoss, LossModel};
use serde::{Deserialize, Serialize};

/// `kind = "none"`: no parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoneConfig {}

impl BuildLoss for NoneConfig {
    /// No model at all, so the port draws no random number per packet.
    fn build(&self) -> Option<Box<dyn LossModel>> {
        None
    }
}
