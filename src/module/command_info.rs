//! Command metadata for `COMMAND INFO` / `COMMAND DOCS` / `COMMAND GETKEYS` (`docs/commands.md`
//! ("Common rules")): arity, one key spec (the key at index 1) and the documentation tree of
//! every BF, CF and RF command (summary, since, complexity, arguments), as RedisBloom 8 registers them
//! (key spec flags aside: see `Meta::key_flags`).
//! Registered with `RedisModule_SetCommandInfo` directly because the crate's path needs
//! Redis ≥ 7.2 (on 7.0 its `#[command]` macro makes the module fail to load).

use redis_module::commands::{BeginSearch, FindKeys, KeySpec, KeySpecFlags};
use redis_module::{raw, Context};
use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

/// The type of a documented argument (`COMMAND DOCS` `type`).
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Key,
    Str,
    Int,
    Double,
    Token,
    OneOf,
    Block,
}

impl Kind {
    fn raw(self) -> raw::RedisModuleCommandArgType {
        match self {
            Kind::Str => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            Kind::Int => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            Kind::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
            Kind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
            Kind::Token => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            Kind::OneOf => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
            Kind::Block => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
        }
    }
}

/// No argument flag.
const REQUIRED: u32 = 0;
/// `optional`.
const OPTIONAL: u32 = raw::REDISMODULE_CMD_ARG_OPTIONAL;
/// `multiple`.
const MULTIPLE: u32 = raw::REDISMODULE_CMD_ARG_MULTIPLE;

/// One documented argument. Every argument but a `block` or `oneof` shows its name as its
/// `display_text`; the key is key spec 0.
struct DocArg {
    name: &'static CStr,
    kind: Kind,
    token: Option<&'static CStr>,
    flags: u32,
    sub: &'static [DocArg],
}

const fn arg(name: &'static CStr, kind: Kind, flags: u32) -> DocArg {
    DocArg {
        name,
        kind,
        token: None,
        flags,
        sub: &[],
    }
}

/// A pure token (`NONSCALING`) named `name`.
const fn token(name: &'static CStr, token: &'static CStr, flags: u32) -> DocArg {
    DocArg {
        name,
        kind: Kind::Token,
        token: Some(token),
        flags,
        sub: &[],
    }
}

/// An optional `TOKEN value` pair: a block holding one argument named as the block.
const fn option(name: &'static CStr, token: &'static CStr, value: &'static [DocArg]) -> DocArg {
    DocArg {
        name,
        kind: Kind::Block,
        token: Some(token),
        flags: OPTIONAL,
        sub: value,
    }
}

/// An optional choice of one of `tokens` (`BF.INFO`'s and `RF.INFO`'s field).
const fn single_value(tokens: &'static [DocArg]) -> DocArg {
    DocArg {
        name: c"single_value",
        kind: Kind::OneOf,
        token: None,
        flags: OPTIONAL,
        sub: tokens,
    }
}

/// RF.INFO's fields, each a required pure token of the same name.
const RF_INFO_FIELDS: [DocArg; 5] = {
    const fn field(name: &'static CStr, word: &'static CStr) -> DocArg {
        token(name, word, REQUIRED)
    }
    [
        field(c"state", c"STATE"),
        field(c"items", c"ITEMS"),
        field(c"error", c"ERROR"),
        field(c"size", c"SIZE"),
        field(c"bitsperitem", c"BITSPERITEM"),
    ]
};

const KEY: DocArg = arg(c"key", Kind::Key, REQUIRED);
const ITEM: DocArg = arg(c"item", Kind::Str, REQUIRED);
const ITEMS: DocArg = arg(c"item", Kind::Str, MULTIPLE);
const ITERATOR: DocArg = arg(c"iterator", Kind::Int, REQUIRED);
const EXPANSION: DocArg = option(
    c"expansion",
    c"EXPANSION",
    &[arg(c"expansion", Kind::Int, REQUIRED)],
);
const NONSCALING: DocArg = token(c"nonscaling", c"NONSCALING", OPTIONAL);

const ONE_HASH: &CStr =
    c"O(k), where k is the number of hash functions used by the last sub-filter";
const N_HASHES: &CStr =
    c"O(k * n), where k is the number of hash functions and n is the number of items";
