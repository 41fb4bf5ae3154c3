// A throwaway PostgreSQL server for tests and benches: initdb into a temp directory, pg_ctl start on a free
// loopback port with its socket in that directory, stopped and removed afterwards. Run as the `postgres` OS user
// when this process is root (the server refuses to run as root). Binaries: PATH, else /usr/lib/postgresql/*/bin.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PgServer {
  /** postgres://cplane@127.0.0.1:PORT/cplane (trust auth on loopback: no password to leak). */
  url: string;
  port: number;
  dataDir: string;
  /** Stops the server (fast shutdown) and removes its directory. */
  stop(): void;
  /** Stops it without removing anything (a database going away under load); `start()` brings it back. */
  halt(): void;
  start(): void;
  /**
   * Freezes the server and its backends (SIGSTOP): connections stay open and nothing answers, as with a server
   * hung or a network path that drops packets. `thaw()` lets them run on.
   */
  freeze(): void;
  thaw(): void;
}

/** The directory holding initdb and pg_ctl, or null when PostgreSQL is not installed. */
export function pgBinDir(): string | null {
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  const onPath = which.status === 0 ? which.stdout.trim() : '';
  // Through its link: PATH may hold only initdb and pg_ctl, linked from the directory with the other tools.
  if (onPath !== '') {
    const real = realpathSync(onPath);
    return real.slice(0, real.lastIndexOf('/'));
  }
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? null : join(base, versions[0], 'bin');
}

/** How to get PostgreSQL here, for the one SKIP line a suite prints without it. */
export const PG_MISSING =
  'PostgreSQL is not installed (no initdb on PATH or under /usr/lib/postgresql/*/bin): apt-get install postgresql';

/** Whether suites that need a server must fail rather than skip: in CI a missing server is a failure. */
export function pgRequired(): boolean {
  return process.env.CI === 'true';
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

export async function startPgServer(): Promise<PgServer> {
  const bin = pgBinDir();
  if (bin === null) throw new Error(PG_MISSING);
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'cp-pg-'));
  const dataDir = join(dir, 'data');
  const run = (tool: string, args: string[]): string => {
    const command = asRoot ? 'runuser' : join(bin, tool);
    const argv = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
    return execFileSync(command, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  };
  if (asRoot) {
    chmodSync(dir, 0o700);
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  run('initdb', ['-D', dataDir, '-U', 'cplane', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on -c synchronous_commit=on`;
  const start = (): void => {
    run('pg_ctl', ['-D', dataDir, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  };
  const halt = (): void => {
    try {
      run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
    } catch {
      // already stopped
    }
  };
  // The postmaster and every backend: a frozen postmaster alone still lets open connections be served.
  const signalAll = (signal: NodeJS.Signals): void => {
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout.trim();
    for (const pid of [
      postmaster,
      ...children
        .split('\n')
        .filter((p) => p !== '')
        .map(Number),
    ])
      process.kill(pid, signal);
  };
  start();
  run('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'cplane', 'cplane']);
  return {
    url: `postgres://cplane@127.0.0.1:${port}/cplane`,
    port,
    dataDir,
    halt,
    start,
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
    stop() {
      halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The `skip` option of a suite that needs a server: false when PostgreSQL is installed, else one SKIP line saying
 * how to install it; in CI a missing server throws, since there it is a failure.
 */
export function pgSkip(): string | false {
  if (pgBinDir() !== null) return false;
  if (pgRequired()) throw new Error(`${PG_MISSING} (CI must have it: .ci/run installs it)`);
  return `SKIP: ${PG_MISSING}`;
}

/** A new empty database on `server`; its URL. */
export async function createDatabase(server: PgServer, name: string): Promise<string> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return server.url.replace(/\/cplane$/, `/${name}`);
}

/** One statement on a connection of its own (a test's setup or look behind the code under test). */
export async function pgQuery(url: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await db.query(text, values);
  } finally {
    await db.end();
  }
}
