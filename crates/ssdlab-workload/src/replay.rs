//! A source over requests already in memory: for tests, bindings and programmatic use.

use crate::{HostRequest, RequestSource, WorkloadError};

/// Replays a fixed list of requests in order.
pub struct VecSource {
    requests: std::vec::IntoIter<HostRequest>,
}

impl VecSource {
    pub fn new(requests: Vec<HostRequest>) -> VecSource {
        VecSource {
            requests: requests.into_iter(),
        }
    }
}

impl RequestSource for VecSource {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        Ok(self.requests.next())
    }
}
