//! The NBD wire format: magic numbers, flags, option/info/reply codes and error values of
//! the NBD protocol document (`doc/proto.md` of github.com/NetworkBlockDevice/nbd), and the
//! pure pieces of the protocol (request header parsing, request validation, reply and option
//! reply encoding) that the connection code uses and the unit tests check byte by byte.
//!
//! All numbers on the wire are big-endian.

use super::{CmdKind, Export};

// ---- Handshake -------------------------------------------------------------------------

/// `NBDMAGIC`, the first 8 bytes the server sends.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: the newstyle magic (server greeting) and the magic of every client option.
pub const NBD_OPTS_MAGIC: u64 = 0x4948_4156_454F_5054;
/// Magic of every fixed-newstyle option reply.
pub const NBD_REP_MAGIC: u64 = 0x0003_e889_0455_65a9;

/// Handshake flag: the server speaks fixed newstyle.
pub const NBD_FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag: the server can omit the 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub const NBD_FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flag: the client speaks fixed newstyle.
pub const NBD_FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag: no 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub const NBD_FLAG_C_NO_ZEROES: u32 = 1 << 1;

// ---- Transmission flags ----------------------------------------------------------------

pub const NBD_FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const NBD_FLAG_READ_ONLY: u16 = 1 << 1;
pub const NBD_FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const NBD_FLAG_SEND_FUA: u16 = 1 << 3;
pub const NBD_FLAG_ROTATIONAL: u16 = 1 << 4;
pub const NBD_FLAG_SEND_TRIM: u16 = 1 << 5;
pub const NBD_FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const NBD_FLAG_SEND_DF: u16 = 1 << 7;
pub const NBD_FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

/// The transmission flags this server advertises: flush, FUA, trim, write zeroes, and
/// multi-connection (a flush makes the writes of every connection durable: one device).
pub const TRANSMISSION_FLAGS: u16 = NBD_FLAG_HAS_FLAGS
    | NBD_FLAG_SEND_FLUSH
    | NBD_FLAG_SEND_FUA
    | NBD_FLAG_SEND_TRIM
    | NBD_FLAG_SEND_WRITE_ZEROES
    | NBD_FLAG_CAN_MULTI_CONN;

// ---- Options ---------------------------------------------------------------------------

pub const NBD_OPT_EXPORT_NAME: u32 = 1;
pub const NBD_OPT_ABORT: u32 = 2;
pub const NBD_OPT_LIST: u32 = 3;
pub const NBD_OPT_STARTTLS: u32 = 5;
pub const NBD_OPT_INFO: u32 = 6;
pub const NBD_OPT_GO: u32 = 7;
pub const NBD_OPT_STRUCTURED_REPLY: u32 = 8;
pub const NBD_OPT_LIST_META_CONTEXT: u32 = 9;
pub const NBD_OPT_SET_META_CONTEXT: u32 = 10;
pub const NBD_OPT_EXTENDED_HEADERS: u32 = 11;

pub const NBD_REP_ACK: u32 = 1;
pub const NBD_REP_SERVER: u32 = 2;
pub const NBD_REP_INFO: u32 = 3;
pub const NBD_REP_FLAG_ERROR: u32 = 1 << 31;
pub const NBD_REP_ERR_UNSUP: u32 = NBD_REP_FLAG_ERROR | 1;
pub const NBD_REP_ERR_POLICY: u32 = NBD_REP_FLAG_ERROR | 2;
pub const NBD_REP_ERR_INVALID: u32 = NBD_REP_FLAG_ERROR | 3;
pub const NBD_REP_ERR_PLATFORM: u32 = NBD_REP_FLAG_ERROR | 4;
pub const NBD_REP_ERR_TLS_REQD: u32 = NBD_REP_FLAG_ERROR | 5;
pub const NBD_REP_ERR_UNKNOWN: u32 = NBD_REP_FLAG_ERROR | 6;
pub const NBD_REP_ERR_SHUTDOWN: u32 = NBD_REP_FLAG_ERROR | 7;
pub const NBD_REP_ERR_BLOCK_SIZE_REQD: u32 = NBD_REP_FLAG_ERROR | 8;
pub const NBD_REP_ERR_TOO_BIG: u32 = NBD_REP_FLAG_ERROR | 9;

pub const NBD_INFO_EXPORT: u16 = 0;
pub const NBD_INFO_NAME: u16 = 1;
pub const NBD_INFO_DESCRIPTION: u16 = 2;
pub const NBD_INFO_BLOCK_SIZE: u16 = 3;

