// The genesis child (Node built-ins only). The CP_BOOTSTRAP entry starts it before checking and unpacking
// the archives, so this process's start-up overlaps that work; it then reads one JSON request on stdin —
// the unpacked kernel's installer module and its arguments — and runs it. An empty stdin means the entry
// stopped before genesis: nothing to do.
import { pathToFileURL } from 'node:url';

export interface GenesisRequest {
  /** HOT/kernel/installer/entry.js of the unpacked layer-0 kernel. */
  module: string;
  argv: string[];
  hot: string;
  defaultRoot: string;
}

interface Installer {
  runInstallEntry(options: { argv: readonly string[]; hot: string; defaultRoot: string }): Promise<number>;
}

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const text = Buffer.concat(chunks).toString('utf8');
if (text !== '') {
  const request = JSON.parse(text) as GenesisRequest;
  const installer = await import(pathToFileURL(request.module).href) as Installer;
  process.exitCode = await installer.runInstallEntry({ argv: request.argv, hot: request.hot, defaultRoot: request.defaultRoot });
}