const CAPACITY_SIZED: &CStr = c"O(n), where n is the capacity";
const ADD_MANY: &CStr =
    c"Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";

const CF_ADD: &CStr = c"O(k + i), where k is the number of sub-filters and i is maxIterations";
const CF_INSERT: &CStr = c"O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations";
const CF_LOOKUP: &CStr = c"O(k), where k is the number of sub-filters";
const CF_EXISTS: &CStr = c"Checks whether one or more items exist in a Cuckoo Filter";
const RF_EXISTS: &CStr =
    c"Checks whether one or more items may be in a Ribbon filter (or its staged set)";
/// CF.INSERT / CF.INSERTNX after the key: `[CAPACITY capacity] [NOCREATE] ITEMS item…`.
const CF_INSERT_ARGS: &[DocArg] = &[
    KEY,
    DocArg {
        name: c"capacity",
        kind: Kind::Block,
        token: None,
        flags: OPTIONAL,
        sub: &[
            token(c"capacity", c"CAPACITY", REQUIRED),
            arg(c"capacity", Kind::Int, REQUIRED),
        ],
    },
    token(c"nocreate", c"NOCREATE", OPTIONAL),
    token(c"items", c"ITEMS", REQUIRED),
    ITEMS,
];

/// The documentation of a command (`COMMAND DOCS`): summary, since, complexity, arguments.
struct Doc {
    summary: &'static CStr,
    since: &'static CStr,
    complexity: &'static CStr,
    args: &'static [DocArg],
}

/// BF.SCANDUMP's and CF.SCANDUMP's documentation (the same in RedisBloom 8).
const SCANDUMP_DOC: Doc = Doc {
    summary: c"Begins an incremental save of the bloom filter",
    since: c"1.0.0",
    complexity: CAPACITY_SIZED,
    args: &[KEY, ITERATOR],
};

/// BF.LOADCHUNK's and CF.LOADCHUNK's documentation.
const LOADCHUNK_DOC: Doc = Doc {
    summary: c"Restores a filter previously saved using SCANDUMP",
    since: c"1.0.0",
    complexity: CAPACITY_SIZED,
    args: &[KEY, ITERATOR, arg(c"data", Kind::Str, REQUIRED)],
};

/// The metadata of one command.
struct Meta {
    name: &'static CStr,
    arity: i32,
    /// Key spec flags: `RW`/`RO`, then `INSERT`/`UPDATE`/`ACCESS`. RedisBloom 8's, except that
    /// its writes and BF.SCANDUMP have no `INSERT`/`UPDATE`/`ACCESS`, and Redis lets any key
    /// pattern (a read-only `%R~` one too) use a key whose spec has none of these; ours keep
    /// them so that key patterns restrict as documented.
    key_flags: &'static str,
    /// None: no documentation (`COMMAND DOCS` gives the group and module only).
    doc: Option<Doc>,
}

