import { defineCodes } from './catalogue/define.js';

/** The codes PKG-KERNEL-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_CONFIG_KEY_INVALID: {
    kind: 'error',
    meaning: 'a config key is malformed, or names a section no installed package ships',
    hint: 'keys are <section>.<field>…, e.g. router.timeout_ms; `cplane config show --effective` lists them',
  },
  ERR_CONFIG_KEY_NOT_SET: {
    kind: 'error',
    meaning: '`config get` of a key that neither a default nor an override sets',
  },
  ERR_CONFIG_VALUE_INVALID: {
    kind: 'error',
    meaning:
      "`config set`/`unset` would make the effective section fail its schema (the value and the schema's complaint are named; nothing is written)",
    hint: 'check the value against HOT/schemas/<section>-config.schema.json',
  },
  ERR_CONFIG_SECRET: {
    kind: 'error',
    meaning:
      '`config set` of a key named like a secret (`api_key`, `secret`, `token`, …) or of a value shaped like a key; secrets come from the environment or a file',
    hint: 'export the secret in the environment, or name a file that holds it (e.g. api_key_file)',
  },
  ERR_CONFIG_OVERRIDES_INVALID: {
    kind: 'error',
    meaning:
      '`HOT/registries/operator-config.json` is not JSON or not `{schema_version: "1", overrides: {<section>: {…}}}`',
    hint: 'only `cplane config` writes this file; restore it from a backup or remove it to go back to the defaults',
  },
  ERR_CONFIG_DEFAULT_INVALID: {
    kind: 'error',
    meaning: "a package's default config `HOT/config/<section>.json` is missing or not JSON",
    hint: 'run gate-check and reinstall the package that owns the file',
  },
  ERR_USAGE: {
    kind: 'error',
    meaning: 'unknown command or option, missing or malformed argument',
    hint: 'run the command with --help to see its options',
    exit: 2,
  },
  ERR_INTERNAL: {
    kind: 'error',
    meaning: 'an unexpected exception (a bug)',
    hint: 'this is a bug in cplane; please report it with the command that caused it',
    exit: 70,
  },
  ERR_COMMAND_UNAVAILABLE: {
    kind: 'error',
    meaning: "a command's module cannot be loaded (a package file missing or damaged); every other command still works",
    hint: 'a package file is missing or damaged: run `cplane gate-check` on this root and reinstall the package that owns it',
  },
  ERR_MODULE_UNOWNED: {
    kind: 'error',
    meaning:
      'a root entry point refused to load a file no verified installed package owns (or one outside the root, an unowned `package.json` or `node_modules` on its resolution path, or a file of a package whose signature does not verify); it never ran',
    hint: 'reinstall the package that owns the path, or remove what no package owns (cplane gate-check names it)',
  },
  ERR_MODULE_TAMPERED: {
    kind: 'error',
    meaning:
      'a root entry point refused to load an owned file whose bytes do not match the recorded digest; it never ran',
    hint: 'reinstall the package that owns the path (cplane gate-check names it)',
  },
  ERR_CANONICAL_JSON: {
    kind: 'error',
    meaning: 'a value to be hashed is not plain JSON (NaN, undefined, a class instance)',
  },
  ERR_DISK_FULL: {
    kind: 'error',
    meaning:
      "the filesystem is full or over quota (ENOSPC, EDQUOT, SQLite's SQLITE_FULL) while writing; nothing is left half-done",
    hint: 'free space (or raise the quota) on the filesystem holding the path, then run the command again; nothing was left half-done',
  },
  ERR_NAME_TOO_LONG: {
    kind: 'error',
    meaning: 'a path has a name the filesystem cannot hold (ENAMETOOLONG)',
    hint: 'use a shorter path (the root, --out or the file name), or a filesystem that allows longer names',
  },
  ERR_FS_READONLY: {
    kind: 'error',
    meaning: 'the filesystem is mounted read-only (EROFS, SQLITE_READONLY)',
    hint: 'remount the filesystem read-write, or point the command at a writable location',
  },
  ERR_PERMISSION: {
    kind: 'error',
    meaning: 'the operating system denied access to a path (EACCES, EPERM)',
    hint: 'check the owner and mode of the path (and of its directories), or run as the user that owns the root',
  },
  ERR_IO: {
    kind: 'error',
    meaning: 'the device reported an I/O error (EIO, SQLITE_IOERR), or the open-file limit was reached',
    hint: 'the device or filesystem reported an error: check the disk (dmesg, SMART), then run the command again',
  },
  ERR_DB_DAMAGED: {
    kind: 'error',
    meaning:
      'a database file (ownership registry, root lock, or a store read after it was opened) is corrupt or not SQLite',
    hint: 'move the file aside and restore it from a backup (the gates report which state it belongs to); cplane does not repair it in place',
  },
  ERR_INPUT_TOO_LARGE: {
    kind: 'error',
    meaning:
      'a file read whole is over its size limit (keys 64 KiB, configs 1 MiB, prompt specs and files 16 MiB, an import line 16 MiB); refused before it is read',
  },
  ERR_INPUT_UNREADABLE: { kind: 'error', meaning: 'a file read whole is missing or not a regular readable file' },
  ERR_INPUT_NOT_UTF8: {
    kind: 'error',
    meaning: 'a file read whole as text (a config, key, trust store, receipt, prompt spec or file) is not UTF-8',
  },
  ERR_OUTPUT_DIR_MISSING: {
    kind: 'error',
    meaning: 'a file to write (`ledger export --out`, state files) would go into a directory that does not exist',
    hint: 'create the directory first, or name a file in an existing one',
  },
  ERR_OUTPUT_NOT_A_FILE: {
    kind: 'error',
    meaning:
      'a file to write (`--out`, `--html`, `--export`) names a directory, a symlink, a FIFO, a socket or a device: it is never replaced',
    hint: 'name a new file, or a regular file to overwrite',
  },
  ERR_LEDGER_NOT_FOUND: {
    kind: 'error',
    meaning: 'the ledger file does not exist and the command does not create it',
    hint: 'check --ledger/--root, or append an entry first to create the ledger',
  },
  ERR_LEDGER_NOT_A_LEDGER: {
    kind: 'error',
    meaning: 'the file is not a cplane ledger (an empty file, another SQLite database, or not SQLite)',
    hint: 'point --ledger at a file created by cplane, or at a path that does not exist yet',
  },
  ERR_STORE_URL: {
    kind: 'error',
    meaning:
      'a PostgreSQL store URL (`--to`, `--store`, `CPLANE_DATABASE_URL`) is not a postgres:// URL, or holds a password (which would reach argv and logs)',
    hint: 'e.g. postgres://cplane@db.internal:5432/cplane, the password in PGPASSWORD or a .pgpass file',
  },
  ERR_STORE_UNAVAILABLE: {
    kind: 'error',
    meaning:
      'the PostgreSQL store cannot be reached or cannot take the write (refused, reset, not answering, shutting down, read-only, a role without rights); nothing was written',
    hint: 'check the server is up and the URL; retry when it is back',
  },
  ERR_LEDGER_CONTENDED: {
    kind: 'error',
    meaning:
      'a PostgreSQL ledger append (or redaction) found the chain head moved by other writers on every one of its attempts, or was aborted by the server to break a deadlock (or serialization failure) with them on each of its attempts; nothing was written',
    hint: 'retry; many writers at once share one chain',
  },
  ERR_LEDGER_MIGRATE_TARGET: {
    kind: 'error',
    meaning:
      '`ledger migrate --to` found a target that already holds a different chain, or the copy does not verify to the same head',
    hint: 'migrate into an empty database, or one holding a prefix of this same chain',
  },
  ERR_LEDGER_DAMAGED: {
    kind: 'error',
    meaning:
      'the ledger file is truncated or SQLite finds its pages malformed, or a compressed content block does not inflate to its recorded size (nothing is written to it)',
    hint: 'restore the ledger from a copy or an export (`cplane ledger import`); nothing was written to it',
  },
  ERR_LEDGER_FORMAT_VERSION: {
    kind: 'error',
    meaning: 'the ledger was written by an incompatible format version',
    hint: 'open it with the cplane version that wrote it, or export and re-import it',
  },
  ERR_LEDGER_SCHEMA_ALTERED: {
    kind: 'error',
    meaning:
      "an append into a ledger whose schema differs from cplane's (a trigger dropped, a table or index altered, an extra trigger or view)",
    hint: 'the file was changed outside cplane; run `cplane ledger verify` and restore the ledger from a copy or an export',
  },
  ERR_LEDGER_OPEN_FAILED: {
    kind: 'error',
    meaning: 'SQLite could not open the ledger (permissions, disk)',
    hint: 'check the path and its permissions, and that better-sqlite3 is installed and built for this Node.js',
  },
  ERR_LEDGER_OPTION_INVALID: {
    kind: 'error',
    meaning: 'a ledger option is out of range (synchronous mode, busy timeout, allowed clock skew)',
    hint: 'use a value in the range the message names',
  },
  ERR_LEDGER_ENTRY_INVALID: {
    kind: 'error',
    meaning: 'an entry to append misses a field, has an unknown one, or metadata is not a JSON object',
    hint: 'pass {event_type, submission_id, decision, reason, metadata}',
  },
  ERR_LEDGER_CLOCK_SKEW: {
    kind: 'error',
    meaning: "the writer's clock is more than the allowed skew (default 5 minutes) ahead of real time",
    hint: 'fix the clock of the process that writes to the ledger (or its injected clock)',
  },
  ERR_LEDGER_ID_EXHAUSTED: {
    kind: 'error',
    meaning: 'the id source kept returning ids already in the ledger',
    hint: 'the id source keeps returning ids already in the ledger; check the injected id source',
  },
  ERR_LEDGER_QUERY_INVALID: {
    kind: 'error',
    meaning: 'a query has a bad limit, order or time bound',
    hint: 'use a limit, order and time bounds as the message names',
  },
  ERR_LEDGER_ANCHOR_INVALID: {
    kind: 'error',
    meaning: '`--anchor` is not `SEQ:HASH`',
    hint: 'pass the anchor printed by `cplane ledger head`, e.g. 42:<64 lowercase hex>',
  },
  ERR_CHECKPOINT_INVALID: {
    kind: 'error',
    meaning:
      'a `--checkpoint` file cannot be read, is over its size limit, or holds something that is not a checkpoint (schema `checkpoint.schema.json`)',
    hint: 'pass a checkpoint file written by `cplane ledger checkpoint --out` or `cplane ledger checkpoints --export`',
  },
  ERR_LEDGER_TREE_DAMAGED: {
    kind: 'error',
    meaning: "the ledger's Merkle tiles disagree with its chain (a tile edited, missing or of the wrong width)",
    hint: 'run `cplane ledger verify`; restore the ledger from a copy or an export',
  },
  ERR_PROOF_INVALID: {
    kind: 'error',
    meaning:
      'a proof file is not a cplane proof, or it does not hold: a wrong audit path length, a tampered hash, a wrong tree size, a checkpoint whose signature does not verify with the key given',
    hint: 'the reason names what failed; a proof that does not verify proves nothing: ask the ledger operator for a fresh one',
  },
  ERR_PROOF_KEY_INVALID: {
    kind: 'error',
    meaning: '`--key` is neither a C2SP note verifier key (`name+hash+base64`) nor an Ed25519 PEM public key',
    hint: "pass the vkey file written by `cplane ledger export-tiles` or the root key's PEM public key",
  },
  ERR_PROOF_ENTRY_UNKNOWN: {
    kind: 'error',
    meaning: '`ledger prove` was asked about an entry or a tree size the ledger does not hold',
    hint: 'pass an entry id from `cplane ledger query`, and sizes no larger than the head (`cplane ledger head`)',
  },
  ERR_COSIGNED_INVALID: {
    kind: 'error',
    meaning:
      "a cosigned checkpoint in HOT/ledger/cosigned does not hold: unreadable, not signed by the root's key, of a tree the ledger no longer has (rewritten after the witnesses cosigned it), or with a cosignature that does not verify with the witness's configured vkey; a cosignature by a key not in gateway.checkpoint.witnesses is reported and not trusted",
    hint: 'the finding names the file, the tree size and the witness; `cplane ledger verify --json` lists every one',
  },
  ERR_WITNESS_REFUSED: {
    kind: 'error',
    meaning:
      'the witness refused a checkpoint: older than the one it holds, a fork of it, or without a valid consistency proof or signature',
    hint: 'the reason names what failed; a fork or a rollback means the log was rewritten',
  },
  ERR_CHECKPOINT_NO_ROOT_KEY: {
    kind: 'error',
    meaning: '`ledger checkpoint` on a root bootstrapped before root keys existed',
    hint: 'bootstrap a new root to get checkpoints; until then keep `cplane ledger head` anchors and pass them to `ledger verify --anchor`',
  },
  ERR_CHECKPOINT_EMPTY_LEDGER: {
    kind: 'error',
    meaning: '`ledger checkpoint` on a ledger with no entries',
    hint: "a root's ledger starts with ROOT_CREATED; restore it from a backup",
  },
  ERR_LEDGER_IMPORT_INVALID: {
    kind: 'error',
    meaning: 'an import file is not UTF-8, or a line is not a ledger entry or holds a lone UTF-16 surrogate',
    hint: 'import only files written by `cplane ledger export`',
  },
  ERR_LEDGER_IMPORT_TAMPERED: {
    kind: 'error',
    meaning: 'an import file does not re-verify (nothing is imported)',
    hint: 'the export was altered after it was written; nothing was imported',
  },
  ERR_LEDGER_REDACT_NOT_FOUND: {
    kind: 'error',
    meaning: '`ledger redact` names an exchange, session or block the ledger does not hold',
    hint: 'find the id with `cplane ledger query --json`; preview what would go with --dry-run',
  },
  ERR_LEDGER_REDACT_INLINE: {
    kind: 'error',
    meaning:
      '`ledger redact` names an entry whose content is inline (written before the content store): its text is part of its hash',
    hint: 'only content written through the content store can be redacted with the chain intact',
  },
  ERR_LEDGER_REDACT_REASON_QUOTES: {
    kind: 'error',
    meaning:
      '`ledger redact --reason` quotes a secret-like word (8+ characters with a digit, or 16+) of a block it removes: the REDACTED entry would keep it; nothing is redacted',
    hint: 'describe what goes without quoting it, e.g. --reason "API key pasted into a prompt"',
  },
  ERR_LEDGER_IMPORT_NOT_EMPTY: {
    kind: 'error',
    meaning: 'importing into a ledger that already has entries',
    hint: 'import into a new ledger path (or a new root); merging two chains would fork history',
  },
  ERR_MANIFEST_INVALID: {
    kind: 'error',
    meaning:
      'manifest.json is not JSON, or breaks the schema or the semantic rules (`details.errors` = `[{pointer, message}]`)',
    hint: 'fix the listed fields (details.errors holds a JSON pointer for each); see HOT/schemas/manifest.schema.json',
  },
  ERR_ARCHIVE_NOT_FOUND: {
    kind: 'error',
    meaning: 'the archive path cannot be read, or is not a regular file (a directory, a FIFO, a device)',
  },
  ERR_ARCHIVE_CORRUPT: {
    kind: 'error',
    meaning: 'not gzip/tar, a bad header checksum, a truncated member, a tar stream compressed twice',
  },
  ERR_ARCHIVE_UNSAFE_PATH: {
    kind: 'error',
    meaning:
      'a member path is absolute, has `..`/`.`/empty segments, a backslash, NUL, a drive letter, a control or bidi formatting character or an unpaired surrogate, a segment over 255 bytes or is over 1024 bytes (also via pax/GNU long names)',
    hint: 'pack root-relative paths such as HOT/kernel/x.js',
  },
  ERR_ARCHIVE_UNSAFE_MEMBER: {
    kind: 'error',
    meaning: 'a member the installer will not place (a path outside the governed tree)',
  },
  ERR_ARCHIVE_LINK: { kind: 'error', meaning: 'a symlink or hard-link member' },
  ERR_ARCHIVE_SPECIAL_FILE: { kind: 'error', meaning: 'a device, FIFO or unsupported entry type' },
  ERR_ARCHIVE_DUPLICATE_MEMBER: {
    kind: 'error',
    meaning: 'a path appears twice (also as `./x`, or differing only in case)',
    hint: 'each path may appear once in an archive',
  },
  ERR_ARCHIVE_UNDECLARED_MEMBER: {
    kind: 'error',
    meaning: "a member not declared in the manifest's assets (or bootstrap.json)",
  },
  ERR_ARCHIVE_MISSING_ASSET: { kind: 'error', meaning: 'a declared asset (or bootstrap archive) is absent' },
  ERR_ARCHIVE_DIGEST_MISMATCH: { kind: 'error', meaning: "a member's SHA-256 differs from its declaration" },
  ERR_ARCHIVE_SIZE_MISMATCH: { kind: 'error', meaning: "a member's size differs from its declaration" },
  ERR_INTEGRITY_MISMATCH: {
    kind: 'error',
    meaning:
      'an archive (or an archive inside CP_BOOTSTRAP) does not have the SRI it was recorded with; the message names the expected and the actual SRI',
    hint: 'the archive is corrupt or was swapped; fetch it again from where the index or bootstrap.json came from',
  },
  ERR_INTEGRITY_MALFORMED: {
    kind: 'error',
    meaning: 'an archive integrity is not an SRI string (`sha512-<88 base64 characters>`, optionally ` sha256-<44>`)',
    hint: 'integrity strings are written by `cplane build`; rebuild instead of editing them',
  },
  ERR_INTEGRITY_UNSUPPORTED: {
    kind: 'error',
    meaning: 'an archive integrity names an algorithm other than sha512/sha256, or has no sha512 hash',
    hint: 'rebuild with `cplane build`, which writes sha512 SRI strings',
  },
  ERR_ARCHIVE_TOO_MANY_MEMBERS: { kind: 'error', meaning: 'more members than the configured limit' },
  ERR_ARCHIVE_TOO_LARGE: {
    kind: 'error',
    meaning:
      'a member over the per-member limit, or declared or inflated bytes over the total limit (decompression bomb)',
  },
  ERR_ARCHIVE_NO_MANIFEST: { kind: 'error', meaning: 'no manifest.json (or bootstrap.json) at the top level' },
  ERR_ARCHIVE_PATH_TOO_LONG: {
    kind: 'error',
    meaning: 'the packer cannot fit a path into a ustar header',
    hint: 'shorten the file name or its directory path',
  },
  ERR_SIGNATURE_MALFORMED: { kind: 'error', meaning: 'signature.json is not JSON or fails its schema' },
  ERR_SIGNATURE_MISSING: { kind: 'error', meaning: 'an unsigned package without `--dev`' },
  ERR_SIGNATURE_INVALID: { kind: 'error', meaning: 'the signature does not verify over the canonical manifest' },
  ERR_SIGNATURE_UNTRUSTED: { kind: 'error', meaning: "signed by a key that is not in the root's trust store" },
  ERR_KEY_INVALID: {
    kind: 'error',
    meaning: 'a key file is unreadable, not PEM, not ed25519, or private where a public key is expected',
    hint: 'pass an ed25519 key written by `cplane keys generate` (the .pub file where a public key is expected)',
  },
  ERR_KEY_EXISTS: {
    kind: 'error',
    meaning: '`keys generate` would overwrite a key pair (use `--force`)',
    hint: 'choose another --out directory, or pass --force to replace the key pair',
  },
  ERR_TRUST_STORE_INVALID: {
    kind: 'error',
    meaning: 'HOT/registries/trust.json is not JSON or fails its schema',
    hint: 'restore the file or remove it and trust the keys again with `cplane keys trust`',
  },
  ERR_ROOT_KEY_INVALID: {
    kind: 'error',
    meaning:
      'HOT/registries/root-key.pem is not a regular file, not an ed25519 private key, or not a checkpoint key of the trust store',
    hint: 'the root key is created at bootstrap; restore HOT/registries/root-key.pem from a backup (checkpoints cannot be written without it)',
  },
  ERR_PACKAGE_CYCLE: {
    kind: 'error',
    meaning:
      "the packages' dependencies form a cycle (named in the message), or an install or upgrade would close one among the installed packages",
    hint: 'break the cycle: one of these packages must stop depending on the next',
  },
  ERR_PACKAGE_LAYER: {
    kind: 'error',
    meaning: 'a dependency sits in a higher layer than its dependent',
    hint: 'a package may depend only on packages in its own or a lower layer',
  },
  ERR_PACKAGE_DUPLICATE: {
    kind: 'error',
    meaning: 'a package id is listed twice',
    hint: 'each package may appear once in an install set',
  },
  ERR_PACKAGE_ID_MISMATCH: {
    kind: 'error',
    meaning: "`--id` differs from the manifest's `package_id`",
    hint: 'check that you picked the right archive',
  },
  ERR_BOOTSTRAP_INVALID: {
    kind: 'error',
    meaning:
      'bootstrap.json fails its schema, order, file names or dependency ranges (a CP_BOOTSTRAP built before SRI integrity pins `sha256:<hex>` and is refused: rebuild it)',
    hint: 'rebuild CP_BOOTSTRAP with `cplane build`; do not edit bootstrap.json by hand',
  },
  ERR_BOOTSTRAP_PENDING_INVALID: {
    kind: 'error',
    meaning: '`HOT/registries/bootstrap-pending.json` is not a regular file holding a bootstrap record',
    hint: 'only CP_BOOTSTRAP writes this record; finish the bootstrap with `cplane bootstrap --resume`, or restore the root from a backup',
  },
  ERR_ROOT_NOT_A_ROOT: {
    kind: 'error',
    meaning: 'the path is not a bootstrapped cplane root',
    hint: 'bootstrap the root first (cplane bootstrap --root R), or check --root',
  },
  ERR_ROOT_NOT_EMPTY: {
    kind: 'error',
    meaning:
      'bootstrap into a directory that is not empty (and holds no interrupted genesis), or into a path that is not a directory',
    hint: 'pick a new directory for the root, or install single packages into the existing root with cplane install',
  },
  ERR_ROOT_LOCKED: {
    kind: 'error',
    meaning: 'another installer holds the root-wide lock',
    hint: 'wait for the other install/upgrade/uninstall to finish, then retry',
  },
  ERR_ROOT_SYMLINK: {
    kind: 'error',
    meaning:
      'a symlink on a state or governed path of the root (HOT, a state directory, a registry file, a receipt directory); every command refuses the root',
    hint: 'remove the symlink (it is not owned by any package) and retry',
  },
  ERR_ROOT_SHAPE: {
    kind: 'error',
    meaning:
      'a state path of the root is the wrong kind of entry: a FIFO, socket or device, or a directory where a state file belongs',
    hint: 'the root was edited by hand; remove the entry or restore the root from a backup',
  },
  ERR_ALREADY_INSTALLED: { kind: 'error', meaning: 'the same version is already installed (a no-op that says so)' },
  ERR_NOT_INSTALLED: {
    kind: 'error',
    meaning: 'upgrade or uninstall of a package that is not installed',
    hint: 'cplane list --root R shows what is installed',
  },
  ERR_DOWNGRADE: {
    kind: 'error',
    meaning: 'an older version without `--allow-downgrade`',
    hint: 'pass --allow-downgrade to install an older version on purpose',
  },
  ERR_VERSION_CONTENT_MISMATCH: {
    kind: 'error',
    meaning: 'the same version number with different content than the installed one',
    hint: 'a version must never be rebuilt with different contents; bump the version',
  },
  ERR_DEPENDENCY_MISSING: { kind: 'error', meaning: 'a dependency is not installed' },
  ERR_DEPENDENCY_VERSION: { kind: 'error', meaning: "an installed dependency's version is outside the required range" },
  ERR_REVERSE_DEPENDENCY: { kind: 'error', meaning: 'an upgrade would leave an installed dependent out of its range' },
  ERR_HAS_DEPENDENTS: { kind: 'error', meaning: 'uninstall while another installed package depends on it' },
  ERR_LAYER_VIOLATION: {
    kind: 'error',
    meaning: 'a dependency sits in a higher layer',
    hint: 'a package may only depend on packages in its own or a lower layer',
  },
  ERR_PLATFORM_MISMATCH: {
    kind: 'error',
    meaning: 'a platform-tagged package for another os/cpu/Node ABI',
    hint: 'install the archive built for this platform (rebuild it on this machine)',
  },
  ERR_OWNERSHIP_CONFLICT: {
    kind: 'error',
    meaning: 'an asset path is owned by another package that is not in `replaces`',
  },
  ERR_REPLACE_UNAUTHORIZED: {
    kind: 'error',
    meaning:
      "`replaces` (or an upgrade) would take over files of a package signed by another publisher key (and the trust store's `may_replace` for this key does not name it); `--dev` waives signatures, not this",
    hint: "only the package's own publisher key, or one the trust store's may_replace names for it, may take over its files",
  },
  ERR_REPLACE_LOWER_LAYER: { kind: 'error', meaning: '`replaces` would take over files of a package in a lower layer' },
  ERR_PATH_CONFLICT: {
    kind: 'error',
    meaning:
      'an asset path is occupied by an unowned file or a directory, or a file an uninstall or upgrade would remove is a directory',
    hint: 'an unowned file is in the way; remove it (it was not installed by cplane) and retry',
  },
  ERR_ASSET_PATH_NOT_GOVERNED: {
    kind: 'error',
    meaning: 'an asset outside the governed tree (state directories, outside HOT/)',
    hint: 'package files must live under HOT/ and not in HOT/installed, HOT/ledger or HOT/registries',
  },
  ERR_ASSET_MODULE_RESOLUTION: {
    kind: 'error',
    meaning:
      "an asset that changes module resolution for other packages' code: a `package.json` or a file under `node_modules/`, outside the runtime package's `HOT/node_modules/` (and genesis's `HOT/package.json`)",
    hint: 'only the runtime package ships node_modules/ and package.json files (genesis ships HOT/package.json); depend on PKG-RUNTIME-001 instead',
  },
  ERR_ASSET_MISSING: { kind: 'error', meaning: 'an asset is missing while staging', hint: 'rebuild the archive' },
  ERR_DIGEST_MISMATCH: {
    kind: 'error',
    meaning: "a file's digest changed between verification and placement",
    hint: 'the archive is corrupt or was tampered with; fetch it again',
  },
  ERR_RECEIPT_INVALID: {
    kind: 'error',
    meaning:
      'a receipt is not JSON, lacks a field the installer relies on, has an `archive_integrity` that is neither an SRI nor the `sha256:<hex>` of older receipts, or lists a file the ownership registry gives to another package (uninstall and upgrade would delete it)',
    hint: 'the root state was edited by hand; run cplane verify, then reinstall the package',
  },
  ERR_JOURNAL_INVALID: {
    kind: 'error',
    meaning:
      'the commit journal cannot be read for repair, or names a path outside the root or its staging area, a link, or a staged entry it does not list; nothing is repaired',
    hint: 'a journal is only ever written by the installer; this one was planted or damaged. Move it aside (nothing was changed) and run cplane verify',
  },
  ERR_REPAIR_FAILED: {
    kind: 'error',
    meaning: 'crash repair could not roll the interrupted commit forward or back',
    hint: 'the staging area was removed by hand; restore the root from a backup',
  },
  MANIFEST_UNKNOWN_FIELD: {
    kind: 'warning',
    meaning: 'a manifest read leniently (`strict: false`) has a field the schema does not know; strict reads refuse it',
  },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
