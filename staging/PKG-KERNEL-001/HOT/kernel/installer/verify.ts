import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../canonical.js';
import { OwnershipRegistry } from '../registry/ownership.js';
import { listReceipts } from '../registry/receipt.js';
import {
  BOOTSTRAP_PENDING,
  GENESIS_MARK,
  genesisUnfinished,
  missingPackages,
  readBootstrapPending,
} from '../root/bootstrap-pending.js';

export type VerifyFileProblem =
  | 'missing'
  | 'not_a_file'
  | 'size'
  | 'digest'
  | 'owner_mismatch'
  | 'unregistered'
  | 'unreceipted'
  | 'bootstrap_incomplete';

export interface VerifyFinding {
  package_id: string | null;
  path: string;
  problem: VerifyFileProblem;
  expected?: string;
  actual?: string;
}

export interface VerifyRootResult {
  ok: boolean;
  packages: number;
  files: number;
  findings: VerifyFinding[];
}

/**
 * Re-hash every owned file against its receipt (like `dpkg --verify`), check that the ownership
 * registry and the receipts name the same owner for every path, and that no bootstrap is left unfinished.
 */
export function verifyRoot(root: string): VerifyRootResult {
  const receipts = listReceipts(root);
  const findings: VerifyFinding[] = [];
  const owners = new Map<string, string>();
  let files = 0;
  for (const receipt of receipts.values()) {
    for (const file of receipt.files) {
      files += 1;
      owners.set(file.path, receipt.package_id);
      const problem = checkFile(root, file);
      if (problem) findings.push({ package_id: receipt.package_id, path: file.path, ...problem });
    }
  }
  const registry = OwnershipRegistry.open(root);
  try {
    const registered = new Set<string>();
    for (const row of registry.all()) {
      registered.add(row.path);
      const owner = owners.get(row.path);
      if (owner === undefined) findings.push({ package_id: row.package_id, path: row.path, problem: 'unreceipted' });
      else if (owner !== row.package_id)
        findings.push({
          package_id: owner,
          path: row.path,
          problem: 'owner_mismatch',
          expected: owner,
          actual: row.package_id,
        });
    }
    for (const [path, owner] of owners)
      if (!registered.has(path)) findings.push({ package_id: owner, path, problem: 'unregistered' });
  } finally {
    registry.close();
  }
  if (genesisUnfinished(root)) findings.push({ package_id: null, path: GENESIS_MARK, problem: 'bootstrap_incomplete' });
  // A bootstrap that stopped after genesis: each package it still has to install is a finding.
  const pending = readBootstrapPending(root);
  if (pending) {
    const installed = new Map([...receipts.values()].map((r) => [r.package_id, r.version]));
    const missing = missingPackages(pending, installed);
    for (const p of missing) {
      findings.push({
        package_id: p.package_id,
        path: BOOTSTRAP_PENDING,
        problem: 'bootstrap_incomplete',
        expected: p.version,
        actual: installed.get(p.package_id) ?? 'not installed',
      });
    }
    // Every package is in but the bootstrap did not record its end: still unfinished until --resume says so.
    if (missing.length === 0)
      findings.push({ package_id: null, path: BOOTSTRAP_PENDING, problem: 'bootstrap_incomplete' });
  }
  return { ok: findings.length === 0, packages: receipts.size, files, findings };
}

function checkFile(
  root: string,
  file: { path: string; sha256: string; size: number },
): Omit<VerifyFinding, 'package_id' | 'path'> | null {
  const abs = join(root, file.path);
  let stat: import('node:fs').Stats;
  try {
    stat = lstatSync(abs);
  } catch {
    return { problem: 'missing' };
  }
  if (!stat.isFile()) return { problem: 'not_a_file' };
  if (stat.size !== file.size) return { problem: 'size', expected: String(file.size), actual: String(stat.size) };
  const digest = sha256Digest(readFileSync(abs));
  return digest === file.sha256 ? null : { problem: 'digest', expected: file.sha256, actual: digest };
}
