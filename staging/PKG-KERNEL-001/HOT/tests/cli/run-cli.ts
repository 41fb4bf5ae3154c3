import { runCli } from '../../cli/main.js';

export interface Run {
  code: number;
  out: string;
  err: string;
}

/** `cplane …argv` run in this process, what it printed gathered line by line. */
export async function cli(...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    stdout: (t) => {
      out += `${t}\n`;
    },
    stderr: (t) => {
      err += `${t}\n`;
    },
  });
  return { code, out, err };
}
