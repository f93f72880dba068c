//! The copy form of a built Ribbon filter (`RF.SCANDUMP` / `RF.LOADCHUNK`): a fixed
//! little-endian header, then the body — the solution's words, then the bumped hashes, each a
//! u64 little-endian — as chunks of at most [`MAX_CHUNK_BYTES`] addressed by their 1-based
//! byte position in the body. A filter is rebuilt from the header and the chunks in order
//! ([`Loader`]); it answers nothing until the last chunk has arrived, so a half-copied filter
//! can never answer a false "no".
//!
//! Header ([`HEADER_BYTES`] bytes): format version u8 (1), error rate f64, items u64, blocks
//! u64, lower result bits u32, first upper block u64, seed u32, bumped hashes u64.

use super::{Bumped, Ribbon, Shape, MAX_ITEMS};

/// Bytes of the header.
pub const HEADER_BYTES: usize = 49;
/// The format version this code writes and reads.
pub const VERSION: u8 = 1;
/// The largest chunk [`chunk_at`] returns, in bytes (16 MiB, a multiple of 8).
pub const MAX_CHUNK_BYTES: u64 = 16 << 20;

/// Encodes the header of `ribbon`.
pub fn encode_header(ribbon: &Ribbon) -> [u8; HEADER_BYTES] {
    header_of(
        ribbon.error_rate(),
        ribbon.items(),
        ribbon.shape(),
        ribbon.seed(),
        ribbon.bumped().len() as u64,
    )
}

/// The header of a filter of these fields.
fn header_of(
    error_rate: f64,
    items: u64,
    shape: &Shape,
    seed: u32,
    bumped: u64,
) -> [u8; HEADER_BYTES] {
    let mut out = [0u8; HEADER_BYTES];
    out[0] = VERSION;
    out[1..9].copy_from_slice(&error_rate.to_le_bytes());
    out[9..17].copy_from_slice(&items.to_le_bytes());
    out[17..25].copy_from_slice(&shape.blocks().to_le_bytes());
    out[25..29].copy_from_slice(&shape.lower_bits().to_le_bytes());
    out[29..37].copy_from_slice(&shape.upper_start().to_le_bytes());
    out[37..41].copy_from_slice(&seed.to_le_bytes());
    out[41..49].copy_from_slice(&bumped.to_le_bytes());
    out
}

/// Bytes of `ribbon`'s body: 8 per solution word and per bumped hash.
pub fn body_bytes(ribbon: &Ribbon) -> u64 {
    (ribbon.words().len() + ribbon.bumped().len()) as u64 * 8
}

/// The chunk of `ribbon`'s body at 1-based byte position `position`: `(next, bytes)` with
/// `next` the position after it; `None` at or past the end (and for position 0, which is
/// the header's). A chunk is at most [`MAX_CHUNK_BYTES`] and ends on an 8-byte boundary
/// when it starts on one.
pub fn chunk_at(ribbon: &Ribbon, position: u64) -> Option<(u64, Vec<u8>)> {
    let total = body_bytes(ribbon);
    let from = position.checked_sub(1)?;
    if from >= total {
        return None;
    }
    let to = total.min(from + MAX_CHUNK_BYTES);
    let words = ribbon.words().len() as u64;
    let word = |index: u64| {
        if index < words {
            ribbon.words()[index as usize]
        } else {
            ribbon.bumped()[(index - words) as usize]
        }
    };
    let mut out = Vec::with_capacity((to - from) as usize);
    let mut at = from;
    while at < to {
        let bytes = word(at / 8).to_le_bytes();
        let skip = (at % 8) as usize;
        let take = (8 - skip).min((to - at) as usize);
        out.extend_from_slice(&bytes[skip..skip + take]);
        at += take as u64;
    }
    Some((to + 1, out))
}

/// Word `index` of a body laid out as `words` (of which there are `count`) then `bumped`.
fn body_word<'a>(
    words: &'a mut [u64],
    bumped: &'a mut [u64],
    count: u64,
    index: u64,
) -> &'a mut u64 {
    if index < count {
        &mut words[index as usize]
    } else {
        &mut bumped[(index - count) as usize]
    }
}