const COMMANDS: [Meta; 34] = [
    Meta {
        name: c"bf.reserve",
        arity: -4,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Creates a new Bloom Filter",
            since: c"1.0.0",
            complexity: c"O(1)",
            args: &[
                KEY,
                arg(c"error_rate", Kind::Double, REQUIRED),
                arg(c"capacity", Kind::Int, REQUIRED),
                EXPANSION,
                NONSCALING,
            ],
        }),
    },
    Meta {
        name: c"bf.add",
        arity: 3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Adds an item to a Bloom Filter",
            since: c"1.0.0",
            complexity: ONE_HASH,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"bf.madd",
        arity: -3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: ADD_MANY,
            since: c"1.0.0",
            complexity: N_HASHES,
            args: &[KEY, ITEMS],
        }),
    },
    Meta {
        name: c"bf.insert",
        arity: -4,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: ADD_MANY,
            since: c"1.0.0",
            complexity: N_HASHES,
            args: &[
                KEY,
                option(
                    c"capacity",
                    c"CAPACITY",
                    &[arg(c"capacity", Kind::Int, REQUIRED)],
                ),
                option(c"error", c"ERROR", &[arg(c"error", Kind::Double, REQUIRED)]),
                EXPANSION,
                token(c"nocreate", c"NOCREATE", OPTIONAL),
                NONSCALING,
                token(c"items", c"ITEMS", REQUIRED),
                ITEMS,
            ],
        }),
    },
    Meta {
        name: c"bf.exists",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: c"Checks whether an item exists in a Bloom Filter",
            since: c"1.0.0",
            complexity: ONE_HASH,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"bf.mexists",
        arity: -3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: c"Checks whether one or more items exist in a Bloom Filter",
            since: c"1.0.0",
            complexity: N_HASHES,
            args: &[KEY, ITEMS],
        }),
    },
    Meta {
        name: c"bf.info",
        arity: -2,
        key_flags: "RO",
        doc: Some(Doc {
            summary: c"Returns information about a Bloom Filter",
            since: c"1.0.0",
            complexity: c"O(1)",
            args: &[
                KEY,
                // The first name is spelled as RedisBloom 8 spells it.
                single_value(&[
                    token(c"capcaity", c"CAPACITY", REQUIRED),
                    token(c"SIZE", c"SIZE", REQUIRED),
                    token(c"FILTERS", c"FILTERS", REQUIRED),
                    token(c"ITEMS", c"ITEMS", REQUIRED),
                    token(c"EXPANSION", c"EXPANSION", REQUIRED),
                ]),
            ],
        }),
    },
    Meta {
        name: c"bf.card",
        arity: 2,
        key_flags: "RO",
        doc: Some(Doc {
            summary: c"Returns the cardinality of a Bloom filter",
            since: c"2.4.4",
            complexity: c"O(1)",
            args: &[KEY],
        }),
    },
    Meta {
        name: c"bf.debug",
        arity: -1,
        key_flags: "RW ACCESS UPDATE",
        doc: None,
    },
    Meta {
        name: c"bf.scandump",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(SCANDUMP_DOC),
    },
    Meta {
        name: c"bf.loadchunk",
        arity: 4,
        key_flags: "RW UPDATE",
        doc: Some(LOADCHUNK_DOC),
    },
    // The cuckoo commands: RedisBloom 8's metadata (CF.RESERVE's arity -3 included), key spec
    // flags aside as above (CF.DEL: `RW DELETE`). CF.COMPACT and CF.DEBUG have none there:
    // Redis then shows arity -1 and an `RW ACCESS UPDATE` key spec, as set here.
    Meta {
        name: c"cf.reserve",
        arity: -3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Creates a new Cuckoo Filter",
            since: c"1.0.0",
            complexity: c"O(1)",
            args: &[
                KEY,
                arg(c"capacity", Kind::Int, REQUIRED),
                option(
                    c"bucketsize",
                    c"BUCKETSIZE",
                    &[arg(c"bucketsize", Kind::Int, REQUIRED)],
                ),
                option(
                    c"maxiterations",
                    c"MAXITERATIONS",
                    &[arg(c"maxiterations", Kind::Int, REQUIRED)],
                ),
                EXPANSION,
            ],
        }),
    },
    Meta {
        name: c"cf.add",
        arity: 3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Adds an item to a Cuckoo Filter",
            since: c"1.0.0",
            complexity: CF_ADD,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"cf.addnx",
        arity: 3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Adds an item to a Cuckoo Filter if the item did not exist previously.",
            since: c"1.0.0",
            complexity: CF_ADD,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"cf.insert",
        arity: -4,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
            since: c"1.0.0",
            complexity: CF_INSERT,
            args: CF_INSERT_ARGS,
        }),
    },
    Meta {
        name: c"cf.insertnx",
        arity: -4,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist",
            since: c"1.0.0",
            complexity: CF_INSERT,
            args: CF_INSERT_ARGS,
        }),
    },
    Meta {
        name: c"cf.exists",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: CF_EXISTS,
            since: c"1.0.0",
            complexity: CF_LOOKUP,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"cf.mexists",
        arity: -3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: CF_EXISTS,
            since: c"1.0.0",
            complexity: c"O(k * n), where k is the number of sub-filters and n is the number of items",
            args: &[KEY, ITEMS],
        }),
    },
    Meta {
        name: c"cf.count",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: c"Return the number of times an item might be in a Cuckoo Filter",
            since: c"1.0.0",
            complexity: CF_LOOKUP,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"cf.del",
        arity: 3,
        key_flags: "RW DELETE",
        doc: Some(Doc {
            summary: c"Deletes an item from a Cuckoo Filter",
            since: c"1.0.0",
            complexity: CF_LOOKUP,
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"cf.compact",
        arity: -1,
        key_flags: "RW ACCESS UPDATE",
        doc: None,
    },
    Meta {
        name: c"cf.scandump",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(SCANDUMP_DOC),
    },
    Meta {
        name: c"cf.loadchunk",
        arity: 4,
        key_flags: "RW UPDATE",
        doc: Some(LOADCHUNK_DOC),
    },
    Meta {
        name: c"cf.info",
        arity: 2,
        key_flags: "RO",
        doc: Some(Doc {
            summary: c"Returns information about a Cuckoo Filter",
            since: c"1.0.0",
            complexity: c"O(1)",
            args: &[KEY],
        }),
    },
    Meta {
        name: c"cf.debug",
        arity: -1,
        key_flags: "RW ACCESS UPDATE",
        doc: None,
    },
    Meta {
        name: c"rf.add",
        arity: 3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Stages an item for a Ribbon filter not built yet (creating the key)",
            since: c"0.5.0",
            complexity: c"O(log n), where n is the number of staged items",
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"rf.madd",
        arity: -3,
        key_flags: "RW INSERT",
        doc: Some(Doc {
            summary: c"Stages one or more items for a Ribbon filter not built yet (creating the key)",
            since: c"0.5.0",
            complexity: c"O(k log n), where k is the number of items given and n the number staged",
            args: &[KEY, ITEMS],
        }),
    },
    Meta {
        name: c"rf.build",
        arity: -2,
        key_flags: "RW UPDATE",
        doc: Some(Doc {
            summary: c"Builds the staged items into a read-only Ribbon filter, off the main thread",
            since: c"0.5.0",
            complexity: c"O(n log n), where n is the number of staged items (on a worker thread)",
            args: &[
                KEY,
                option(c"error", c"ERROR", &[arg(c"error", Kind::Double, REQUIRED)]),
                DocArg {
                    name: c"items",
                    kind: Kind::Block,
                    token: None,
                    flags: OPTIONAL,
                    sub: &[token(c"items", c"ITEMS", REQUIRED), ITEMS],
                },
            ],
        }),
    },
    Meta {
        name: c"rf.exists",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: RF_EXISTS,
            since: c"0.5.0",
            complexity: c"O(1) on a built filter; O(log n) on a staging key",
            args: &[KEY, ITEM],
        }),
    },
    Meta {
        name: c"rf.mexists",
        arity: -3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: RF_EXISTS,
            since: c"0.5.0",
            complexity: c"O(k), where k is the number of items",
            args: &[KEY, ITEMS],
        }),
    },
    Meta {
        name: c"rf.card",
        arity: 2,
        key_flags: "RO",
        doc: Some(Doc {
            summary: c"Returns the number of items staged or built into a Ribbon filter",
            since: c"0.5.0",
            complexity: c"O(1)",
            args: &[KEY],
        }),
    },
    Meta {
        name: c"rf.info",
        arity: -2,
        key_flags: "RO",
        doc: Some(Doc {
            summary: c"Returns information about a Ribbon filter",
            since: c"0.5.0",
            complexity: c"O(1)",
            args: &[
                KEY,
                single_value(&RF_INFO_FIELDS),
            ],
        }),
    },
    Meta {
        name: c"rf.scandump",
        arity: 3,
        key_flags: "RO ACCESS",
        doc: Some(Doc {
            summary: c"Begins an incremental save of a built Ribbon filter",
            since: c"0.5.0",
            complexity: c"O(c), where c is the chunk's size",
            args: &[KEY, ITERATOR],
        }),
    },
    Meta {
        name: c"rf.loadchunk",
        arity: 4,
        key_flags: "RW UPDATE",
        doc: Some(Doc {
            summary: c"Restores a Ribbon filter previously saved using RF.SCANDUMP",
            since: c"0.5.0",
            complexity: c"O(c), where c is the chunk's size",
            args: &[KEY, ITERATOR, arg(c"data", Kind::Str, REQUIRED)],
        }),
    },
];

