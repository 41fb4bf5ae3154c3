import { quote } from '#kernel/errors.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { codeInStateDirs, ownedIndexOf, receiptsOf, walkGoverned } from '../root-state.js';

/** G0: every file in a governed directory is owned by exactly one installed package, and every owned file exists. */
export default defineGate({
  id: 'G0',
  name: 'OWNERSHIP',
  describe: 'every governed file is owned by exactly one package; no orphans, no owned-but-missing files',
  run(ctx) {
    const owned = ownedIndexOf(ctx);
    const walk = walkGoverned(ctx.root);
    const onDisk = new Set(walk.files);
    const errors: Finding[] = [];
    for (const path of walk.files) {
      if (!owned.has(path))
        errors.push({ code: 'UNOWNED_FILE', message: `${quote(path)} is not owned by any installed package`, path });
    }
    for (const path of codeInStateDirs(ctx.root))
      errors.push({
        code: 'UNOWNED_FILE',
        message: `${quote(path)} is code in a state directory; no package owns it`,
        path,
      });
    for (const odd of walk.oddities)
      errors.push({ code: 'NOT_A_FILE', message: `${quote(odd.path)} is a ${odd.kind}`, path: odd.path });
    for (const [path, row] of owned) {
      if (!onDisk.has(path))
        errors.push({
          code: 'MISSING_OWNED_FILE',
          message: `${quote(path)} (owned by ${row.package_id}) is missing`,
          path,
        });
    }
    const claimedBy = new Map<string, string>();
    for (const receipt of receiptsOf(ctx).values()) {
      for (const file of receipt.files) {
        const other = claimedBy.get(file.path);
        if (other)
          errors.push({
            code: 'DOUBLE_OWNED',
            message: `${quote(file.path)} is claimed by ${other} and ${receipt.package_id}`,
            path: file.path,
          });
        claimedBy.set(file.path, receipt.package_id);
      }
    }
    return verdict(this, errors, `${walk.files.length} files, each owned by exactly one package`);
  },
});