/// Why a header was refused; nothing was allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not [`HEADER_BYTES`] long, another version, an error rate outside (0, 1), more than
    /// [`MAX_ITEMS`] items or more bumped hashes than items, or not a shape
    /// ([`Shape::new`]).
    Invalid,
    /// The filter would need more than the `max_bytes` given to [`Loader::new`], or more
    /// than memory can give.
    TooLarge,
}

/// Why a chunk was refused; the filter being loaded is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkError {
    /// Not the next position (chunks come in order, each once), empty, or past the body's end.
    Position,
    /// The last chunk completed a body whose bumped hashes are not strictly increasing.
    Bumped,
    /// [`Loader::finish`] before the whole body arrived.
    Incomplete,
    /// Memory cannot hold the chunk.
    TooLarge,
}

/// What a header says of the filter besides its body.
#[derive(Debug, Clone, Copy)]
struct Meta {
    error_rate: f64,
    shape: Shape,
    seed: u32,
    items: u64,
}

/// A filter being copied in: the header's fields and the body received so far.
#[derive(Debug)]
pub struct Loader {
    meta: Meta,
    words: Vec<u64>,
    bumped: Vec<u64>,
    /// Body bytes received.
    received: u64,
    /// Words of the solution and bumped hashes the header announces (`words` and `bumped`
    /// grow towards them as chunks arrive).
    words_total: u64,
    bumped_total: u64,
}

/// Grows `v` to `len` elements (zeros), its allocation at most twice what is needed and never
/// past `total` (so what a copy holds is bounded by the bytes it received); `Err` when memory
/// cannot hold it (a fallible, non-zeroed allocation: never an abort).
fn grow(v: &mut Vec<u64>, len: u64, total: u64) -> Result<(), ()> {
    let len = len.min(total) as usize;
    if len <= v.len() {
        return Ok(());
    }
    if len > v.capacity() {
        let target = (v.capacity() as u64 * 2).clamp(len as u64, total) as usize;
        v.try_reserve_exact(target - v.len()).map_err(|_| ())?;
    }
    v.resize(len, 0);
    Ok(())
}

