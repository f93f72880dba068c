/** Bytes accepted wherever the checker takes binary data. */
export type Bytes = Uint8Array | ArrayBuffer | ArrayBufferView;

/**
 * An iterator as BF.SCANDUMP returned it: a number (node-redis' default), a bigint or a decimal
 * string (clients mapping integers to BigInt or String), read with Redis' integer rules. A
 * number must be a safe integer (|n| ≤ 2^53 − 1); larger iterators must come as bigint or string.
 */
export type ScandumpIterator = number | bigint | string;

/** One `[iterator, data]` pair of a BF.SCANDUMP walk. */
export type ScandumpChunk = readonly [ScandumpIterator, Bytes];

/**
 * Why a dump was refused. BF.LOADCHUNK's verdicts: BAD_DATA (`ERR received bad data`), NO_LINK
 * (`ERR invalid offset - no link found`), TOO_BIG (`ERR invalid chunk - Too big for current
 * filter`), NOT_NUMERIC (`ERR Second argument must be numeric`), OUT_OF_MEMORY (`ERR Insufficient
 * memory to create filter`: here, over `maxBytes`), NOT_FOUND (`ERR not found`: a chunk before
 * the header). The checker's own: UNSUPPORTED (a window filter's dump), INCOMPLETE (bytes missing).
 */
export type ScandumpErrorCode =
  | 'BAD_DATA'
  | 'NO_LINK'
  | 'TOO_BIG'
  | 'NOT_NUMERIC'
  | 'OUT_OF_MEMORY'
  | 'NOT_FOUND'
  | 'UNSUPPORTED'
  | 'INCOMPLETE'
  // CuckooFilter (CF.LOADCHUNK's verdicts):
  | 'INVALID_HEADER'
  | 'CANNOT_CREATE'
  | 'CANNOT_LOAD'
  | 'INVALID_POSITION'
  | 'ITEM_EXISTS';

/** Thrown for a malformed, hostile or incomplete dump. */
export class ScandumpError extends Error {
  readonly name: 'ScandumpError';
  readonly code: ScandumpErrorCode;
}

export interface FromScandumpOptions {
  /**
   * Largest total of bit-array bytes a header may announce (default 1 GiB, 2^30; a non-negative
   * safe integer or Infinity): more is refused with OUT_OF_MEMORY before anything is allocated.
   */
  maxBytes?: number;
}

/** A Bloom filter rebuilt from a BF.SCANDUMP walk; read-only. */
export class BloomFilter {
  private constructor();

  /**
   * Rebuilds a filter from the `[iterator, data]` pairs of a whole BF.SCANDUMP walk, header
   * (iterator 1) first; a final `[0, empty]` pair is ignored. Applies every BF.LOADCHUNK check
   * and requires every layer byte to be present. Work: O(H + B + C·log C) for a header of H
   * bytes (at most 4096 layers) and C chunks of B bytes, in any order; memory O(B + layers).
   * @throws {ScandumpError}
   */
  static fromScandump(chunks: Iterable<ScandumpChunk>, opts?: FromScandumpOptions): BloomFilter;

  /**
   * Decodes a header alone (bits read as zero; nothing is allocated until chunks come); fill it
   * with applyChunk. @throws {ScandumpError}
   */
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

  /** Items the server counted as added (BF.CARD); rounded above 2^53. */
  readonly size: number;
  /** Option bits (5 for filters made by commands, 13 when NONSCALING). */
  readonly options: number;
  /** Expansion factor. */
  readonly growth: number;
  /** Number of layers. */
  readonly layerCount: number;
  /** Total bytes of the bit arrays. */
  readonly byteLength: number;
  /** Sum of the layers' capacities (BF.INFO Capacity); rounded above 2^53. */
  readonly capacity: number;
  /**
   * Layer lookups made placing chunks so far: 1 or 2 per chunk of a walk in order, at most
   * 2 + ⌈log2(layerCount + 1)⌉ per chunk in any order (a deterministic measure of the work).
   */
  readonly placeSteps: number;
}

/** The item's hash pair as two 16-digit hex strings (64-bit, or the legacy 32-bit pair). */
export function hashPairHex(item: string | Bytes, legacy32?: boolean): [string, string];