fn key_spec_flags(text: &str) -> KeySpecFlags {
    text.split(' ').fold(KeySpecFlags::empty(), |acc, f| {
        acc | match f {
            "RW" => KeySpecFlags::READ_WRITE,
            "RO" => KeySpecFlags::READ_ONLY,
            "INSERT" => KeySpecFlags::INSERT,
            "UPDATE" => KeySpecFlags::UPDATE,
            "ACCESS" => KeySpecFlags::ACCESS,
            "DELETE" => KeySpecFlags::DELETE,
            _ => KeySpecFlags::empty(),
        }
    })
}

/// The end of an argument array: an entry with no name.
fn end_of_args() -> raw::RedisModuleCommandArg {
    raw::RedisModuleCommandArg {
        name: null(),
        type_: 0,
        key_spec_index: -1,
        token: null(),
        summary: null(),
        since: null(),
        flags: 0,
        deprecated_since: null(),
        subargs: null_mut(),
        display_text: null(),
    }
}

/// `args` as the NUL-terminated array Redis reads, its nested arrays kept in `arrays` (moving
/// a `Vec` does not move its elements, so the pointers stay valid while `arrays` lives).
fn raw_args(
    args: &[DocArg],
    arrays: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut out = Vec::with_capacity(args.len() + 1);
    for a in args {
        let container = matches!(a.kind, Kind::Block | Kind::OneOf);
        out.push(raw::RedisModuleCommandArg {
            name: a.name.as_ptr(),
            type_: a.kind.raw(),
            key_spec_index: if a.kind == Kind::Key { 0 } else { -1 },
            token: a.token.map_or(null(), CStr::as_ptr),
            summary: null(),
            since: null(),
            flags: a.flags as i32,
            deprecated_since: null(),
            subargs: if a.sub.is_empty() {
                null_mut()
            } else {
                raw_args(a.sub, arrays)
            },
            display_text: if container { null() } else { a.name.as_ptr() },
        });
    }
    out.push(end_of_args());
    let p = out.as_mut_ptr();
    arrays.push(out);
    p
}

