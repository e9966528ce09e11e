//! The fixed newstyle handshake and option haggling (proto.md "Newstyle negotiation",
//! "Fixed newstyle negotiation", "Option types", "Option reply types").

use std::io::{self, Read, Write};

use super::proto::*;
use super::Export;

/// A client's export name is logged (escaped) up to this many characters.
const LOGGED_NAME_CHARS: usize = 64;

/// How option haggling ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `NBD_OPT_GO` or `NBD_OPT_EXPORT_NAME` succeeded: enter transmission.
    Transmission,
    /// The client ended the session cleanly (`NBD_OPT_ABORT`, or closed between options).
    Ended,
}

fn read_or(stream: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), String> {
    stream.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            format!("client closed the connection in the middle of {what}")
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("handshake timed out waiting for {what}")
        }
        _ => format!("read error during {what}: {e}"),
    })
}

fn send(stream: &mut impl Write, buf: &[u8]) -> Result<(), String> {
    stream
        .write_all(buf)
        .map_err(|e| format!("write error during the handshake: {e}"))
}

/// Runs the server side of the handshake. `Err(why)` ends the session (the caller logs it
/// and closes the socket).
pub(crate) fn negotiate<S: Read + Write>(
    stream: &mut S,
    export: &Export,
) -> Result<Outcome, String> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&NBD_MAGIC.to_be_bytes());
    out.extend_from_slice(&NBD_OPTS_MAGIC.to_be_bytes());
    out.extend_from_slice(&(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES).to_be_bytes());
    send(stream, &out)?;

    let mut b4 = [0u8; 4];
    read_or(stream, &mut b4, "the client flags")?;
    let client_flags = u32::from_be_bytes(b4);
    let known = NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES;
    if client_flags & !known != 0 {
        return Err(format!("unknown client flags {client_flags:#x}, closing"));
    }
    let no_zeroes = client_flags & NBD_FLAG_C_NO_ZEROES != 0;

    loop {
        let mut head = [0u8; 16];
        // A client closing cleanly between options is not an error.
        match stream.read(&mut head[..1]) {
            Ok(0) => return Ok(Outcome::Ended),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err("handshake timed out waiting for an option".into())
            }
            Err(e) => return Err(format!("read error during the handshake: {e}")),
        }
        read_or(stream, &mut head[1..], "an option header")?;
        let magic = u64::from_be_bytes(head[0..8].try_into().unwrap());
        if magic != NBD_OPTS_MAGIC {
            return Err(format!("bad option magic {magic:#018x}, closing"));
        }
        let option = u32::from_be_bytes(head[8..12].try_into().unwrap());
        let len = u32::from_be_bytes(head[12..16].try_into().unwrap());
        out.clear();
        if len > MAX_OPTION_BYTES {
            if option != NBD_OPT_EXPORT_NAME {
                let msg =
                    format!("option data of {len} bytes is over the limit of {MAX_OPTION_BYTES}");
                option_reply(&mut out, option, NBD_REP_ERR_TOO_BIG, msg.as_bytes());
                let _ = stream.write_all(&out);
            }
            return Err(format!(
                "{} with {len} bytes of data (limit {MAX_OPTION_BYTES}), closing",
                option_name(option)
            ));
        }
        let mut data = vec![0u8; len as usize];
        read_or(stream, &mut data, "option data")?;

        match option {
            NBD_OPT_EXPORT_NAME => {
                if !name_matches(&data, export) {
                    return Err(format!(
                        "NBD_OPT_EXPORT_NAME for unknown export '{}', closing",
                        super::escape(&data, LOGGED_NAME_CHARS)
                    ));
                }
                out.extend_from_slice(&export.size_bytes.to_be_bytes());
                out.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                if !no_zeroes {
                    out.extend_from_slice(&[0u8; 124]);
                }
                send(stream, &out)?;
                return Ok(Outcome::Transmission);
            }
            NBD_OPT_ABORT => {
                option_reply(&mut out, option, NBD_REP_ACK, &[]);
                // The client may already have closed (proto.md: handle that gracefully).
                let _ = stream.write_all(&out);
                return Ok(Outcome::Ended);
            }
            NBD_OPT_LIST => {
                if len != 0 {
                    option_reply(
                        &mut out,
                        option,
                        NBD_REP_ERR_INVALID,
                        b"NBD_OPT_LIST takes no data",
                    );
                } else {
                    let mut server =
                        Vec::with_capacity(4 + export.name.len() + export.description.len());
                    server.extend_from_slice(&(export.name.len() as u32).to_be_bytes());
                    server.extend_from_slice(export.name.as_bytes());
                    server.extend_from_slice(export.description.as_bytes());
                    option_reply(&mut out, option, NBD_REP_SERVER, &server);
                    option_reply(&mut out, option, NBD_REP_ACK, &[]);
                }
                send(stream, &out)?;
            }
            NBD_OPT_INFO | NBD_OPT_GO => {
                let go = info_reply(&mut out, option, &data, export);
                send(stream, &out)?;
                if go && option == NBD_OPT_GO {
                    return Ok(Outcome::Transmission);
                }
            }
            _ => {
                let msg = format!("{} is not supported by this server", option_name(option));
                option_reply(&mut out, option, NBD_REP_ERR_UNSUP, msg.as_bytes());
                send(stream, &out)?;
            }
        }
    }
}

fn name_matches(name: &[u8], export: &Export) -> bool {
    name.is_empty() || name == export.name.as_bytes()
}

/// Appends the replies to `NBD_OPT_INFO` / `NBD_OPT_GO`; true when they end with ACK.
fn info_reply(out: &mut Vec<u8>, option: u32, data: &[u8], export: &Export) -> bool {
    let Some(req) = parse_info_request(data) else {
        option_reply(
            out,
            option,
            NBD_REP_ERR_INVALID,
            b"malformed request: lengths do not add up",
        );
        return false;
    };
    if !name_matches(&req.name, export) {
        let msg = format!(
            "unknown export '{}'; this server exports '{}' (or use the default name '')",
            super::escape(&req.name, LOGGED_NAME_CHARS),
            export.name
        );
        option_reply(out, option, NBD_REP_ERR_UNKNOWN, msg.as_bytes());
        return false;
    }
    option_reply(
        out,
        option,
        NBD_REP_INFO,
        &info_export(export.size_bytes, TRANSMISSION_FLAGS),
    );
    let sizes = info_block_size(
        export.min_block_bytes,
        export.preferred_block_bytes,
        export.max_block_bytes,
    );
    option_reply(out, option, NBD_REP_INFO, &sizes);
    if req.infos.contains(&NBD_INFO_NAME) {
        option_reply(
            out,
            option,
            NBD_REP_INFO,
            &info_string(NBD_INFO_NAME, &export.name),
        );
    }
    if req.infos.contains(&NBD_INFO_DESCRIPTION) {
        option_reply(
            out,
            option,
            NBD_REP_INFO,
            &info_string(NBD_INFO_DESCRIPTION, &export.description),
        );
    }
    option_reply(out, option, NBD_REP_ACK, &[]);
    true
}