export const OPT_NOROUND: 1;
export const OPT_ENTS_IS_BITS: 2;
export const OPT_FORCE64: 4;
export const OPT_NO_SCALING: 8;
/** Default of FromScandumpOptions.maxBytes: 2^30. */
export const DEFAULT_MAX_BYTES: number;
/** Most layers a header may announce, as the server (4096). */
export const MAX_LAYERS: 4096;

/** One `[iterator, data]` pair of a CF.SCANDUMP walk; `[0, null]` (the end) is accepted. */
export type CfScandumpChunk = readonly [ScandumpIterator, Bytes | null];

export interface CuckooScandumpOptions {
  /** Largest total of table bytes a header may announce (default 1 GiB): more is OUT_OF_MEMORY. */
  maxBytes?: number;
  /**
   * Largest expansion a header may have (default 32768, what RedisBloom 8 and redis-bf on Redis 8
   * accept; on Redis 7 and Valkey the server accepts up to 65535).
   */
  maxExpansion?: number;
}

/**
 * A cuckoo filter rebuilt from a CF.SCANDUMP walk; read-only. `has` answers as CF.EXISTS /
 * CF.MEXISTS, `count` as CF.COUNT.
 */
export class CuckooFilter {
  private constructor();

  /**
   * Rebuilds a filter from the `[iterator, data]` pairs of a whole CF.SCANDUMP walk, header
   * (iterator 1) first; a final `[0, null]` is ignored; no pair at all is the empty filter
   * (CF.SCANDUMP answers `[0, nil]` at once for a filter with no items). Applies every
   * CF.LOADCHUNK check and requires every table byte to be present. Work: O(S + B + C·log C)
   * for S sub-filters declared by the header (at most 65 535) and C chunks of B bytes, in any
   * order; memory O(S + B). @throws {ScandumpError}
   */
  static fromScandump(chunks: Iterable<CfScandumpChunk>, opts?: CuckooScandumpOptions): CuckooFilter;

  /**
   * Decodes a header alone (tables read as empty until chunks come): one step and one small
   * object per declared sub-filter, at most 65 535. @throws {ScandumpError}
   */
  static decodeHeader(header: Bytes, opts?: CuckooScandumpOptions): CuckooFilter;

  /** The filter with no sub-filters: false / 0 for everything. */
  static empty(): CuckooFilter;

  /** Copies one chunk in; returns the `[start, end)` offsets written. @throws {ScandumpError} */
  applyChunk(iter: ScandumpIterator, data: Bytes): [number, number];

  /** CF.EXISTS: true when the item may be in the filter; false means it certainly is not. */
  has(item: string | Bytes): boolean;

  /** CF.COUNT: slots holding the item's fingerprint in its two buckets of every sub-filter. */
  count(item: string | Bytes): number;

  /** CF.INFO Number of items inserted, as the header gives it. */
  readonly items: bigint;
  /** CF.INFO Number of items deleted (deletions since the last compaction). */
  readonly deletes: bigint;
  /** CF.INFO Number of buckets (of the first sub-filter). */
  readonly buckets: number;
  readonly bucketSize: number;
  readonly maxIterations: number;
  readonly expansion: number;
  /** CF.INFO Number of filters. */
  readonly subFilterCount: number;
  /** Buckets of each sub-filter, oldest first (buckets × expansion^i). */
  readonly subFilterBuckets: number[];
  /** Total bytes of the tables. */
  readonly byteLength: number;
  /**
   * Sub-filter lookups made placing chunks so far: 1 or 2 per chunk of a walk in order, at most
   * 2 + ⌈log2(subFilterCount + 1)⌉ per chunk in any order (a deterministic measure of the work).
   */
  readonly placeSteps: number;
}

/** An item's cuckoo lookup (MurmurHash64A seed 0, fingerprint, both bucket indexes) in hex. */
export function cuckooLookupHex(item: string | Bytes): { hash: string; fp: number; h1: string; h2: string };

export const CF_HEADER_BYTES: 38;
export const CF_DEFAULT_MAX_EXPANSION: 32768;
