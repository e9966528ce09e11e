//! `ies`, immediate erase suspension (Wu et al., JSA 2014): suspend at the current position,
//! pay the penalty, serve every read (also those arriving while suspended), resume exactly
//! where the erase stopped. No bound on suspensions and no starvation guard: erases, and
//! the writes waiting for the blocks they free, can starve.

use super::EraseView;

#[derive(Clone, Copy, Debug, Default)]
pub struct Ies;

impl Ies {
    #[inline]
    pub fn next_point(&self, v: &EraseView) -> Option<u64> {
        (v.pos_ns < v.total_ns()).then_some(v.pos_ns)
    }
}
