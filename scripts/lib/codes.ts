import { defineCodes } from '../../staging/PKG-KERNEL-001/HOT/kernel/catalogue/define.js';

/** The codes repo raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_NOT_BUILT: {
    kind: 'error',
    meaning: '`bin/cplane.js` finds no built code (`npm run build` first)',
    hint: 'run `npm run build` first',
  },
  ERR_BOOTSTRAP_NOT_FOUND: {
    kind: 'error',
    meaning: 'no CP_BOOTSTRAP file given or found',
    hint: 'run `cplane build` first, or name the CP_BOOTSTRAP file',
  },
  ERR_BOOTSTRAP_ARCHIVE_MISSING: {
    kind: 'error',
    meaning: 'an archive listed in bootstrap.json is not in CP_BOOTSTRAP',
  },
  ERR_BOOTSTRAP_INTEGRITY: {
    kind: 'error',
    meaning:
      'an archive or genesis file does not match bootstrap.json, or `genesis/` holds a file it does not list (or a link)',
  },
  ERR_BOOTSTRAP_GENESIS_MISSING: {
    kind: 'error',
    meaning: '`genesis/` or a genesis file listed in bootstrap.json is missing',
  },
  ERR_BOOTSTRAP: { kind: 'error', meaning: 'genesis failed (the message names the step and the package)' },
  ERR_BOOTSTRAP_NOT_RESUMABLE: {
    kind: 'error',
    meaning: '`--resume` on a root that holds no unfinished bootstrap, or one started by another CP_BOOTSTRAP version',
  },
  ERR_BUILD_TEMPLATE_MISSING: {
    kind: 'error',
    meaning: "a package's manifest template is absent",
    hint: "add manifest.template.json next to the package's HOT/ directory",
  },
  ERR_BUILD_TEMPLATE_INVALID: {
    kind: 'error',
    meaning: 'a manifest template is invalid (JSON pointers in the message)',
    hint: 'a manifest template holds every manifest field except assets, plus an optional "build" section (classify rules, runtime_from_lockfile)',
  },
  ERR_BUILD_UNCLASSIFIED: {
    kind: 'error',
    meaning: 'the build cannot classify a file (add a `build.classify` rule to the template)',
    hint: 'add a rule to the package\'s manifest.template.json: "build": {"classify": [{"prefix": "HOT/<dir>/", "classification": "kernel"}]}',
  },
  ERR_BUILD_SYMLINK: {
    kind: 'error',
    meaning: 'a package source contains a symlink',
    hint: 'packages carry regular files only; replace the link with the file',
  },
  ERR_BUILD_LOCKFILE: {
    kind: 'error',
    meaning: 'package-lock.json cannot be read',
    hint: 'the runtime package is built from package-lock.json (lockfileVersion ≥ 2); run `npm install` to create it',
  },
  ERR_BUILD_RUNTIME_MISSING: {
    kind: 'error',
    meaning: 'a production dependency is not installed in node_modules',
    hint: 'run `npm ci` first',
  },
  ERR_BUILD_VERSION: {
    kind: 'error',
    meaning: 'package.json has no version',
    hint: 'the bootstrap version comes from the repository package.json',
  },
  ERR_BUILD_GENESIS: {
    kind: 'error',
    meaning: 'layer-0 packages overlap, or none ships the installer entry the genesis installer starts from',
    hint: 'layer-0 packages must not overlap: genesis runs their files side by side',
  },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