/// The largest option payload the server reads (export names are at most 4096 bytes by
/// proto.md, so no sane option comes near this); a longer option ends the session.
pub const MAX_OPTION_BYTES: u32 = 64 * 1024;

// ---- Transmission ----------------------------------------------------------------------

pub const NBD_REQUEST_MAGIC: u32 = 0x2560_9513;
pub const NBD_SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Bytes of a request header: magic, flags, type, cookie, offset, length.
pub const REQUEST_HEADER_BYTES: usize = 28;
/// Bytes of a simple reply header: magic, error, cookie.
pub const REPLY_HEADER_BYTES: usize = 16;

pub const NBD_CMD_READ: u16 = 0;
pub const NBD_CMD_WRITE: u16 = 1;
pub const NBD_CMD_DISC: u16 = 2;
pub const NBD_CMD_FLUSH: u16 = 3;
pub const NBD_CMD_TRIM: u16 = 4;
pub const NBD_CMD_CACHE: u16 = 5;
pub const NBD_CMD_WRITE_ZEROES: u16 = 6;
pub const NBD_CMD_BLOCK_STATUS: u16 = 7;

pub const NBD_CMD_FLAG_FUA: u16 = 1 << 0;
pub const NBD_CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const NBD_CMD_FLAG_DF: u16 = 1 << 2;
pub const NBD_CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const NBD_CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

// ---- Error values (the `error` field of a reply) ----------------------------------------

pub const NBD_EPERM: u32 = 1;
pub const NBD_EIO: u32 = 5;
pub const NBD_ENOMEM: u32 = 12;
pub const NBD_EINVAL: u32 = 22;
pub const NBD_ENOSPC: u32 = 28;
pub const NBD_EOVERFLOW: u32 = 75;
pub const NBD_ENOTSUP: u32 = 95;
pub const NBD_ESHUTDOWN: u32 = 108;

/// The largest WRITE payload the server reads and discards to keep the stream in sync when
/// it refuses the write; proto.md: "any payload not exceeding 2^25 (33,554,432) bytes SHOULD
/// NOT be considered a denial of service attack". Longer refused payloads end the session.
pub const MAX_SKIP_PAYLOAD_BYTES: u32 = 1 << 25;
/// The largest maximum block size an [`Export`] may advertise (32 MiB).
pub const MAX_BLOCK_BYTES_CAP: u32 = 1 << 25;

// ---- Requests --------------------------------------------------------------------------

/// A parsed request header (the magic already checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub length: u32,
}

/// Parses a 28-byte request header; `Err(magic)` when the magic is wrong (the stream is
/// then unusable).
pub fn parse_request(b: &[u8; REQUEST_HEADER_BYTES]) -> Result<RequestHeader, u32> {
    let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if magic != NBD_REQUEST_MAGIC {
        return Err(magic);
    }
    Ok(RequestHeader {
        flags: u16::from_be_bytes([b[4], b[5]]),
        kind: u16::from_be_bytes([b[6], b[7]]),
        cookie: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        length: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    })
}

/// What the connection does with a request that passed the magic check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Forward to the device (a WRITE's payload is read first).
    Forward {
        kind: CmdKind,
        fua: bool,
        no_hole: bool,
    },
    /// `NBD_CMD_DISC`: stop reading.
    Disconnect,
    /// Answer with this NBD error; for a WRITE the payload is read and dropped first.
    Reject { errno: u32, why: &'static str },
}

