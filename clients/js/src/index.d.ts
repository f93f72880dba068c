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
// RibbonFilter: INVALID_HEADER, OUT_OF_MEMORY, NOT_FOUND, NOT_NUMERIC, INVALID_POSITION,
// BAD_DATA and INCOMPLETE, as its methods say.

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

/**
 * A Ribbon filter rebuilt from an RF.SCANDUMP walk; read-only. `has` answers as RF.EXISTS /
 * RF.MEXISTS. It answers only once its whole body has arrived (a half-copied filter throws
 * INCOMPLETE rather than answer a false "no").
 */
export class RibbonFilter {
  private constructor();

  /**
   * Rebuilds a filter from the `[iterator, data]` pairs of a whole RF.SCANDUMP walk: the header
   * (iterator 1) first, then the body chunks in order (each starts at body position
   * `iterator - length`, right after the previous one); a final `[0, empty]` is ignored. The
   * header is checked as the server's loader checks it before anything is allocated; work and
   * memory O(B) for a body of B bytes (at most `maxBytes`, default 1 GiB).
   * @throws {ScandumpError} NOT_FOUND, INVALID_HEADER, OUT_OF_MEMORY, NOT_NUMERIC,
   *   INVALID_POSITION, BAD_DATA (bumped hashes not increasing), INCOMPLETE
   */
  static fromScandump(chunks: Iterable<CfScandumpChunk>, opts?: FromScandumpOptions): RibbonFilter;

  /**
   * Decodes a header alone (49 bytes) with the server loader's checks, allocating nothing
   * beyond the body it announces (at most `maxBytes`); the body is filled by `applyChunk`.
   * @throws {ScandumpError} INVALID_HEADER, OUT_OF_MEMORY
   */
  static decodeHeader(header: Bytes, opts?: FromScandumpOptions): RibbonFilter;

  /**
   * Copies the next body chunk in (`iter`: what RF.SCANDUMP returned with it): it must start at
   * `nextPosition`, be non-empty and end within the body; nothing changes when it throws
   * INVALID_POSITION or NOT_NUMERIC. The last chunk completes the body (BAD_DATA when its bumped
   * hashes are not strictly increasing). @throws {ScandumpError}
   */
  applyChunk(iter: ScandumpIterator, data: Bytes): void;

  /** RF.EXISTS: true when the item may be in the set; false means it certainly is not. @throws {ScandumpError} INCOMPLETE */
  has(item: string | Bytes): boolean;

  /** The error rate it was built for (RF.INFO Error rate). */
  readonly errorRate: number;
  /** Distinct items it was built from (RF.CARD). */
  readonly items: number;
  /** Blocks of 128 slots. */
  readonly blocks: number;
  /** Columns (result bits) of the lower blocks, r. */
  readonly lowerBits: number;
  /** The first block with r + 1 columns (`blocks` when none has). */
  readonly upperStart: number;
  /** The seed its rows were derived with. */
  readonly seed: number;
  /** Hashes kept exactly (items the band could not take). */
  readonly bumpedCount: number;
  /** Bytes of the body: 8 per solution word and per bumped hash. */
  readonly byteLength: number;
  /** The body position (1-based) the next chunk must start at. */
  readonly nextPosition: number;
  /** Has the whole body arrived? */
  readonly complete: boolean;
}

export const RF_HEADER_BYTES: 49;