fn ptr_or_null(s: Option<&'static CStr>) -> *const c_char {
    s.map_or(null(), CStr::as_ptr)
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// Sets the metadata of every BF and CF command. Failures are logged, never fatal: the commands
/// work without metadata (Redis then derives a key spec from the (1, 1, 1) key triple).
pub fn register(ctx: &Context) {
    // SAFETY: both functions exist since Redis 7.0 (checked for None anyway); every string and
    // array passed stays alive until SetCommandInfo returns (the strings are static, the
    // argument arrays live in `arrays`, the key specs in `specs`; Redis copies what it keeps).
    unsafe {
        let (Some(get_command), Some(set_info)) =
            (raw::RedisModule_GetCommand, raw::RedisModule_SetCommandInfo)
        else {
            ctx.log_notice("redis-bf: server has no command metadata API; skipped");
            return;
        };
        for m in &COMMANDS {
            let command = get_command(ctx.get_raw(), m.name.as_ptr());
            if command.is_null() {
                continue;
            }
            let spec = KeySpec::new(
                None,
                key_spec_flags(m.key_flags),
                BeginSearch::new_index(1),
                FindKeys::new_range(0, 1, 0),
            );
            let mut specs: [raw::RedisModuleCommandKeySpec; 2] =
                [(&spec).into(), std::mem::zeroed()];
            let mut arrays = Vec::new();
            let doc = m.doc.as_ref();
            let info = raw::RedisModuleCommandInfo {
                version: &INFO_VERSION,
                summary: ptr_or_null(doc.map(|d| d.summary)),
                complexity: ptr_or_null(doc.map(|d| d.complexity)),
                since: ptr_or_null(doc.map(|d| d.since)),
                history: null_mut(),
                tips: null(),
                arity: m.arity,
                key_specs: specs.as_mut_ptr(),
                args: doc.map_or(null_mut(), |d| raw_args(d.args, &mut arrays)),
            };
            if set_info(command, &info) != raw::REDISMODULE_OK as i32 {
                let name = m.name.to_string_lossy();
                ctx.log_warning(&format!("redis-bf: could not set command info of {name}"));
            }
        }
    }
}