/// Validates a request against the export (proto.md "Size constraints", "Request types",
/// "Error values"):
/// * unknown command (CACHE and BLOCK_STATUS included: not advertised) → `NBD_EINVAL`;
/// * a flag not documented for the command, or not advertised → `NBD_EINVAL`. FUA is
///   accepted on every command (proto.md: the server MUST accept it when `SEND_FUA` is
///   advertised); it is forwarded as `fua` for the writing commands and dropped for READ and
///   FLUSH. NO_HOLE only on WRITE_ZEROES;
/// * length 0 on READ/WRITE/TRIM/WRITE_ZEROES → `NBD_EINVAL` (proto.md: "unspecified";
///   the device never sees empty requests);
/// * READ/WRITE longer than the maximum block size → `NBD_EINVAL`; TRIM and WRITE_ZEROES
///   carry no payload and may be longer (proto.md lets clients send them so; qemu does for
///   discards);
/// * offset or length not a multiple of the minimum block size → `NBD_EINVAL`;
/// * beyond the export: WRITE and WRITE_ZEROES → `NBD_ENOSPC` (proto.md: "SHOULD return
///   NBD_ENOSPC if it receives a write request including one or more sectors beyond the
///   size of the device"), READ and TRIM → `NBD_EINVAL`;
/// * FLUSH with a non-zero offset or length → `NBD_EINVAL` (they MUST be zero).
pub fn validate(h: &RequestHeader, export: &Export) -> Verdict {
    let reject = |errno, why| Verdict::Reject { errno, why };
    let kind = match h.kind {
        NBD_CMD_READ => CmdKind::Read,
        NBD_CMD_WRITE => CmdKind::Write,
        NBD_CMD_DISC => return Verdict::Disconnect,
        NBD_CMD_FLUSH => CmdKind::Flush,
        NBD_CMD_TRIM => CmdKind::Trim,
        NBD_CMD_WRITE_ZEROES => CmdKind::WriteZeroes,
        _ => return reject(NBD_EINVAL, "unknown command"),
    };
    let allowed = match kind {
        CmdKind::WriteZeroes => NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE,
        _ => NBD_CMD_FLAG_FUA,
    };
    if h.flags & !allowed != 0 {
        return reject(NBD_EINVAL, "unsupported command flag");
    }
    let fua = h.flags & NBD_CMD_FLAG_FUA != 0;
    let no_hole = h.flags & NBD_CMD_FLAG_NO_HOLE != 0;
    if kind == CmdKind::Flush {
        if h.offset != 0 || h.length != 0 {
            return reject(NBD_EINVAL, "flush with a non-zero offset or length");
        }
        return Verdict::Forward {
            kind,
            fua: false,
            no_hole: false,
        };
    }
    if h.length == 0 {
        return reject(NBD_EINVAL, "zero length");
    }
    if matches!(kind, CmdKind::Read | CmdKind::Write) && h.length > export.max_block_bytes {
        return reject(NBD_EINVAL, "length over the maximum block size");
    }
    let min = u64::from(export.min_block_bytes.max(1));
    if !h.offset.is_multiple_of(min) || !u64::from(h.length).is_multiple_of(min) {
        return reject(NBD_EINVAL, "not aligned to the minimum block size");
    }
    let end = h.offset.checked_add(u64::from(h.length));
    if end.is_none_or(|end| end > export.size_bytes) {
        let errno = match kind {
            CmdKind::Write | CmdKind::WriteZeroes => NBD_ENOSPC,
            _ => NBD_EINVAL,
        };
        return reject(errno, "beyond the end of the export");
    }
    let fua = fua && !matches!(kind, CmdKind::Read);
    Verdict::Forward { kind, fua, no_hole }
}

/// The 16-byte simple reply header.
pub fn reply_header(cookie: u64, errno: u32) -> [u8; REPLY_HEADER_BYTES] {
    let mut b = [0u8; REPLY_HEADER_BYTES];
    b[0..4].copy_from_slice(&NBD_SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&errno.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b
}

// ---- Option replies --------------------------------------------------------------------

/// Appends one fixed-newstyle option reply (magic, option, type, length, data) to `out`.
pub fn option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    out.extend_from_slice(&NBD_REP_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// `NBD_INFO_EXPORT` payload: type, size, transmission flags (12 bytes).
pub fn info_export(size_bytes: u64, flags: u16) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0..2].copy_from_slice(&NBD_INFO_EXPORT.to_be_bytes());
    b[2..10].copy_from_slice(&size_bytes.to_be_bytes());
    b[10..12].copy_from_slice(&flags.to_be_bytes());
    b
}

/// `NBD_INFO_BLOCK_SIZE` payload: type, minimum, preferred, maximum (14 bytes).
pub fn info_block_size(min: u32, preferred: u32, max: u32) -> [u8; 14] {
    let mut b = [0u8; 14];
    b[0..2].copy_from_slice(&NBD_INFO_BLOCK_SIZE.to_be_bytes());
    b[2..6].copy_from_slice(&min.to_be_bytes());
    b[6..10].copy_from_slice(&preferred.to_be_bytes());
    b[10..14].copy_from_slice(&max.to_be_bytes());
    b
}

/// `NBD_INFO_NAME` / `NBD_INFO_DESCRIPTION` payload: type then the string.
pub fn info_string(info: u16, s: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(2 + s.len());
    b.extend_from_slice(&info.to_be_bytes());
    b.extend_from_slice(s.as_bytes());
    b
}

