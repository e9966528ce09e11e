//! `ssdlab serve`: real software on the simulated SSD.
//!
//! * [`nbd`] — the NBD protocol (fixed newstyle handshake, simple replies) and the server's
//!   listeners and connections, std only; it hands validated commands to the device loop
//!   over a channel and writes the replies it gets back.
//! * `device` — the device loop: the simulation, its clock (virtual or real time), the
//!   data the clients stored, results, power cuts.

pub mod nbd;
