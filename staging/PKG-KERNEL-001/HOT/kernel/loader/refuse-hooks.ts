// Module hooks (node:module register, run off-thread) installed only when the start-up seal found owned
// modules that must not load: importing one of those, directly or through any import chain, rejects with the
// loader's coded refusal, while every other module loads as usual. A root with no such module never pays for
// hooks. Built-ins only: this runs before anything it could check.

export interface RefusedModule {
  code: string;
  message: string;
  hint: string;
  details: Record<string, unknown>;
}

let refused: Record<string, RefusedModule> = Object.create(null) as Record<string, RefusedModule>;

export function initialize(data: { refused: Record<string, RefusedModule> }): void {
  refused = Object.assign(Object.create(null) as Record<string, RefusedModule>, data.refused);
}

type NextLoad = (url: string, context: unknown) => Promise<unknown>;

export async function load(url: string, context: unknown, nextLoad: NextLoad): Promise<unknown> {
  const why = refused[url.split('?')[0] as string];
  if (why !== undefined)
    throw Object.assign(new Error(why.message), {
      name: 'CpError',
      code: why.code,
      hint: why.hint,
      details: why.details,
    });
  return nextLoad(url, context);
}