/// The data of an `NBD_OPT_INFO` / `NBD_OPT_GO` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoRequest {
    pub name: Vec<u8>,
    pub infos: Vec<u16>,
}

/// Parses `NBD_OPT_INFO` / `NBD_OPT_GO` data: name length, name, count, count info types.
/// `None` when the lengths do not add up to the option length (→ `NBD_REP_ERR_INVALID`).
pub fn parse_info_request(data: &[u8]) -> Option<InfoRequest> {
    if data.len() < 6 {
        return None;
    }
    let name_len = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
    if name_len > data.len() - 6 {
        return None;
    }
    let name = data[4..4 + name_len].to_vec();
    let rest = &data[4 + name_len..];
    let count = u16::from_be_bytes([rest[0], rest[1]]) as usize;
    let list = &rest[2..];
    if list.len() != 2 * count {
        return None;
    }
    let infos = list
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    Some(InfoRequest { name, infos })
}

/// Name of an option code, for log lines.
pub fn option_name(option: u32) -> &'static str {
    match option {
        NBD_OPT_EXPORT_NAME => "NBD_OPT_EXPORT_NAME",
        NBD_OPT_ABORT => "NBD_OPT_ABORT",
        NBD_OPT_LIST => "NBD_OPT_LIST",
        4 => "NBD_OPT_PEEK_EXPORT",
        NBD_OPT_STARTTLS => "NBD_OPT_STARTTLS",
        NBD_OPT_INFO => "NBD_OPT_INFO",
        NBD_OPT_GO => "NBD_OPT_GO",
        NBD_OPT_STRUCTURED_REPLY => "NBD_OPT_STRUCTURED_REPLY",
        NBD_OPT_LIST_META_CONTEXT => "NBD_OPT_LIST_META_CONTEXT",
        NBD_OPT_SET_META_CONTEXT => "NBD_OPT_SET_META_CONTEXT",
        NBD_OPT_EXTENDED_HEADERS => "NBD_OPT_EXTENDED_HEADERS",
        _ => "unknown option",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export() -> Export {
        Export {
            name: "ssd".into(),
            description: "d".into(),
            size_bytes: 1 << 20,
            min_block_bytes: 512,
            preferred_block_bytes: 4096,
            max_block_bytes: 1 << 16,
        }
    }

    fn req(kind: u16, flags: u16, offset: u64, length: u32) -> RequestHeader {
        RequestHeader {
            flags,
            kind,
            cookie: 7,
            offset,
            length,
        }
    }

    fn rejected(v: Verdict) -> u32 {
        match v {
            Verdict::Reject { errno, .. } => errno,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn constants_match_proto_md() {
        assert_eq!(&NBD_MAGIC.to_be_bytes(), b"NBDMAGIC");
        assert_eq!(&NBD_OPTS_MAGIC.to_be_bytes(), b"IHAVEOPT");
        assert_eq!(NBD_REP_MAGIC, 0x3e889045565a9);
        assert_eq!(NBD_REP_ERR_UNSUP, 0x8000_0001);
        assert_eq!(NBD_REP_ERR_UNKNOWN, 0x8000_0006);
        assert_eq!(NBD_REP_ERR_TOO_BIG, 0x8000_0009);
        // HAS_FLAGS, SEND_FLUSH, SEND_FUA, SEND_TRIM, SEND_WRITE_ZEROES, CAN_MULTI_CONN.
        assert_eq!(TRANSMISSION_FLAGS, 0b1_0110_1101);
    }

    #[test]
    fn parses_a_request_header() {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&1u16.to_be_bytes());
        b[6..8].copy_from_slice(&6u16.to_be_bytes());
        b[8..16].copy_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        b[16..24].copy_from_slice(&4096u64.to_be_bytes());
        b[24..28].copy_from_slice(&512u32.to_be_bytes());
        let h = parse_request(&b).unwrap();
        assert_eq!(
            h,
            RequestHeader {
                flags: 1,
                kind: 6,
                cookie: 0x0102_0304_0506_0708,
                offset: 4096,
                length: 512
            }
        );
        b[0] = 0x12;
        assert_eq!(parse_request(&b), Err(0x1260_9513));
    }

    #[test]
    fn validation_follows_proto_md() {
        let e = export();
        let fwd = |kind, fua, no_hole| Verdict::Forward { kind, fua, no_hole };
        assert_eq!(
            validate(&req(NBD_CMD_READ, 0, 0, 512), &e),
            fwd(CmdKind::Read, false, false)
        );
        // FUA is accepted everywhere, forwarded only where it means something.
        assert_eq!(
            validate(&req(NBD_CMD_READ, 1, 0, 512), &e),
            fwd(CmdKind::Read, false, false)
        );
        assert_eq!(
            validate(&req(NBD_CMD_WRITE, 1, 512, 1024), &e),
            fwd(CmdKind::Write, true, false)
        );
        assert_eq!(
            validate(&req(NBD_CMD_FLUSH, 1, 0, 0), &e),
            fwd(CmdKind::Flush, false, false)
        );
        assert_eq!(
            validate(&req(NBD_CMD_WRITE_ZEROES, 3, 0, 512), &e),
            fwd(CmdKind::WriteZeroes, true, true)
        );
        // TRIM and WRITE_ZEROES may exceed the maximum payload (no payload).
        assert_eq!(
            validate(&req(NBD_CMD_TRIM, 0, 0, 1 << 20), &e),
            fwd(CmdKind::Trim, false, false)
        );
        assert_eq!(
            validate(&req(NBD_CMD_DISC, 0, 0, 0), &e),
            Verdict::Disconnect
        );

        assert_eq!(
            rejected(validate(&req(NBD_CMD_CACHE, 0, 0, 512), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_BLOCK_STATUS, 0, 0, 512), &e)),
            NBD_EINVAL
        );
        assert_eq!(rejected(validate(&req(99, 0, 0, 512), &e)), NBD_EINVAL);
        assert_eq!(
            rejected(validate(
                &req(NBD_CMD_WRITE, NBD_CMD_FLAG_NO_HOLE, 0, 512),
                &e
            )),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_READ, NBD_CMD_FLAG_DF, 0, 512), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_FLUSH, 0, 512, 0), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_READ, 0, 0, 0), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_WRITE, 0, 0, (1 << 16) + 512), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_READ, 0, 100, 512), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_TRIM, 0, 0, 100), &e)),
            NBD_EINVAL
        );
        // Beyond the end: ENOSPC for writes, EINVAL for reads and trims.
        let last = (1 << 20) - 512;
        assert!(matches!(
            validate(&req(NBD_CMD_WRITE, 0, last, 512), &e),
            Verdict::Forward { .. }
        ));
        assert_eq!(
            rejected(validate(&req(NBD_CMD_WRITE, 0, last, 1024), &e)),
            NBD_ENOSPC
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_WRITE_ZEROES, 0, last, 1024), &e)),
            NBD_ENOSPC
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_READ, 0, last, 1024), &e)),
            NBD_EINVAL
        );
        assert_eq!(
            rejected(validate(&req(NBD_CMD_TRIM, 0, last, 1024), &e)),
            NBD_EINVAL
        );
        // offset + length overflowing u64 is beyond the end, not a wrap-around.
        let far = u64::MAX - 511;
        assert_eq!(
            rejected(validate(&req(NBD_CMD_READ, 0, far, 1024), &e)),
            NBD_EINVAL
        );
    }

    #[test]
    fn encodes_replies() {
        let h = reply_header(0xAABB, NBD_EINVAL);
        assert_eq!(
            h,
            [0x67, 0x44, 0x66, 0x98, 0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0xAA, 0xBB]
        );
        let mut out = Vec::new();
        option_reply(&mut out, NBD_OPT_GO, NBD_REP_ACK, &[]);
        assert_eq!(
            out,
            [0, 3, 0xe8, 0x89, 0x04, 0x55, 0x65, 0xa9, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0]
        );
        assert_eq!(
            info_export(0x1_0000_0000, 0x16d),
            [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x01, 0x6d]
        );
        assert_eq!(
            info_block_size(512, 4096, 1 << 25),
            [0, 3, 0, 0, 2, 0, 0, 0, 0x10, 0, 2, 0, 0, 0]
        );
    }

    #[test]
    fn parses_info_requests() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"ssd");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&NBD_INFO_NAME.to_be_bytes());
        d.extend_from_slice(&NBD_INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(
            parse_info_request(&d),
            Some(InfoRequest {
                name: b"ssd".to_vec(),
                infos: vec![1, 3]
            })
        );
        assert_eq!(parse_info_request(&d[..d.len() - 1]), None);
        assert_eq!(parse_info_request(&d[..5]), None);
        let mut long_name = d.clone();
        long_name[0..4].copy_from_slice(&100u32.to_be_bytes());
        assert_eq!(parse_info_request(&long_name), None);
    }
}