impl Loader {
    /// Validates `header`; allocates nothing yet (the body's memory grows with the chunks
    /// [`Loader::apply`] receives, so what a copy holds is bounded by the bytes it was sent,
    /// whatever its header claims). `max_bytes` bounds the body's size in bytes. Errors:
    /// [`HeaderError::Invalid`], [`HeaderError::TooLarge`].
    pub fn new(header: &[u8], max_bytes: u64) -> Result<Loader, HeaderError> {
        if header.len() != HEADER_BYTES || header[0] != VERSION {
            return Err(HeaderError::Invalid);
        }
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&header[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let error_rate = f64::from_bits(u64_at(1));
        let items = u64_at(9);
        let bumped = u64_at(41);
        if !(error_rate > 0.0 && error_rate < 1.0) || items > MAX_ITEMS || bumped > items {
            return Err(HeaderError::Invalid);
        }
        let shape = Shape::new(u64_at(17), u32_at(25), u64_at(29)).map_err(|e| match e {
            super::ShapeError::TooLarge => HeaderError::TooLarge,
            _ => HeaderError::Invalid,
        })?;
        let bytes = shape
            .bytes()
            .checked_add(bumped * 8)
            .ok_or(HeaderError::TooLarge)?;
        if bytes > max_bytes || usize::try_from(bytes).is_err() {
            return Err(HeaderError::TooLarge);
        }
        let meta = Meta {
            error_rate,
            shape,
            seed: u32_at(37),
            items,
        };
        Ok(Loader {
            meta,
            words: Vec::new(),
            bumped: Vec::new(),
            received: 0,
            words_total: shape.words(),
            bumped_total: bumped,
        })
    }

    /// Body bytes of the filter: 8 per word and per bumped hash.
    pub fn body_bytes(&self) -> u64 {
        (self.words_total + self.bumped_total) * 8
    }

    /// Bytes the loader holds now: what it allocated for the body received so far.
    pub fn allocated_bytes(&self) -> u64 {
        (self.words.capacity() + self.bumped.capacity()) as u64 * 8
    }

    /// The position the next chunk must have (1-based).
    pub fn next_position(&self) -> u64 {
        self.received + 1
    }

    /// The body bytes received so far, in order (what a saved half-copied filter keeps:
    /// [`Loader::apply`]ing them at position 1 to a new loader of the same header gives this
    /// loader back).
    pub fn received_body(&self) -> Vec<u8> {
        let words = self.words_total;
        let mut out = Vec::with_capacity(self.received as usize);
        let mut at = 0;
        while at < self.received {
            let index = at / 8;
            let word = if index < words {
                self.words[index as usize]
            } else {
                self.bumped[(index - words) as usize]
            };
            let take = (self.received - at).min(8) as usize;
            out.extend_from_slice(&word.to_le_bytes()[..take]);
            at += take as u64;
        }
        out
    }

    /// The header this loader was made from.
    pub fn header(&self) -> [u8; HEADER_BYTES] {
        let m = &self.meta;
        header_of(m.error_rate, m.items, &m.shape, m.seed, self.bumped_total)
    }

    /// Items of the filter being loaded (the header's count).
    pub fn items(&self) -> u64 {
        self.meta.items
    }

    /// Has the whole body arrived?
    pub fn is_complete(&self) -> bool {
        self.received == self.body_bytes()
    }

    /// Writes the chunk `data` at 1-based body position `position`, which must be
    /// [`Loader::next_position`]; when it completes the body, checks the bumped hashes.
    /// Errors, each leaving the loader as it was: [`ChunkError::Position`],
    /// [`ChunkError::TooLarge`] (memory cannot hold the chunk), [`ChunkError::Bumped`] (the
    /// chunk would complete a body that is not a filter).
    pub fn apply(&mut self, position: u64, data: &[u8]) -> Result<(), ChunkError> {
        let total = self.body_bytes();
        if position != self.next_position()
            || data.is_empty()
            || data.len() as u64 > total - self.received
        {
            return Err(ChunkError::Position);
        }
        let end = (self.received + data.len() as u64).div_ceil(8);
        let (words_before, bumped_before) = (self.words.len(), self.bumped.len());
        grow(&mut self.words, end, self.words_total).map_err(|()| ChunkError::TooLarge)?;
        if let Err(()) = grow(
            &mut self.bumped,
            end.saturating_sub(self.words_total),
            self.bumped_total,
        ) {
            self.words.truncate(words_before);
            return Err(ChunkError::TooLarge);
        }
        let received_before = self.received;
        let words = self.words_total;
        let mut at = self.received;
        let mut rest = data;
        while !rest.is_empty() {
            let skip = (at % 8) as usize;
            if skip == 0 && rest.len() >= 8 {
                let (head, tail) = rest.split_at(8);
                let mut b = [0u8; 8];
                b.copy_from_slice(head);
                *body_word(&mut self.words, &mut self.bumped, words, at / 8) =
                    u64::from_le_bytes(b);
                rest = tail;
                at += 8;
                continue;
            }
            // A partial word: its bytes `skip ..`, as many as there are.
            let take = (8 - skip).min(rest.len());
            let slot = body_word(&mut self.words, &mut self.bumped, words, at / 8);
            let mut b = slot.to_le_bytes();
            b[skip..skip + take].copy_from_slice(&rest[..take]);
            *slot = u64::from_le_bytes(b);
            rest = &rest[take..];
            at += take as u64;
        }
        self.received += data.len() as u64;
        if self.is_complete() && self.bumped.windows(2).any(|w| w[0] >= w[1]) {
            // Refused as a whole: back to what was received before (the bytes written past it
            // are rewritten by the next chunk).
            self.received = received_before;
            self.words.truncate(words_before);
            self.bumped.truncate(bumped_before);
            return Err(ChunkError::Bumped);
        }
        Ok(())
    }

    /// The filter, once complete. Errors: [`ChunkError::Incomplete`] before the last chunk,
    /// [`ChunkError::Bumped`] when the bumped hashes are not strictly increasing.
    pub fn finish(self) -> Result<Ribbon, ChunkError> {
        if !self.is_complete() {
            return Err(ChunkError::Incomplete);
        }
        let bumped = Bumped::new(self.bumped).ok_or(ChunkError::Bumped)?;
        let Meta {
            error_rate,
            shape,
            seed,
            items,
        } = self.meta;
        Ok(Ribbon {
            error_rate,
            shape,
            seed,
            items,
            words: self.words,
            bumped,
        })
    }
}
