/** Bytes accepted wherever the checker takes binary data. */
export type Bytes = Uint8Array | ArrayBuffer | ArrayBufferView;

/** An iterator as BF.SCANDUMP returned it (clients give numbers, bigints or decimal strings). */
export type ScandumpIterator = number | bigint | string;

/** One `[iterator, data]` pair of a BF.SCANDUMP walk. */
export type ScandumpChunk = readonly [ScandumpIterator, Bytes];

/** Why a dump was refused: LOADCHUNK's verdicts, or INCOMPLETE for a walk with bytes missing. */
export type ScandumpErrorCode = 'BAD_DATA' | 'NO_LINK' | 'TOO_BIG' | 'INCOMPLETE';

/** Thrown for a malformed, hostile or incomplete dump. */
export class ScandumpError extends Error {
  readonly name: 'ScandumpError';
  readonly code: ScandumpErrorCode;
}

export interface FromScandumpOptions {
  /** Largest total of bit-array bytes accepted (default 1 GiB, 2^30); checked before allocating. */
  maxBytes?: number;
}

/** A Bloom filter rebuilt from a BF.SCANDUMP walk; read-only. */
export class BloomFilter {
  private constructor();

  /**
   * Rebuilds a filter from the `[iterator, data]` pairs of a whole BF.SCANDUMP walk, header
   * (iterator 1) first; a final `[0, empty]` pair is ignored. Applies every BF.LOADCHUNK check
   * and requires every layer byte to be present.
   * @throws {ScandumpError}
   */
  static fromScandump(chunks: Iterable<ScandumpChunk>, opts?: FromScandumpOptions): BloomFilter;

  /** Decodes a header alone (bit arrays zeroed); fill it with applyChunk. @throws {ScandumpError} */
  static decodeHeader(header: Bytes, maxBytes?: number): BloomFilter;

  /**
   * Copies one chunk in; `iter` is the iterator SCANDUMP returned with it. Returns the
   * `[start, end)` byte offsets written. @throws {ScandumpError}
   */
  applyChunk(iter: ScandumpIterator, data: Bytes): [number, number];

  /**
   * True when the item may have been added (BF.EXISTS would answer 1); false means it certainly
   * was not. Strings are hashed as UTF-8.
   */
  has(item: string | Bytes): boolean;

  /** Items the server counted as added (BF.CARD). */
  readonly size: number;
  /** Option bits (5 for filters made by commands, 13 when NONSCALING). */
  readonly options: number;
  /** Expansion factor. */
  readonly growth: number;
  /** Number of layers. */
  readonly layerCount: number;
  /** Total bytes of the bit arrays. */
  readonly byteLength: number;
  /** Sum of the layers' capacities (BF.INFO Capacity). */
  readonly capacity: number;
}

/** The item's hash pair as two 16-digit hex strings (64-bit, or the legacy 32-bit pair). */
export function hashPairHex(item: string | Bytes, legacy32?: boolean): [string, string];

export const OPT_NOROUND: 1;
export const OPT_ENTS_IS_BITS: 2;
export const OPT_FORCE64: 4;
export const OPT_NO_SCALING: 8;
/** Default of FromScandumpOptions.maxBytes: 2^30. */
export const DEFAULT_MAX_BYTES: number;
