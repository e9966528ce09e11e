//! Opening trace files (plain, gzip, zstd) and reading them line by line into one reused
//! buffer.

use crate::WorkloadError;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

const READ_BUFFER_BYTES: usize = 256 * 1024;
/// Longest line accepted (memory stays bounded even on a file without line ends).
const MAX_LINE_BYTES: u64 = 1 << 20;
/// Longest line kept in an error message.
pub(crate) const MAX_ERROR_TEXT: usize = 120;

/// Compression of a trace file, detected from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// A byte source: a file or any stream (fuzzing, generated traces).
pub(crate) type Source = Box<dyn BufRead + Send>;

/// Reads every frame of a (possibly multi-frame) zstd stream.
struct ZstdFrames {
    decoder: Option<ruzstd::decoding::StreamingDecoder<Source, ruzstd::decoding::FrameDecoder>>,
}

fn zstd_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}"))
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(dec) = self.decoder.as_mut() else {
                return Ok(0);
            };
            let n = dec.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // End of a frame: another one may follow.
            let Some(dec) = self.decoder.take() else {
                return Ok(0);
            };
            let mut source = dec.into_inner();
            if source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.decoder = Some(ruzstd::decoding::StreamingDecoder::new(source).map_err(zstd_err)?);
        }
    }
}

/// Open `path`, transparently decompressing gzip and zstd files.
pub(crate) fn open(path: &Path) -> Result<(Box<dyn BufRead + Send>, Compression), WorkloadError> {
    let io_err = |err| WorkloadError::Io {
        file: path.display().to_string(),
        err,
    };
    let file = File::open(path).map_err(io_err)?;
    let raw: Source = Box::new(BufReader::with_capacity(READ_BUFFER_BYTES, file));
    decompress(raw, &path.display().to_string())
}

/// `raw`, transparently decompressed when it starts with a gzip or zstd magic number.
pub(crate) fn decompress(
    mut raw: Source,
    name: &str,
) -> Result<(Box<dyn BufRead + Send>, Compression), WorkloadError> {
    let io_err = |err| WorkloadError::Io {
        file: name.to_string(),
        err,
    };
    let head = raw.fill_buf().map_err(io_err)?;
    let compression = if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    };
    let reader: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            READ_BUFFER_BYTES,
            flate2::bufread::MultiGzDecoder::new(raw),
        )),
        Compression::Zstd => {
            let decoder =
                ruzstd::decoding::StreamingDecoder::new(raw).map_err(|e| io_err(zstd_err(e)))?;
            Box::new(BufReader::with_capacity(
                READ_BUFFER_BYTES,
                ZstdFrames {
                    decoder: Some(decoder),
                },
            ))
        }
    };
    Ok((reader, compression))
}

/// Line reader over one reused buffer; strips `\n` and `\r\n`.
pub(crate) struct LineReader {
    reader: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    line_no: u64,
    file: String,
}

impl LineReader {
    pub(crate) fn open(path: &Path) -> Result<LineReader, WorkloadError> {
        let (reader, _) = open(path)?;
        Ok(LineReader::new(reader, path.display().to_string()))
    }

    /// Lines of an already opened (and decompressed) stream named `name` in errors.
    pub(crate) fn new(reader: Box<dyn BufRead + Send>, name: String) -> LineReader {
        LineReader {
            reader,
            buf: Vec::with_capacity(256),
            line_no: 0,
            file: name,
        }
    }

    /// 1-based number of the line last returned.
    pub(crate) fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The next line without its line end, `None` at the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<&[u8]>, WorkloadError> {
        self.buf.clear();
        let n = (&mut self.reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut self.buf)
            .map_err(|err| WorkloadError::Io {
                file: format!("{}:{}", self.file, self.line_no + 1),
                err,
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        if n as u64 == MAX_LINE_BYTES && self.buf.last() != Some(&b'\n') {
            return Err(self.error(format!(
                "line longer than {MAX_LINE_BYTES} bytes; is this a text trace?"
            )));
        }
        let mut end = self.buf.len();
        if end > 0 && self.buf[end - 1] == b'\n' {
            end -= 1;
        }
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        Ok(Some(&self.buf[..end]))
    }

    /// A parse error for the line last returned.
    pub(crate) fn error(&self, reason: impl Into<String>) -> WorkloadError {
        let line = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        WorkloadError::Parse {
            file: self.file.clone(),
            line: self.line_no,
            text: truncate(line),
            reason: reason.into(),
        }
    }
}

/// `line` as text for an error message, cut at [`MAX_ERROR_TEXT`] characters.
pub(crate) fn truncate(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    if text.chars().count() <= MAX_ERROR_TEXT {
        text.into_owned()
    } else {
        let mut t: String = text.chars().take(MAX_ERROR_TEXT).collect();
        t.push('…');
        t
    }
}
