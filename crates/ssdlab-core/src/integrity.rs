//! Integrity mode: every write gets a fresh version number, stored with the unit in its
//! slot's out-of-band area (and in the write buffer); every read compares what it finds
//! with the last version written. A mismatch stops the run with the address and the
//! recent operations on it.

use crate::base::Version;
use std::collections::VecDeque;

const LOG_CAPACITY: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
enum Event {
    Write {
        version: Version,
    },
    Place {
        from_slot: u32,
        to_slot: u32,
        version: Version,
    },
    Trim,
    Read {
        found: Version,
    },
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slot = |s: u32| {
            if s == u32::MAX {
                "none".to_string()
            } else {
                s.to_string()
            }
        };
        match *self {
            Event::Write { version } => write!(f, "host write v{version}"),
            Event::Place {
                from_slot,
                to_slot,
                version,
            } => write!(
                f,
                "v{version} placed in slot {} (was {})",
                slot(to_slot),
                slot(from_slot)
            ),
            Event::Trim => write!(f, "trim"),
            Event::Read { found } => write!(f, "read found v{found}"),
        }
    }
}

#[derive(Clone)]
pub struct Integrity {
    /// Last version written per logical unit; 0 = never written or trimmed.
    expected: Vec<Version>,
    next_version: Version,
    unit_bytes: u64,
    log: VecDeque<(u32, Event)>,
    pub checked_reads: u64,
}

/// Where a read found its data.
#[derive(Clone, Copy, Debug)]
pub enum Found {
    Buffer(Version),
    Flash {
        slot: u32,
        version: Version,
    },
    Unmapped,
    /// The read ran on a page whose program had not completed (or that was erased): it
    /// returned nothing.
    Unprogrammed {
        slot: u32,
    },
}

impl Integrity {
    /// Bytes of memory per logical unit (the last version written).
    pub fn bytes_per_unit() -> u64 {
        fn elem_bytes<T>(_: &[T]) -> u64 {
            std::mem::size_of::<T>() as u64
        }
        elem_bytes(&Integrity::new(0, 1).expected)
    }

    pub fn new(logical_units: u32, unit_bytes: u32) -> Integrity {
        Integrity {
            expected: vec![0; logical_units as usize],
            next_version: 1,
            unit_bytes: unit_bytes as u64,
            log: VecDeque::with_capacity(LOG_CAPACITY),
            checked_reads: 0,
        }
    }

    fn record(&mut self, lpn: u32, e: Event) {
        if self.log.len() == LOG_CAPACITY {
            self.log.pop_front();
        }
        self.log.push_back((lpn, e));
    }

    /// After a power cut (`Ftl::recover`): the recovered version of every unit (0: none);
    /// versions go on from `before`'s, so they stay unique.
    pub(crate) fn restore(&mut self, expected: Vec<Version>, before: &Integrity) {
        debug_assert_eq!(expected.len(), self.expected.len());
        self.expected = expected;
        self.next_version = before.next_version;
        self.checked_reads = before.checked_reads;
    }

    /// The version the next write (or trim record) gets: every version below it has been
    /// given.
    pub fn next_version(&self) -> Version {
        self.next_version
    }

    /// The next version given (a test hook: a device that has written `v - 1` units).
    pub(crate) fn set_next_version(&mut self, v: Version) {
        self.next_version = v.max(1);
    }

    /// A version for a trim record (after every write so far; no unit's expectation changes).
    pub fn new_record_version(&mut self) -> Version {
        let v = self.next_version;
        self.next_version += 1;
        v
    }

    /// A host write of `lpn` arrived: its new version.
    pub fn on_write(&mut self, lpn: u32) -> Version {
        let v = self.next_version;
        self.next_version += 1;
        self.expected[lpn as usize] = v;
        self.record(lpn, Event::Write { version: v });
        v
    }

    /// `lpn` (with `version`) was placed in `to_slot`, leaving `from_slot` (or NONE).
    pub fn on_place(&mut self, lpn: u32, from_slot: u32, to_slot: u32, version: Version) {
        self.record(
            lpn,
            Event::Place {
                from_slot,
                to_slot,
                version,
            },
        );
    }

    pub fn on_trim(&mut self, lpn: u32) {
        self.expected[lpn as usize] = 0;
        self.record(lpn, Event::Trim);
    }

    /// Check a read of `lpn`; on mismatch, the error text names the unit and its history.
    pub fn check_read(&mut self, lpn: u32, found: Found) -> Result<(), String> {
        self.checked_reads += 1;
        let want = self.expected[lpn as usize];
        let got = match found {
            Found::Buffer(v) => v,
            Found::Flash { version, .. } => version,
            Found::Unmapped | Found::Unprogrammed { .. } => 0,
        };
        if want == got {
            return Ok(());
        }
        self.record(lpn, Event::Read { found: got });
        let history: Vec<String> = self
            .log
            .iter()
            .filter(|(l, _)| *l == lpn)
            .map(|(_, e)| e.to_string())
            .collect();
        Err(format!(
            "read of unit {lpn} (byte offset {}) found version {got} ({found:?}) but version {want} was written last; recent operations on it: [{}]",
            lpn as u64 * self.unit_bytes,
            history.join(", ")
        ))
    }
}
