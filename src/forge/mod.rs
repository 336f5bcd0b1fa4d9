//! Pull requests and CI. A forge (GitHub, or the offline local forge) is observed through one
//! forge-neutral type, [`PrSnapshot`], so the runner's decision logic never knows which forge it drives.

pub mod local;
mod snapshot;

pub use snapshot::{ACK_PREFIX, Check, CheckStatus, CiRollup, Comment, PrRef, PrSnapshot, PrState};
